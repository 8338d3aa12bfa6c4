"""A partition replica's log, as a pure core: Kafka's ``Log`` on the ``Storage`` seam.

- ``log.Log``: segments of v2 batches, recovery, truncation and leader epochs (start here).
- ``segment``, ``segment_loading``, ``segment_window``, ``time_index``, ``timestamps``: one
  segment's files and indexes, finding them on open, reading them, ListOffsets by time.
- ``record_batch``, ``log_validator``, ``compression``, ``append_info``: the v2 batch header, what
  a leader refuses, the compression codecs and what an append wrote.
- ``leader_epoch_cache`` (KIP-101/279), ``producer_state`` (idempotent producers, KIP-98),
  ``checkpoints``, ``meta_properties``: what the log keeps beside its segments.
- ``log_config``: the topic settings a log obeys; ``log_work``: the disk waits it plans for others.
- ``storage`` (the seam, and an in-memory store), ``storage_faults`` (faults on purpose),
  ``log_dir_failure``: the first I/O error takes the directory offline.
"""
