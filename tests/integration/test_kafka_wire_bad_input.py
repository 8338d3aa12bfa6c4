"""Bad input on a broker's Kafka listener hurts nothing but its own connection: an oversize size,
a truncated frame, an unknown API key, a version above the served range and garbage are closed
(as Kafka's SocketServer closes a version it has not enabled); ApiVersions at an unknown version is
answered UNSUPPORTED_VERSION with every served range; a flexible request carrying tagged fields of
tags no schema names is answered as if they were not there (Kafka skips them); then thousands of seeded random and mutated frames later every
broker is the same incarnation (no restart), every replica's log is byte-for-byte unchanged, and
a stock client still produces and consumes; and raw Produce and Fetch requests carrying what Kafka
refuses (a control batch, a negative base sequence, two batches, zstd below Produce v7 or served to
Fetch below v10, a keyless record on a compacted topic) get Kafka's error code for that partition
alone, with its log unchanged on every replica."""
from __future__ import annotations

import io
import random
import socket
import struct

import pytest
import ray
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from tests.support.kafka_clients import confluent_consume, confluent_produce

pytestmark = pytest.mark.integration

TOPIC = "wire-fuzz"
FRAMES = 3000
SEED = 1305


def frame_of(api_key: int, version: int, body) -> bytes:
    schema = load_request_schema(api_key, version)
    buffer = io.BytesIO()
    entity_writer(schema.__header_schema__)(buffer, schema.__header_schema__(
        request_api_key=api_key, request_api_version=version, correlation_id=1, client_id="fuzz"))
    entity_writer(schema)(buffer, body)
    return buffer.getvalue()


def seed_frames() -> list[bytes]:
    """Valid requests that read or fail validation whatever a mutation does to them: reads, and a
    produce whose 'batch' is garbage (any append attempt fails its CRC)."""
    import datetime
    metadata = load_request_schema(3, 8)
    fetch = load_request_schema(1, 11)
    fetch_module = __import__(fetch.__module__, fromlist=["*"])
    produce = load_request_schema(0, 8)
    produce_module = __import__(produce.__module__, fromlist=["*"])
    return [
        frame_of(3, 8, metadata(topics=None, allow_auto_topic_creation=False,
                                include_cluster_authorized_operations=False, include_topic_authorized_operations=False)),
        frame_of(1, 11, fetch(replica_id=-1, max_wait=datetime.timedelta(milliseconds=10), min_bytes=1,
                              topics=(fetch_module.FetchTopic(topic=TOPIC, partitions=(fetch_module.FetchPartition(
                                  partition=0, fetch_offset=0, partition_max_bytes=1 << 16),)),),
                              forgotten_topics_data=())),
        frame_of(0, 8, produce(transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=1), topic_data=(
            produce_module.TopicProduceData(name=TOPIC, partition_data=(produce_module.PartitionProduceData(
                index=0, records=b"\x00" * 70),)),))),
        struct.pack(">hhi", 18, 3, 1) + b"\x00\x04fuzz\x00\x00\x00\x00",
        # Flexible versions, one with a tagged field of an unknown tag (read by the lenient reader).
        frame_of(18, 3, load_request_schema(18, 3)(client_software_name="fuzz", client_software_version="1"))[:-1]
        + b"\x01\x63\x01\x00",
        frame_of(0, 12, load_request_schema(0, 12)(transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=1),
                                                   topic_data=())),
    ]


