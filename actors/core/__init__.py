"""The sans-I/O core: Kafka's protocol logic as pure objects that take requests, time and
randomness as arguments and answer with messages and effects. No Ray, asyncio, threads, sockets,
clock or OS here (tests/unit/test_tidy.py checks it); the drivers (actors/drivers/) run it.

Rooms:
- ``broker/``: the broker itself (lifecycle, metadata cache, coordinator lookup, topic requests)
- ``replica/``: the replica manager and its partitions, the leader side of replication
- ``fetcher/``: the follower's side of replication (Kafka's replica fetcher threads)
- ``controller/``: the controller (elections, ISR changes, topics, reassignment, control requests)
- ``group/``: the consumer group coordinator and the client-side assignors
- ``log/``: a partition replica's log on the ``Storage`` seam (segments, indexes, checkpoints)
- ``messages/``: every request and response type, one module per Kafka API

Above them: ``apis``, the one table of Kafka's APIs (key, request type, versions, the actor kind
that serves each and its handler), which the drivers, the wire listener and the shells dispatch by.

Beside them: ``topics`` (Kafka's internal topics and topic-name rule), ``config`` (Kafka's
configuration keys), ``topic_configs`` and ``topic_config_synonyms`` (topic-level keys),
``effects`` (what a core asks its driver to do), ``errors`` (Kafka's error codes), ``metrics``
(Kafka's metrics as effects) and ``java_hash``.
"""
