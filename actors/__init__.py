"""raykafka's cluster: Kafka's brokers, controller and group coordinators as Ray actors.

- ``core/``: the sans-I/O protocol logic (broker, replica manager, fetcher, controller, group
  coordinator, log, messages): no Ray, asyncio, clock or OS.
- ``drivers/``: one per actor kind, running a core's effects through the seams, for the Ray
  shells and the simulator alike.
- ``codecs/``: Kafka's record batches and their compression, shared with the clients.
- ``wire/``: Kafka's wire protocol for stock clients (frames, versions, conversions).
- The Ray shells: ``broker.py``, ``controller.py``, ``group_coordinator.py``,
  ``replica_fetcher.py``, ``request_send_thread.py``; with them ``kafka_listener.py`` (the TCP
  listeners), ``ray_seams.py`` (the seams on Ray), ``shell_support.py`` (calls kept in order),
  ``shared_records.py`` (a fetch answer's records as one Ray object) and ``group_lag.py`` (the lag
  gauges). ``file_storage.py`` and ``ray_metadata_store.py`` keep the logs on disk and the
  controller's state in Ray's key-value store; ``fault_network.py`` is the link-fault network
  every shell's outgoing calls pass through.

This file holds nothing but this docstring: importing ``actors.core`` must never import Ray.
"""