def connect(address: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(address, timeout=10)
    sock.settimeout(10)
    return sock


def closed_by_broker(sock: socket.socket) -> bool:
    """True once the broker closed the connection (reads return nothing)."""
    try:
        return sock.recv(1 << 16) == b""
    except ConnectionResetError:
        return True


def addresses(cluster) -> list[tuple[str, int]]:
    return [(host, int(port)) for host, port in (item.rsplit(":", 1) for item in cluster.bootstrap_servers.split(","))]


def state_of(cluster) -> dict:
    partitions = cluster.describe_topic(TOPIC)
    return {
        "incarnations": {b: ray.get(cluster.broker(b).ping.remote(), timeout=30)["incarnation_id"]
                         for b in cluster.broker_ids},
        "partitions": [(p.partition, p.leader, p.leader_epoch, p.high_watermark, p.log_end_offset) for p in partitions],
        "digests": {p.partition: cluster.replica_digests(TOPIC, p.partition, p.log_end_offset) for p in partitions},
    }


@pytest.fixture(scope="module")
def seeded_topic(cluster):
    cluster.create_topic(TOPIC, partitions=2, replication_factor=3)
    confluent_produce(cluster.bootstrap_servers, TOPIC, [b"before-%d" % i for i in range(50)], "all")
    return TOPIC


@pytest.mark.parametrize("payload, why", [
    (struct.pack(">i", 104857601), "a size over socket.request.max.bytes"),
    (struct.pack(">i", -5), "a negative size"),
    (struct.pack(">i", 10) + struct.pack(">hhi", 999, 0, 1) + b"\x00\x00", "an unknown API key"),
    (struct.pack(">i", 10) + struct.pack(">hhi", 3, 77, 1) + b"\x00\x00", "an unserved Metadata version"),
    (struct.pack(">i", 10) + struct.pack(">hhi", 1, 13, 1) + b"\x00\x00", "Fetch v13, above the served range"),
    (struct.pack(">i", 10) + struct.pack(">hhi", 0, 13, 1) + b"\x00\x00", "Produce v13, above the served range"),
    (struct.pack(">i", 40) + b"\xff" * 40, "garbage"),
])
def test_unreadable_input_closes_the_connection(cluster, seeded_topic, payload, why):
    with connect(addresses(cluster)[0]) as sock:
        sock.sendall(payload)
        assert closed_by_broker(sock), f"the broker closes a connection that sent {why}"


def test_a_truncated_frame_waits_for_its_body_and_the_client_closing_changes_nothing(cluster, seeded_topic):
    before = state_of(cluster)
    with connect(addresses(cluster)[1]) as sock:
        sock.sendall(struct.pack(">i", 1000) + b"\x00\x03\x00\x08")
    assert state_of(cluster) == before


def test_api_versions_at_an_unknown_version_is_answered_unsupported_version(cluster, seeded_topic):
    with connect(addresses(cluster)[2]) as sock:
        request = struct.pack(">hhi", 18, 99, 77) + b"\x00\x04fuzz"
        sock.sendall(struct.pack(">i", len(request)) + request)
        (size,) = struct.unpack(">i", sock.recv(4))
        data = b""
        while len(data) < size:
            data += sock.recv(size - len(data))
    schema = load_response_schema(18, 0)
    header, position = entity_reader(schema.__header_schema__)(data, 0)
    body, _ = entity_reader(schema)(data, position)
    assert (header.correlation_id, int(body.error_code)) == (77, 35)
    from actors.wire.versions import SUPPORTED_VERSIONS
    assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys} == SUPPORTED_VERSIONS, \
        "the answer still lists every range the broker serves"


def test_thousands_of_random_and_mutated_frames_leave_the_cluster_serving_and_its_logs_unchanged(cluster, seeded_topic):
    before = state_of(cluster)
    rng = random.Random(SEED)
    seeds = seed_frames()
    targets = addresses(cluster)
    sent = 0
    for _ in range(FRAMES):
        if rng.random() < 0.3:
            body = rng.randbytes(rng.randrange(0, 80))
        else:
            body = bytearray(rng.choice(seeds))
            for _ in range(rng.randrange(1, 4)):
                body[rng.randrange(len(body))] = rng.randrange(256)
            body = bytes(body)
        size = len(body) if rng.random() < 0.9 else rng.randrange(-10, 1 << 31)
        with connect(rng.choice(targets)) as sock:
            try:
                sock.sendall(struct.pack(">i", size) + body)
            except OSError:
                pass  # the broker closed first, as it may
        sent += 1
    assert sent == FRAMES
    after = state_of(cluster)
    assert after == before, "no broker restarted and no replica's log changed"
    confluent_produce(cluster.bootstrap_servers, TOPIC, [b"after-%d" % i for i in range(10)], "all", partition=0)
    read = confluent_consume(cluster.bootstrap_servers, TOPIC, [0, 1], 60)
    assert {v for _, _, v in read} >= {b"after-%d" % i for i in range(10)}, "the cluster still serves stock clients"


def read_frame(sock: socket.socket) -> bytes:
    header = b""
    while len(header) < 4:
        header += sock.recv(4 - len(header))
    (size,) = struct.unpack(">i", header)
    data = b""
    while len(data) < size:
        data += sock.recv(size - len(data))
    return data


