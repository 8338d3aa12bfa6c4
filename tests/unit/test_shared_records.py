"""A leader's Fetch answer to a follower carries its partitions' records as one object: the broker
driver packs an answer's payloads together (one ``pack_together`` per answer, none per partition),
``pack_together`` puts them into the object store with one put (inline bytes below the zero-copy
threshold), the fetcher core still treats each partition of such an answer on its own (an error,
a diverging epoch or an out-of-range offset in one partition leaves the others' appends as they
were), and the follower broker resolves each object once and appends each partition's array."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np
import pytest

from actors.core.config import KafkaConfig
from actors.core.effects import Respond, Send
from actors.core.errors import ErrorCode
from actors.core.messages.fetch import (
    EpochEndOffset, FetchableTopicResponse, FetchPartition, FetchPartitionData, FetchRequest, FetchResponse, FetchTopic,
)
from actors.core.fetcher.fetcher import FetcherCore
from actors.core.fetcher.follower_messages import (
    FollowerAppendPartition, FollowerAppendRequest, FollowerAppendResponse, FollowerPartitionState,
    FollowerTruncateRequest, InitialFetchState, TruncationMode,
)
from actors.drivers.broker import BrokerDriver
from actors.shared_records import (
    RAY_INLINE_BYTES_ENV, ZERO_COPY_THRESHOLD_BYTES, SharedRecords, pack_together, ray_inline_bytes_max,
    resolve_shared_records, zero_copy_threshold_bytes,
)

TOPIC = "orders"


# ------------------------------------------------------------------- the leader's broker driver
class PackingMessenger:
    """Messenger, clock and log: records every pack call."""

    def __init__(self) -> None:
        self.packs: list[tuple] = []

    def pack(self, records, *, for_replica):
        self.packs.append(("pack", bytes(records), for_replica))
        return records

    def pack_together(self, payloads):
        self.packs.append(("pack_together", [bytes(p) for p in payloads]))
        return [f"shared#{i}" for i in range(len(payloads))]

    def now_ms(self):
        return 0

    def wake_at(self, deadline_ms):
        pass

    def log(self, level, message):
        pass

    def metric(self, name, value, tags):
        pass


def fetch_answer(payloads: dict[int, bytes], errors: dict[int, ErrorCode] | None = None) -> FetchResponse:
    errors = errors or {}
    return FetchResponse(responses=(FetchableTopicResponse(topic=TOPIC, partitions=tuple(
        FetchPartitionData(partition_index=p, error_code=errors.get(p, ErrorCode.NONE), high_watermark=10,
                           records=payload) for p, payload in payloads.items())),))


def answer_through_driver(replica_id: int, response: FetchResponse) -> tuple[list, PackingMessenger]:
    messenger = PackingMessenger()
    driver = BrokerDriver(SimpleNamespace(broker_id=0), messenger, messenger, messenger)
    # The core's step (the table's Fetch handler) stands in: it answers ``response`` at once.
    driver.step = lambda handler, request_id, request, now_ms: [Respond(request_id=request_id, response=response)]
    answered: list = []
    request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, replica_id=replica_id, topics=(
        FetchTopic(topic=TOPIC, partitions=tuple(FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
                                                 for p in range(4))),))
    driver.handle(request, answered.append)
    return answered, messenger


def test_a_follower_fetch_answer_of_many_partitions_is_packed_as_one_object():
    response = fetch_answer({0: b"a" * 10, 1: b"", 2: b"c" * 30, 3: b"d" * 40}, {1: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    answered, messenger = answer_through_driver(replica_id=2, response=response)
    assert messenger.packs == [("pack_together", [b"a" * 10, b"c" * 30, b"d" * 40])], messenger.packs
    partitions = answered[0].responses[0].partitions
    assert [p.records for p in partitions] == ["shared#0", b"", "shared#1", "shared#2"]
    assert partitions[1].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_consumer_fetch_answer_is_still_packed_per_partition():
    response = fetch_answer({0: b"a" * 10, 1: b"b" * 20})
    _, messenger = answer_through_driver(replica_id=-1, response=response)
    assert messenger.packs == [("pack", b"a" * 10, False), ("pack", b"b" * 20, False)], messenger.packs


def test_an_answer_with_no_records_packs_nothing():
    response = fetch_answer({0: b"", 1: b""})
    answered, messenger = answer_through_driver(replica_id=2, response=response)
    assert messenger.packs == [] and answered == [response]


# ------------------------------------------------------------------------- pack_together itself
def test_pack_together_puts_an_answers_payloads_with_one_put():
    puts: list = []
    payloads = [b"x" * ZERO_COPY_THRESHOLD_BYTES, memoryview(b"y" * 100), b"z"]
    packed = pack_together(payloads, put=lambda value: puts.append(value) or "ref-1")
    assert len(puts) == 1, f"{len(puts)} puts for one answer"
    (stored,) = puts
    assert [bytes(array) for array in stored] == [bytes(p) for p in payloads]
    assert all(isinstance(array, np.ndarray) and array.dtype == np.uint8 for array in stored)
    assert packed == [SharedRecords("ref-1", 0, ZERO_COPY_THRESHOLD_BYTES), SharedRecords("ref-1", 1, 100),
                      SharedRecords("ref-1", 2, 1)]
    assert [len(p) for p in packed] == [ZERO_COPY_THRESHOLD_BYTES, 100, 1]  # what the fetcher counts


def test_pack_together_keeps_small_answers_inline_as_bytes():
    puts: list = []
    payloads = [b"x" * 100, memoryview(b"y" * 200)]
    packed = pack_together(payloads, put=lambda value: puts.append(value) or "ref")
    assert puts == [] and packed == [b"x" * 100, b"y" * 200]
    assert all(type(p) is bytes for p in packed)


# ------------------------------------------------------------- the follower broker resolves them
def follower_append(*records) -> FollowerAppendRequest:
    return FollowerAppendRequest(partitions=tuple(FollowerAppendPartition(
        topic=TOPIC, partition=p, current_leader_epoch=1, fetch_offset=0, records=r, leader_high_watermark=0)
        for p, r in enumerate(records)))


def test_the_follower_resolves_each_shared_object_once():
    arrays = [np.frombuffer(b"a" * 5, dtype=np.uint8), np.frombuffer(b"b" * 7, dtype=np.uint8)]
    awaited: list = []

    async def get(ref):
        awaited.append(ref)
        return arrays
    request = follower_append(SharedRecords("ref-1", 1, 7), b"inline", SharedRecords("ref-1", 0, 5))
    resolved = asyncio.run(resolve_shared_records(request, get))
    assert awaited == ["ref-1"]
    assert [bytes(p.records) for p in resolved.partitions] == [b"b" * 7, b"inline", b"a" * 5]
    assert asyncio.run(resolve_shared_records(follower_append(b"x"), get)) == follower_append(b"x")


@pytest.mark.parametrize("shared", [SharedRecords("ref-1", 5, 5), SharedRecords("ref-1", 0, 4),
                                    SharedRecords("ref-1", -1, 5), SharedRecords("no-object", 0, 5)])
def test_a_slice_that_does_not_match_its_object_stays_unresolved(shared):
    """The broker core then answers that partition CORRUPT_MESSAGE (records must be bytes-like)."""
    async def get(ref):  # the broker's get gives None for what is no object ref
        return [np.frombuffer(b"a" * 5, dtype=np.uint8)] if ref == "ref-1" else None
    resolved = asyncio.run(resolve_shared_records(follower_append(shared, SharedRecords("ref-1", 0, 5)), get))
    assert resolved.partitions[0].records is shared
    assert bytes(resolved.partitions[1].records) == b"a" * 5


# ----------------------------------------------------- the fetcher core, per partition as before
def test_each_partition_of_a_shared_answer_is_still_handled_on_its_own():
    core = FetcherCore(broker_id=2, leader_id=1, fetcher_id=0, config=KafkaConfig({}), now_ms=0)
    effects = core.add_partitions([InitialFetchState(topic=TOPIC, partition=p, current_leader_epoch=1,
                                                     fetch_offset=0, needs_truncation=False) for p in range(4)], 0)
    (fetch,) = [e.message for e in effects if isinstance(e, Send)]
    assert isinstance(fetch, FetchRequest)
    shared = [SharedRecords("ref-1", i, 100) for i in range(2)]
    answer = FetchResponse(responses=(FetchableTopicResponse(topic=TOPIC, partitions=(
        FetchPartitionData(partition_index=0, high_watermark=5, records=shared[0]),
        FetchPartitionData(partition_index=1, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER),
        FetchPartitionData(partition_index=2, high_watermark=5,
                           diverging_epoch=EpochEndOffset(epoch=0, end_offset=0)),
        FetchPartitionData(partition_index=3, high_watermark=5, records=shared[1]),
    )),))
    effects = core.on_leader_response(fetch, answer, 10)
    (append,) = [e.message for e in effects if isinstance(e, Send)]
    assert isinstance(append, FollowerAppendRequest)
    assert [(p.partition, p.records) for p in append.partitions] == [(0, shared[0]), (3, shared[1])]
    assert all(p.records is shared[i] for i, p in enumerate(append.partitions))
    states = core.partitions
    assert states[(TOPIC, 1)].state.name == "DELAYED"  # the error backs off that partition only
    # The diverging partition truncates next, by epoch, on its own.
    done = FollowerAppendResponse(partitions=tuple(FollowerPartitionState(
        topic=TOPIC, partition=p, log_end_offset=4, latest_epoch=1, high_watermark=4) for p in (0, 3)))
    effects = core.on_local_response(append, done, 20)
    (truncate,) = [e.message for e in effects if isinstance(e, Send)]
    assert isinstance(truncate, FollowerTruncateRequest)
    assert [(p.partition, p.mode) for p in truncate.partitions] == [(2, TruncationMode.TO_LEADER_EPOCH_END)]
    assert core.partitions[(TOPIC, 0)].fetch_offset == core.partitions[(TOPIC, 3)].fetch_offset == 4


def test_answers_go_inline_below_a_quarter_of_rays_inline_limit_and_never_below_100_kib():
    assert ray_inline_bytes_max({}) == 100 * 1024  # Ray's default
    assert ray_inline_bytes_max({RAY_INLINE_BYTES_ENV: "2097152"}) == 2 * 1024 * 1024
    for unusable in ("lots", "", "0", "-5"):
        assert ray_inline_bytes_max({RAY_INLINE_BYTES_ENV: unusable}) == 100 * 1024, unusable
    assert zero_copy_threshold_bytes(100 * 1024) == 100 * 1024  # as before under Ray's default
    assert zero_copy_threshold_bytes(2 * 1024 * 1024) == 512 * 1024
    assert zero_copy_threshold_bytes(1024) == 100 * 1024
