"""Every message type, one module per Kafka API; import each type from the module of its API
(``from actors.core.messages.produce import ProduceRequest``). Each ``<Api>Request`` has a
matching ``<Api>Response`` in the same module, and carries Kafka's API key as ``API_KEY`` (the
API table, actors/core/apis.py, reads it there).

- ``_base``: the decorator every message type uses, and the shared sentinels (``NO_LEADER``, ...)
- ``validation``: Kafka's request parsing, for requests that arrive as Python objects
- data: ``produce``, ``fetch``, ``list_offsets``, ``metadata``, ``offset_for_leader_epoch``,
  ``init_producer_id``
- control (controller to brokers): ``leader_and_isr``, ``stop_replica``, ``update_metadata``
- brokers to the controller: ``broker_registration``, ``broker_heartbeat``, ``alter_partition``,
  ``controlled_shutdown``, ``allocate_producer_ids``
- admin: ``create_topics``, ``delete_topics``, ``elect_leaders``, ``incremental_alter_configs``,
  ``partition_reassignments`` (Alter and ListPartitionReassignments)
- groups: ``find_coordinator``, ``join_group``, ``sync_group``, ``heartbeat``, ``leave_group``,
  ``offset_commit``, ``offset_fetch``, ``describe_groups``, ``list_groups``
"""