def test_pipelined_requests_are_answered_in_order_and_acks_0_gets_no_answer(cluster):
    import datetime

    from actors.codecs.record_batches import BatchBuilder
    cluster.create_topic("wire-order", partitions=1, replication_factor=1)
    (partition,) = cluster.describe_topic("wire-order")
    leader = dict(enumerate(addresses(cluster)))[partition.leader]
    builder = BatchBuilder(batch_size=1 << 20)
    builder.try_append(None, b"fire-and-forget", None, None)
    produce = load_request_schema(0, 8)
    module = __import__(produce.__module__, fromlist=["*"])
    produce_frame = frame_of(0, 8, produce(transactional_id=None, acks=0, timeout=datetime.timedelta(seconds=5),
                                           topic_data=(module.TopicProduceData(name="wire-order", partition_data=(
                                               module.PartitionProduceData(index=0, records=builder.build()),)),)))
    metadata = frame_of(3, 8, load_request_schema(3, 8)(topics=None, allow_auto_topic_creation=False,
                                                         include_cluster_authorized_operations=False,
                                                         include_topic_authorized_operations=False))

    def with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
        frame = frame[:4] + struct.pack(">i", correlation_id) + frame[8:]
        return struct.pack(">i", len(frame)) + frame

    pipelined = b"".join(with_correlation_id(frame, cid) for frame, cid in
                         [(metadata, 1), (produce_frame, 2), (metadata, 3), (metadata, 4)])
    with connect(leader) as sock:
        sock.sendall(pipelined)
        answered = [struct.unpack_from(">i", read_frame(sock))[0] for _ in range(3)]
    assert answered == [1, 3, 4], "answers come in request order, and the acks=0 produce gets none"
    read = confluent_consume(cluster.bootstrap_servers, "wire-order", [0], 1)
    assert [v for _, _, v in read] == [b"fire-and-forget"], "the acks=0 produce was appended all the same"


# ------------------------------------------------------------------ record validation on the wire
def send_and_read(address: tuple[str, int], api_key: int, version: int, body):
    """Send one request of ``version`` and decode its answer with Kafka's response schema."""
    with connect(address) as sock:
        frame = frame_of(api_key, version, body)
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        data = read_frame(sock)
    schema = load_response_schema(api_key, version)
    _, position = entity_reader(schema.__header_schema__)(data, 0)
    answer, _ = entity_reader(schema)(data, position)
    return answer


def produce_body(version: int, topic: str, records_by_partition: dict):
    import datetime
    schema = load_request_schema(0, version)
    module = __import__(schema.__module__, fromlist=["*"])
    return schema(transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=30), topic_data=(
        module.TopicProduceData(name=topic, partition_data=tuple(
            module.PartitionProduceData(index=index, records=records)
            for index, records in records_by_partition.items())),))


def fetch_body(version: int, topic: str, partition: int):
    import datetime
    schema = load_request_schema(1, version)
    module = __import__(schema.__module__, fromlist=["*"])
    extra = {"rack_id": ""} if version >= 11 else {}
    return schema(replica_id=-1, max_wait=datetime.timedelta(milliseconds=10), min_bytes=1, max_bytes=1 << 20,
                  isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=(), topics=(
                      module.FetchTopic(topic=topic, partitions=(module.FetchPartition(
                          partition=partition, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                          partition_max_bytes=1 << 20),)),), **extra)


def partition_state(cluster, topic: str, partition: int) -> tuple:
    (described,) = [p for p in cluster.describe_topic(topic) if p.partition == partition]
    return (described.leader_epoch, described.high_watermark, described.log_end_offset,
            cluster.replica_digests(topic, partition, described.log_end_offset))


@pytest.fixture(scope="module")
def validated_topics(cluster):
    """Both partitions of each topic on broker 0, so that one Produce carries a refused partition
    and an accepted one; each partition holds one batch before the cases run."""
    from tests.support.batches import client_batch
    leader = addresses(cluster)[0]
    for topic, config in (("wire-validated", None), ("wire-compacted", {"cleanup.policy": "compact"})):
        cluster.create_topic(topic, config=config, assignment=[[0], [0]])
        answer = send_and_read(leader, 0, 8, produce_body(8, topic, {0: client_batch(), 1: client_batch()}))
        assert [int(p.error_code) for t in answer.responses for p in t.partition_responses] == [0, 0]
    return leader


def _wire_refusals():
    from tests.support.batches import ZSTD, client_batch
    return [
        ("a control batch", "wire-validated", 8, client_batch(control=True), 87),
        ("a producer id with base sequence -1", "wire-validated", 8, client_batch(producer_id=11, base_sequence=-1),
         87),
        ("two batches on Produce v3", "wire-validated", 3, client_batch() + client_batch(), 87),
        ("two batches on Produce v8", "wire-validated", 8, client_batch() + client_batch(), 87),
        ("zstd on Produce v6", "wire-validated", 6, client_batch(codec=ZSTD), 76),
        ("a keyless record on a compacted topic", "wire-compacted", 8, client_batch([b"a", b"b"], [b"1", None]), 87),
    ]


