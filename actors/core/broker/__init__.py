"""The broker itself, as a pure core: what a broker process runs beside its replicas.

- ``broker_core.BrokerCore``: the one object the broker driver steps (start here); it owns the
  replica manager (``actors.core.replica``) and the rest of this room.
- ``broker_lifecycle``: registration, heartbeats and controlled shutdown with the controller.
- ``metadata_cache``: the broker's view of the cluster (UpdateMetadata in, Metadata out);
  ``auto_create``: topic auto-creation from Metadata.
- ``find_coordinator``, ``config_forwarding`` (IncrementalAlterConfigs), ``topic_operations``
  (CreateTopics, DeleteTopics): requests the broker answers or forwards to the controller.
- ``producer_id_manager``: InitProducerId answered from the controller's producer-id blocks.
"""
