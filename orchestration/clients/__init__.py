"""raykafka's clients: what an application uses to write and read topics.

``producer`` (Kafka's ``KafkaProducer``: batching per partition, acks, retries, the partitioner in
``partitioner``) and ``consumer`` (``KafkaConsumer``: assigned partitions or a group). A consumer in
a group runs ``consumer_coordinator`` (offsets, assignment, rebalance listeners) over
``group_membership`` (FindCoordinator, JoinGroup, SyncGroup, LeaveGroup), whose ``group_heartbeat``
thread keeps the session alive, and ``position_validation`` checks its positions against a new
leader's log (KIP-320); ``group_member`` holds what both know of the member, and
``group_channel`` carries their requests to the coordinator actors. ``broker_directory`` is what
every client shares: finding broker actors by name, asking them, caching cluster metadata and
retrying. ``records`` is the clients' view of the record format in ``actors.codecs.record_batches``.
"""
