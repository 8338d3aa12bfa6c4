"""Consumer groups: Kafka 2.4's group coordinator as a pure core, and the client-side assignors.

- ``coordinator.GroupCoordinatorCore``: the core a ``GroupCoordinatorActor`` shell drives (start here).
- ``membership``: rebalances, heartbeats, delayed joins; ``group_manager``: ownership, loading and
  ``__consumer_offsets`` writes; ``group_metadata``: the group state machine and its table.
- ``messages``: the offsets-log append the core asks its shell for, and DeleteGroups.
- ``offsets_topic_records``: the ``__consumer_offsets`` key/value schemas (Kafka's binary layout).
- ``assignors`` (range, roundrobin, sticky), ``consumer_protocol``: for the consumer client.
"""
