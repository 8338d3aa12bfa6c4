"""The leader side of replication, as a pure core: a broker's replica manager.

- ``replica_manager.ReplicaManager``: every partition replica a broker hosts and the data
  requests they serve (start here); the broker core (actors/core/broker/) owns it.
- ``partition``: one partition replica, its log, its role and the leader's view of its followers.
- the produce path (appends on the leader, answered per ``acks``) and the fetch path (whole batches
  for consumers and followers), with the purgatories where a produce waits for its replicas and a
  fetch for its bytes (Kafka's DelayedProduce and DelayedFetch).
- ``fetch_session``: incremental fetch sessions (KIP-227), the broker's side.
- ``alter_partition_manager``: ISR changes on their way to the controller (AlterPartition).
- ``log_flusher``: log flushes and offset checkpoints, planned here and run off the core's thread.
- ``log_reads``: reads of a log that are not fetches; ``log_dir_failure_handler``: a failed log
  directory takes its replicas offline.
"""
