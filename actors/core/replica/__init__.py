"""The leader side of replication, as a pure core: a broker's replica manager.

- ``replica_manager.ReplicaManager``: every partition replica a broker hosts and the data
  requests they serve (start here); the broker core (actors/core/broker/) owns it.
- ``partition``: one partition replica, its log, its role and the leader's view of its followers.
- ``produce.ProducePath`` (appends on the leader, answered per ``acks``) and ``fetch.FetchPath``
  (whole batches for consumers and followers), objects the manager owns; a produce waiting for
  its replicas is a ``produce.DelayedProduce``, a fetch waiting for its bytes a
  ``fetch.DelayedFetch``, each parked in ``purgatory.DelayedOperations``.
- ``replication.Replication``: the follower's requests on this broker's log, OffsetForLeaderEpoch,
  and the leader's ISR changes.
- ``fetch_session``: incremental fetch sessions (KIP-227), the broker's side.
- ``alter_partition_manager``: ISR changes on their way to the controller (AlterPartition).
- ``log_flusher``: log flushes and offset checkpoints, planned here and run off the core's thread.
- ``log_reads``: reads of a log that are not fetches; ``log_dir_failure_handler``: a failed log
  directory takes its replicas offline.
"""
