"""The controller, as a pure core: Kafka 2.4's ``KafkaController`` with its state kept behind a
metadata-store seam (ZooKeeper's role).

- ``controller.ControllerCore``: the core a ``ControllerActor`` shell drives (start here).
- ``state``: ``LeaderAndIsr`` and the partition and replica state machines; ``context``: the
  controller's view of the cluster; ``metadata_store``: its durable state.
- ``elections``: Kafka's leader-election algorithms; ``elect_leaders`` (ElectLeaders),
  ``controlled_shutdown``, ``isr_changes`` (AlterPartition), ``lost_disks`` (KIP-858).
- ``topics``, ``deletion``, ``topic_config_changes``, ``reassignment`` (KIP-455),
  ``metadata_propagation``: topic creation, deletion, configuration and reassignment.
- ``request_batch``, ``broker_requests``, ``channel_queue``, ``send_thread``: the control requests
  (LeaderAndIsr, UpdateMetadata, StopReplica) on their way to each broker.
- ``producer_id_control``: blocks of producer ids for brokers (AllocateProducerIds).
"""
