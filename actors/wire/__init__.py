"""Kafka's wire protocol for stock Kafka clients, as pure translation (no sockets here).

It lives beside the core rather than in it because kio's serializers import asyncio (for stream
writers we do not use); it keeps the core's rules all the same: no I/O, no clock, no Ray.

``frames`` cuts a request frame into a kio header and body and encodes responses; ``versions``
says which API versions raykafka serves; ``convert`` moves values between kio's per-version
classes and raykafka's messages by field name; ``apis`` holds each API's translation. Every byte
of a request or response header and body is read and written by kio (Kafka's own schemas);
record batches pass through as opaque bytes. The TCP server lives in ``actors.kafka_listener``.
"""
