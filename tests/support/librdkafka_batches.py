"""Record batches exactly as librdkafka (confluent-kafka) builds them, with no broker of ours: a
confluent-kafka producer writes to librdkafka's own mock cluster (``test.mock.num.brokers``), and
one Fetch, written and read with kio over a socket, brings the stored bytes back. Every wait is
bounded and says what it waited for."""
from __future__ import annotations

import datetime
import io
import socket
import struct
import time

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from actors.core.log.record_batch import scan_valid_prefix

FETCH_API_KEY, FETCH_VERSION = 1, 4
TIMEOUT_S = 30


def librdkafka_batches(values: list[bytes], compression_type: str, *, topic: str = "librdkafka") -> bytes:
    """The v2 batches (concatenated, as a fetch answers them) a confluent-kafka producer with
    ``compression.type`` built for ``values``, sent to partition 0 in order."""
    from confluent_kafka import Producer
    # A long linger: every record is queued before ``flush`` sends them (flush does not wait out the
    # linger), so the batches are big ones on a busy machine too. With a short one, a batch sent while
    # the records were still being queued could hold one record, which librdkafka sends uncompressed
    # (compressing it would not make it smaller).
    producer = Producer({"test.mock.num.brokers": 1, "compression.type": compression_type, "linger.ms": 60_000,
                         "enable.idempotence": False, "log_level": 3})
    brokers = producer.list_topics(timeout=TIMEOUT_S).brokers
    (broker,) = brokers.values()
    for index, value in enumerate(values):
        producer.produce(topic, value=value, key=b"k%d" % (index % 7), partition=0, headers=[("h", b"%d" % index)])
    left = producer.flush(TIMEOUT_S)
    assert left == 0, f"{left} records still unacknowledged by librdkafka's mock cluster after {TIMEOUT_S}s"
    batches, next_offset = bytearray(), 0
    deadline = time.monotonic() + TIMEOUT_S
    while next_offset < len(values):  # a fetch answer may hold only the first batches
        assert time.monotonic() < deadline, f"librdkafka's mock broker served {next_offset} of {len(values)} records"
        answer = _fetch_records(broker.host, broker.port, topic, next_offset)
        for header in scan_valid_prefix(answer)[0]:  # whole batches only
            if header.last_offset < next_offset:
                continue
            batches += answer[header.position:header.end_position]
            next_offset = header.next_offset
    del producer  # the mock cluster lives as long as its producer
    return bytes(batches)


def _fetch_records(host: str, port: int, topic: str, fetch_offset: int) -> bytes:
    schema = load_request_schema(FETCH_API_KEY, FETCH_VERSION)
    module = __import__(schema.__module__, fromlist=["*"])
    body = schema(replica_id=-1, max_wait=datetime.timedelta(milliseconds=100), min_bytes=1, max_bytes=1 << 26,
                  isolation_level=0, topics=(module.FetchTopic(topic=topic, partitions=(module.FetchPartition(
                      partition=0, fetch_offset=fetch_offset, partition_max_bytes=1 << 26),)),))
    frame = io.BytesIO()
    entity_writer(schema.__header_schema__)(frame, schema.__header_schema__(
        request_api_key=FETCH_API_KEY, request_api_version=FETCH_VERSION, correlation_id=7, client_id="test"))
    entity_writer(schema)(frame, body)
    payload = frame.getvalue()
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        sock.settimeout(TIMEOUT_S)
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        answer = _read_exactly(sock, size)
    response_schema = load_response_schema(FETCH_API_KEY, FETCH_VERSION)
    header, position = entity_reader(response_schema.__header_schema__)(answer, 0)
    assert header.correlation_id == 7, header
    response, _ = entity_reader(response_schema)(answer, position)
    partition = response.responses[0].partitions[0]
    assert partition.error_code == 0, f"librdkafka's mock broker answered the fetch with {partition.error_code}"
    return bytes(partition.records)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "librdkafka's mock broker closed the connection mid-answer"
        data += chunk
    return bytes(data)
