"""Pure codecs used on both sides of the actors: no Ray, no I/O.

- ``record_batches``: Kafka's v2 record batches built and read (producers, consumers, the group
  coordinator, the simulator), with aiokafka's C implementation.
- ``compression``: the compression codecs a broker recompresses a produced batch with.
"""