@pytest.mark.parametrize("case, topic, version, records, error_code", _wire_refusals(),
                         ids=[case[0] for case in _wire_refusals()])
def test_records_kafka_refuses_get_its_error_code_and_leave_the_log_unchanged(
        cluster, validated_topics, case, topic, version, records, error_code):
    from tests.support.batches import client_batch
    before, other_before = partition_state(cluster, topic, 0), partition_state(cluster, topic, 1)
    answer = send_and_read(validated_topics, 0, version, produce_body(version, topic, {
        0: records, 1: client_batch([b"other"], [b"k"])}))
    errors = {p.index: int(p.error_code) for t in answer.responses for p in t.partition_responses}
    assert errors == {0: error_code, 1: 0}, f"{case}: refused alone; the other partition is appended"
    assert partition_state(cluster, topic, 0) == before, f"{case}: the refused partition's log is unchanged"
    assert partition_state(cluster, topic, 1)[2] == other_before[2] + 1


def test_a_fetch_below_v10_is_refused_zstd_and_v10_reads_it(cluster, validated_topics):
    from actors.codecs.record_batches import read_records
    from tests.support.batches import ZSTD, client_batch
    cluster.create_topic("wire-zstd", assignment=[[0]])
    answer = send_and_read(validated_topics, 0, 8, produce_body(8, "wire-zstd", {0: client_batch(
        [b"squeezed"], codec=ZSTD)}))
    assert int(answer.responses[0].partition_responses[0].error_code) == 0
    old = send_and_read(validated_topics, 1, 9, fetch_body(9, "wire-zstd", 0)).responses[0].partitions[0]
    assert (int(old.error_code), old.high_watermark, bytes(old.records or b"")) == (76, -1, b""), \
        "a client below Fetch v10 cannot read zstd: UNSUPPORTED_COMPRESSION_TYPE, no data"
    new = send_and_read(validated_topics, 1, 11, fetch_body(11, "wire-zstd", 0)).responses[0].partitions[0]
    assert (int(new.error_code), new.high_watermark) == (0, 1)
    assert [r.value for r in read_records("wire-zstd", 0, bytes(new.records), 0)] == [b"squeezed"]
    plain = send_and_read(validated_topics, 1, 9, fetch_body(9, "wire-validated", 1)).responses[0].partitions[0]
    assert int(plain.error_code) == 0 and len(plain.records) > 0, "a partition with no zstd is served to v9"


def test_a_flexible_produce_with_tagged_fields_of_unknown_tags_is_answered_and_stored(cluster, validated_topics):
    """Produce v12 with a tagged field of an unknown tag in the request header, in a partition and
    at the body's end: the broker skips them, as Kafka does, and appends the batch."""
    from tests.support.batches import client_batch
    before = partition_state(cluster, "wire-validated", 1)
    frame = frame_of(0, 12, produce_body(12, "wire-validated", {1: client_batch([b"tagged"], [b"k"])}))
    # The header v2 ends at client id "fuzz" and its tagged fields (one byte, 0).
    header_end = frame.index(b"fuzz") + len(b"fuzz") + 1
    header, body = frame[:header_end - 1] + b"\x01\x21\x02hi", frame[header_end:]
    # The partition's tagged fields follow its records; the topic's and the body's are the last bytes
    # but for the throttle-free end: the body is ... records, 0 (partition), 0 (topic), 0 (body).
    assert body.endswith(b"\x00\x00\x00")
    body = body[:-3] + b"\x01\x40\x01z" + b"\x00" + b"\x01\x41\x00"
    with connect(validated_topics) as sock:
        sock.sendall(struct.pack(">i", len(header + body)) + header + body)
        data = read_frame(sock)
    schema = load_response_schema(0, 12)
    response_header, position = entity_reader(schema.__header_schema__)(data, 0)
    answer, _ = entity_reader(schema)(data, position)
    assert response_header.correlation_id == 1
    assert [(p.index, int(p.error_code)) for t in answer.responses for p in t.partition_responses] == [(1, 0)]
    assert partition_state(cluster, "wire-validated", 1)[2] == before[2] + 1, "the batch was appended once"
