"""Proves FetcherCore replicates a leader's log onto a follower's and repairs divergence as Kafka's
fetcher does (KIP-101/279/320, out-of-range, fencing, backoff), by driving it against a harness
that answers its requests from a real leader Log and a real follower Log, one request at a time."""
from __future__ import annotations

import pytest

from actors.core.config import KafkaConfig
from actors.core.effects import ArmTimer, LogEvent, Send
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.log import Log
from actors.core.log.log_config import LogConfig
from actors.core.log.storage import InMemoryStorage
from actors.core.messages.fetch import (
    EpochEndOffset, FetchableTopicResponse, FetchPartitionData, FetchRequest, FetchResponse,
)
from actors.core.messages.list_offsets import (
    EARLIEST_TIMESTAMP, ListOffsetsPartitionResponse, ListOffsetsRequest, ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from actors.core.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, OffsetForLeaderPartitionResult,
    OffsetForLeaderTopicResult,
)
from actors.core.fetcher import fetcher as fetcher_module
from actors.core.fetcher.fetcher import FetchState, FetcherCore
from actors.core.fetcher.follower_messages import (
    FollowerAppendRequest, FollowerAppendResponse, FollowerPartitionState, FollowerTruncateRequest,
    FollowerTruncateResponse, InitialFetchState,
)
from actors.core.fetcher.truncation import apply_follower_truncation
from actors.codecs.record_batches import next_offset_after, read_records
from tests.support.core_driver import make_batch

TOPIC = "orders"
LEADER_ID, FOLLOWER_ID = 1, 2
BACKOFF_MS = 100
STEPS_MAX = 2_000


def append(log: Log, epoch: int, values) -> None:
    """One one-record batch per value, written by a leader in ``epoch``."""
    for value in values:
        log.append_as_leader(make_batch([value]), leader_epoch=epoch)


def contents(log: Log) -> list[tuple[int, bytes, int]]:
    """(offset, value, leader epoch) for every record in the log."""
    records, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 20)
        records += [(r.offset, r.value, r.leader_epoch) for r in read_records(TOPIC, 0, info.records, offset)]
        offset = next_offset_after(info.records, offset)
    return records


class Harness:
    """A leader broker and a follower broker, each with real Logs, answering one FetcherCore."""

    def __init__(self, *, policy: str = "leader-epoch", partitions=(0,), epoch: int = 1, config=None):
        self.now_ms = 0
        self.partitions = tuple(partitions)
        self.leader = {p: Log.open(InMemoryStorage(), f"{TOPIC}-{p}", LogConfig()) for p in partitions}
        self.follower = {p: Log.open(InMemoryStorage(), f"{TOPIC}-{p}", LogConfig()) for p in partitions}
        self.leader_epoch = dict.fromkeys(partitions, epoch)  # the leader broker's current epoch
        self.follower_epoch = dict.fromkeys(partitions, epoch)  # the epoch the follower broker follows
        self.leader_hw = dict.fromkeys(partitions, 0)
        self.follower_hw = dict.fromkeys(partitions, 0)
        self.leader_reachable = True
        self.outstanding: Send | None = None
        self.exchanges: list[tuple[object, object]] = []  # (request, response) in order
        self.events: list[LogEvent] = []
        self.timers: list[int] = []
        overrides = {"raykafka.truncation.policy": policy, "replica.fetch.backoff.ms": BACKOFF_MS, **(config or {})}
        self.fetcher = FetcherCore(broker_id=FOLLOWER_ID, leader_id=LEADER_ID, fetcher_id=0,
                                   config=KafkaConfig(overrides), now_ms=0)

    # ------------------------------------------------------------------ driving the core
    def apply(self, effects) -> None:
        sends = [e for e in effects if isinstance(e, Send)]
        assert len(sends) <= 1, f"more than one request sent at once: {sends}"
        assert not (sends and self.outstanding), "a request was sent while another was in flight"
        if sends:
            self.outstanding = sends[0]
            assert self.fetcher.in_flight_request is sends[0].message
        self.events += [e for e in effects if isinstance(e, LogEvent)]
        self.timers += [e.deadline_ms for e in effects if isinstance(e, ArmTimer)]

    def add(self, *partitions: int, needs_truncation: bool = True) -> None:
        """The follower broker hands the fetcher these partitions (default: partition 0), in one call."""
        states = []
        for partition in partitions or (0,):
            log = self.follower[partition]
            if not needs_truncation and self.fetcher.truncation_policy == "high-watermark":
                log.truncate_to(self.follower_hw[partition])  # what the broker does under this policy
            states.append(InitialFetchState(
                topic=TOPIC, partition=partition, current_leader_epoch=self.follower_epoch[partition],
                fetch_offset=log.log_end_offset, latest_epoch=log.latest_epoch,
                needs_truncation=needs_truncation))
        self.apply(self.fetcher.add_partitions(states, self.now_ms))

    def step(self) -> None:
        send, self.outstanding = self.outstanding, None
        if send.destination == "leader":
            response = self.answer_as_leader(send.message) if self.leader_reachable else ErrorCode.NETWORK_EXCEPTION
            self.exchanges.append((send.message, response))
            self.apply(self.fetcher.on_leader_response(send.message, response, self.now_ms))
        else:
            assert send.destination == "local", send
            response = self.answer_as_follower(send.message)
            self.exchanges.append((send.message, response))
            self.apply(self.fetcher.on_local_response(send.message, response, self.now_ms))

    def run(self, until=None) -> None:
        """Deliver requests until ``until()`` holds (default: caught up) or nothing is in flight."""
        until = until or self.caught_up
        for _ in range(STEPS_MAX):
            if until() or self.outstanding is None:
                return
            self.step()
        raise AssertionError(f"no quiescence after {STEPS_MAX} steps: {self.fetcher.partitions}")

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        self.apply(self.fetcher.tick(self.now_ms))

    def caught_up(self) -> bool:
        states = self.fetcher.partitions
        return bool(states) and all(
            s.state is FetchState.FETCHING and s.fetch_offset == self.leader[p].log_end_offset
            and self.follower_hw[p] == self.leader_hw[p] == self.leader[p].log_end_offset
            for (_, p), s in states.items())

    def requests(self, kind) -> list:
        return [request for request, _ in self.exchanges if isinstance(request, kind)]

    # ------------------------------------------------------------ the leader broker's side
    def fence(self, partition: int, current_leader_epoch: int) -> ErrorCode:
        if current_leader_epoch < self.leader_epoch[partition]:
            return ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > self.leader_epoch[partition]:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.NONE

    def answer_as_leader(self, request):
        if isinstance(request, OffsetForLeaderEpochRequest):
            assert request.replica_id == FOLLOWER_ID
            return OffsetForLeaderEpochResponse(topics=tuple(OffsetForLeaderTopicResult(
                topic=t.topic, partitions=tuple(self._epoch_end(p) for p in t.partitions)) for t in request.topics))
        if isinstance(request, FetchRequest):
            assert request.replica_id == FOLLOWER_ID
            return FetchResponse(responses=tuple(FetchableTopicResponse(
                topic=t.topic, partitions=tuple(self._fetch(p) for p in t.partitions)) for t in request.topics))
        assert isinstance(request, ListOffsetsRequest), request
        assert request.replica_id == FOLLOWER_ID
        return ListOffsetsResponse(topics=tuple(ListOffsetsTopicResponse(
            name=t.name, partitions=tuple(self._list_offset(p) for p in t.partitions)) for t in request.topics))

    def _epoch_end(self, asked) -> OffsetForLeaderPartitionResult:
        error = self.fence(asked.partition, asked.current_leader_epoch)
        if error != ErrorCode.NONE:
            return OffsetForLeaderPartitionResult(partition=asked.partition, error_code=error)
        epoch, end_offset = self.leader[asked.partition].end_offset_for_epoch(asked.leader_epoch)
        return OffsetForLeaderPartitionResult(partition=asked.partition, leader_epoch=epoch, end_offset=end_offset)

    def _fetch(self, asked) -> FetchPartitionData:
        p, log = asked.partition, self.leader[asked.partition]
        error = self.fence(p, asked.current_leader_epoch)
        if error != ErrorCode.NONE:
            return FetchPartitionData(partition_index=p, error_code=error)
        common = dict(partition_index=p, log_start_offset=log.log_start_offset)
        if asked.last_fetched_epoch >= 0:  # KIP-320: the leader checks the follower's last epoch
            epoch, end_offset = log.end_offset_for_epoch(asked.last_fetched_epoch)
            if epoch < asked.last_fetched_epoch or end_offset < asked.fetch_offset:
                return FetchPartitionData(high_watermark=self.leader_hw[p], **common,
                                          diverging_epoch=EpochEndOffset(epoch=epoch, end_offset=end_offset))
        try:
            info = log.read(asked.fetch_offset, asked.partition_max_bytes)
        except KafkaProtocolError as exc:
            return FetchPartitionData(partition_index=p, error_code=exc.error_code)
        # Two replicas, both in the ISR: the follower's fetch offset acknowledges what it has.
        self.leader_hw[p] = max(self.leader_hw[p], min(log.log_end_offset, asked.fetch_offset))
        return FetchPartitionData(high_watermark=self.leader_hw[p], records=info.records, **common)

    def _list_offset(self, asked) -> ListOffsetsPartitionResponse:
        p, log = asked.partition_index, self.leader[asked.partition_index]
        error = self.fence(p, asked.current_leader_epoch)
        if error != ErrorCode.NONE:
            return ListOffsetsPartitionResponse(partition_index=p, error_code=error)
        offset = log.log_start_offset if asked.timestamp == EARLIEST_TIMESTAMP else log.log_end_offset
        return ListOffsetsPartitionResponse(partition_index=p, offset=offset)

    # ---------------------------------------------------------- the follower broker's side
    def answer_as_follower(self, request):
        if isinstance(request, FollowerTruncateRequest):
            return FollowerTruncateResponse(partitions=tuple(self._truncate(p) for p in request.partitions))
        assert isinstance(request, FollowerAppendRequest), request
        return FollowerAppendResponse(partitions=tuple(self._append(p) for p in request.partitions))

    def _local_state(self, asked, error=ErrorCode.NONE) -> FollowerPartitionState:
        log = self.follower[asked.partition]
        return FollowerPartitionState(topic=asked.topic, partition=asked.partition, error_code=error,
                                      log_end_offset=log.log_end_offset, latest_epoch=log.latest_epoch,
                                      high_watermark=self.follower_hw[asked.partition],
                                      log_start_offset=log.log_start_offset)

    def _truncate(self, asked) -> FollowerPartitionState:
        if asked.current_leader_epoch != self.follower_epoch[asked.partition]:
            return FollowerPartitionState(topic=asked.topic, partition=asked.partition,
                                          error_code=ErrorCode.FENCED_LEADER_EPOCH)
        state = apply_follower_truncation(self.follower[asked.partition], asked,
                                          high_watermark=self.follower_hw[asked.partition])
        self.follower_hw[asked.partition] = state.high_watermark
        return state

    def _append(self, asked) -> FollowerPartitionState:
        p, log = asked.partition, self.follower[asked.partition]
        if asked.current_leader_epoch != self.follower_epoch[p]:
            return FollowerPartitionState(topic=asked.topic, partition=p, error_code=ErrorCode.FENCED_LEADER_EPOCH)
        if asked.fetch_offset != log.log_end_offset:
            return self._local_state(asked, ErrorCode.OFFSET_OUT_OF_RANGE)
        if len(asked.records):
            log.append_as_follower(asked.records)
        self.follower_hw[p] = min(asked.leader_high_watermark, log.log_end_offset)
        if asked.leader_log_start_offset >= 0:  # as the broker's Replication does
            log.maybe_increment_log_start_offset(min(asked.leader_log_start_offset, self.follower_hw[p]))
        return self._local_state(asked)


# ------------------------------------------------------------------------------ scenarios
def assert_identical(harness: Harness, partition: int = 0) -> None:
    assert contents(harness.follower[partition]) == contents(harness.leader[partition])
    assert harness.follower_hw[partition] == harness.leader_hw[partition] == harness.leader[partition].log_end_offset


def test_replicates_many_batches_of_several_partitions():
    harness = Harness(partitions=(0, 1), config={"replica.fetch.max.bytes": 300})
    for p in (0, 1):
        append(harness.leader[p], 0, [f"p{p}-old-{i}".encode() for i in range(10)])
        append(harness.leader[p], 1, [f"p{p}-new-{i}".encode() for i in range(40)])
    harness.add(0, 1)  # empty follower logs: no epoch to check, straight to fetching
    assert all(s.state is FetchState.FETCHING for s in harness.fetcher.partitions.values())
    harness.run()
    for p in (0, 1):
        assert_identical(harness, p)
        assert harness.fetcher.partitions[(TOPIC, p)].latest_epoch == 1
    fetches = harness.requests(FetchRequest)
    assert len(fetches) > 10, "replica.fetch.max.bytes should have split the copy into many fetches"
    assert all({p.partition for t in f.topics for p in t.partitions} == {0, 1} for f in fetches)
    assert not harness.requests(OffsetForLeaderEpochRequest)
    # Every fetch names the epoch of the last batch the follower holds (KIP-320).
    last = fetches[-1].topics[0].partitions[0]
    assert (last.last_fetched_epoch, last.current_leader_epoch, last.partition_max_bytes) == (1, 1, 300)


def diverged(harness: Harness) -> None:
    """The follower led epoch 1 and wrote 5..9, of which only 5..6 reached the new leader (epoch 2)."""
    append(harness.follower[0], 0, [b"a0", b"a1", b"a2", b"a3", b"a4"])
    append(harness.follower[0], 1, [b"b5", b"b6", b"x7", b"x8", b"x9"])
    append(harness.leader[0], 0, [b"a0", b"a1", b"a2", b"a3", b"a4"])
    append(harness.leader[0], 1, [b"b5", b"b6"])
    append(harness.leader[0], 2, [b"c7", b"c8", b"c9", b"c10", b"c11"])
    harness.follower_hw[0] = 5


def test_follower_truncates_its_uncommitted_suffix_by_epoch():
    harness = Harness(epoch=2)
    diverged(harness)
    harness.add(0)
    assert harness.fetcher.partitions[(TOPIC, 0)].state is FetchState.TRUNCATING
    harness.run()
    assert_identical(harness)
    (asked,) = harness.requests(OffsetForLeaderEpochRequest)
    partition = asked.topics[0].partitions[0]
    assert (asked.replica_id, partition.leader_epoch, partition.current_leader_epoch) == (FOLLOWER_ID, 1, 2)
    (truncation,) = harness.requests(FollowerTruncateRequest)
    assert (truncation.partitions[0].leader_epoch, truncation.partitions[0].leader_end_offset) == (1, 7)
    assert contents(harness.follower[0])[7][1] == b"c7"


def test_follower_that_never_saw_the_answered_epoch_needs_two_rounds():
    harness = Harness(epoch=3)
    append(harness.follower[0], 0, [b"a0", b"a1", b"a2", b"a3", b"a4"])
    append(harness.follower[0], 2, [b"y5", b"y6", b"y7", b"y8", b"y9"])  # epoch 2 nobody else saw
    append(harness.leader[0], 0, [b"a0", b"a1", b"a2", b"a3", b"a4"])
    append(harness.leader[0], 1, [b"b5", b"b6", b"b7"])
    append(harness.leader[0], 3, [b"c8", b"c9", b"c10"])
    harness.add(0)
    harness.run()
    assert_identical(harness)
    asked_epochs = [r.topics[0].partitions[0].leader_epoch for r in harness.requests(OffsetForLeaderEpochRequest)]
    assert asked_epochs == [2, 0], "KIP-279: ask about epoch 2, then about the follower's epoch 0"
    answers = [resp.partitions[0] for req, resp in harness.exchanges if isinstance(req, FollowerTruncateRequest)]
    assert [(a.log_end_offset, a.truncation_complete) for a in answers] == [(5, False), (5, True)]


def test_divergence_found_by_the_fetch_itself():
    """KIP-320 after a fast leader change: a fetcher already past its truncation round sends its
    last fetched epoch, the leader answers with a diverging epoch and the follower truncates."""
    harness = Harness(epoch=2)
    diverged(harness)
    harness.add(0, needs_truncation=False)
    assert harness.fetcher.partitions[(TOPIC, 0)].state is FetchState.FETCHING
    harness.run()
    assert_identical(harness)
    assert not harness.requests(OffsetForLeaderEpochRequest)
    first_answer = harness.exchanges[0][1].responses[0].partitions[0]
    assert first_answer.diverging_epoch == EpochEndOffset(epoch=1, end_offset=7)
    assert any("divergence" in event.message for event in harness.events)


def kip101_story_2(harness: Harness) -> None:
    """Both replicas held m0..m9 with HW 10; the leader lost m7..m9 in a crash, led epoch 2 alone
    and wrote n7..n11; the follower restarts with its old m7..m9."""
    values = [f"m{i}".encode() for i in range(10)]
    append(harness.follower[0], 1, values)
    append(harness.leader[0], 1, values[:7])
    append(harness.leader[0], 2, [f"n{i}".encode() for i in range(7, 12)])
    harness.follower_hw[0] = 10
    harness.leader_hw[0] = 10


@pytest.mark.parametrize("policy, needs_truncation", [
    ("leader-epoch", True), ("leader-epoch", False), ("high-watermark", False),
], ids=["epoch-truncation", "epoch-via-fetch", "high-watermark"])
def test_kip101_divergence_is_repaired_only_with_leader_epochs(policy, needs_truncation):
    harness = Harness(policy=policy, epoch=2)
    kip101_story_2(harness)
    harness.add(0, needs_truncation=needs_truncation)
    harness.run()
    follower, leader = contents(harness.follower[0]), contents(harness.leader[0])
    if policy == "leader-epoch":
        assert follower == leader
    else:
        # The bug the policy exists to reproduce: same offsets, different records, for good.
        assert [o for o, _, _ in follower] == [o for o, _, _ in leader]
        assert {o for (o, v, _), (_, w, _) in zip(follower, leader) if v != w} == {7, 8, 9}
        assert not harness.requests(OffsetForLeaderEpochRequest)
        assert all(p.last_fetched_epoch == -1 for f in harness.requests(FetchRequest)
                   for t in f.topics for p in t.partitions)


def test_out_of_range_follower_ahead_of_a_truncated_leader_truncates_to_its_end():
    harness = Harness(policy="high-watermark")
    values = [f"m{i}".encode() for i in range(10)]
    append(harness.follower[0], 1, values)
    append(harness.leader[0], 1, values[:5])  # an unclean leader that never had m5..m9
    harness.follower_hw[0] = 10
    harness.add(0, needs_truncation=False)
    harness.run()
    assert_identical(harness)
    (truncation,) = harness.requests(FollowerTruncateRequest)
    assert (truncation.partitions[0].mode.value, truncation.partitions[0].offset) == ("to-offset", 5)
    assert len(harness.requests(ListOffsetsRequest)) == 1, "LATEST was enough"


def test_out_of_range_below_the_leaders_log_start_restarts_the_follower_log_there():
    harness = Harness()
    append(harness.leader[0], 0, [f"m{i}".encode() for i in range(20)])
    harness.leader[0].maybe_increment_log_start_offset(15)
    append(harness.follower[0], 0, [f"m{i}".encode() for i in range(5)])
    harness.add(0)
    harness.run()
    assert harness.follower[0].log_start_offset == 15
    assert_identical(harness)
    timestamps = [p.timestamp for r in harness.requests(ListOffsetsRequest) for t in r.topics for p in t.partitions]
    assert timestamps == [-1, EARLIEST_TIMESTAMP]
    (truncation,) = [r for r in harness.requests(FollowerTruncateRequest)
                     if r.partitions[0].mode.value == "fully-and-start-at"]
    assert truncation.partitions[0].offset == 15


def test_the_leaders_log_start_reaches_the_follower_and_the_followers_reaches_the_leader():
    harness = Harness()
    append(harness.leader[0], 0, [f"m{i}".encode() for i in range(20)])
    harness.add(0)
    harness.run()
    harness.leader[0].maybe_increment_log_start_offset(15)  # DeleteRecords or retention on the leader
    for _ in range(6):  # fetch (the new start), append (applied), fetch (telling the leader)
        harness.step()
    assert harness.follower[0].log_start_offset == 15
    assert harness.requests(FetchRequest)[-1].topics[0].partitions[0].log_start_offset == 15


def test_fenced_partition_is_removed_and_resumes_when_added_with_the_newer_epoch():
    harness = Harness(epoch=1)
    append(harness.leader[0], 1, [b"a", b"b", b"c"])
    harness.add(0)
    harness.run()
    assert_identical(harness)
    harness.leader_epoch[0] = 2  # a new leader epoch the follower has not heard of yet
    append(harness.leader[0], 2, [b"d", b"e"])
    harness.step()  # the in-flight fetch is answered FENCED_LEADER_EPOCH
    assert harness.fetcher.partitions == {} and harness.outstanding is None
    harness.follower_epoch[0] = 2  # LeaderAndIsr reaches the follower broker, which re-adds it
    harness.add(0)
    state = harness.fetcher.partitions[(TOPIC, 0)]
    assert (state.current_leader_epoch, state.state) == (2, FetchState.TRUNCATING)
    harness.run()
    assert_identical(harness)


def test_answers_for_a_partition_re_added_meanwhile_are_ignored():
    harness = Harness(epoch=1)
    append(harness.leader[0], 1, [b"a", b"b", b"c"])
    harness.add(0)
    stale = harness.outstanding
    assert isinstance(stale.message, FetchRequest)
    harness.follower_epoch[0] = harness.leader_epoch[0] = 2
    harness.add(0)  # newer epoch: a new incarnation, while the old fetch is still in flight
    assert harness.fetcher.partitions[(TOPIC, 0)].current_leader_epoch == 2
    harness.step()  # the old fetch's data must not be appended under the new epoch
    assert not harness.requests(FollowerAppendRequest)
    assert harness.fetcher.partitions[(TOPIC, 0)].fetch_offset == 0
    harness.run()
    assert_identical(harness)
    assert harness.requests(FetchRequest)[-1].topics[0].partitions[0].current_leader_epoch == 2


def test_stale_or_same_epoch_add_keeps_the_current_state():
    harness = Harness(epoch=3)
    append(harness.leader[0], 3, [b"a", b"b"])
    harness.add(0)
    harness.run()
    before = harness.fetcher.partitions
    harness.follower_epoch[0] = 2
    harness.add(0)  # older epoch: ignored
    harness.follower_epoch[0] = 3
    harness.add(0)  # same epoch: kept
    assert harness.fetcher.partitions == before


def test_unreachable_leader_backs_off_then_resumes():
    harness = Harness()
    append(harness.leader[0], 1, [b"a", b"b", b"c"])
    harness.leader_reachable = False
    harness.add(0)
    harness.step()  # NETWORK_EXCEPTION
    state = harness.fetcher.partitions[(TOPIC, 0)]
    assert (state.state, state.delayed_until_ms, state.resume_state) == (
        FetchState.DELAYED, BACKOFF_MS, FetchState.FETCHING)
    assert harness.outstanding is None and harness.timers[-1] == BACKOFF_MS
    harness.advance(BACKOFF_MS - 1)
    assert harness.outstanding is None, "no request before the backoff expires"
    harness.leader_reachable = True
    harness.advance(1)
    assert isinstance(harness.outstanding.message, FetchRequest)
    harness.run()
    assert_identical(harness)


def test_delayed_truncating_partition_resumes_truncating():
    harness = Harness(epoch=2)
    diverged(harness)
    harness.leader_reachable = False
    harness.add(0)
    harness.step()
    assert harness.fetcher.partitions[(TOPIC, 0)].resume_state is FetchState.TRUNCATING
    harness.leader_reachable = True
    harness.advance(BACKOFF_MS)
    assert isinstance(harness.outstanding.message, OffsetForLeaderEpochRequest)
    harness.run()
    assert_identical(harness)


def test_request_never_answered_times_out_and_its_late_answer_is_ignored():
    harness = Harness()
    append(harness.leader[0], 1, [b"a"])
    harness.add(0)
    lost = harness.outstanding
    harness.outstanding = None  # the shell lost the call
    harness.advance(30_000 + 500)  # request.timeout.ms + replica.fetch.wait.max.ms
    assert harness.fetcher.partitions[(TOPIC, 0)].state is FetchState.DELAYED
    late = harness.answer_as_leader(lost.message)
    effects = harness.fetcher.on_leader_response(lost.message, late, harness.now_ms)
    assert not [e for e in effects if isinstance(e, Send)]
    assert harness.fetcher.partitions[(TOPIC, 0)].state is FetchState.DELAYED
    harness.advance(BACKOFF_MS)
    harness.run()
    assert_identical(harness)


def test_local_fencing_removes_the_partition():
    harness = Harness()
    append(harness.leader[0], 1, [b"a"])
    harness.add(0)
    harness.follower_epoch[0] = 2  # the follower broker moved on; the leader has not yet
    harness.step()  # fetch: data
    harness.step()  # local append: FENCED_LEADER_EPOCH
    assert harness.fetcher.partitions == {} and harness.outstanding is None
    assert harness.follower[0].log_end_offset == 0


def test_local_log_that_moved_under_the_fetcher_is_rechecked():
    harness = Harness()
    append(harness.leader[0], 1, [b"a", b"b", b"c", b"d"])
    harness.add(0)
    harness.run()
    append(harness.leader[0], 1, [b"e"])
    harness.follower[0].truncate_to(2)  # e.g. the broker restarted and recovered a shorter log
    harness.run(until=lambda: bool(harness.requests(OffsetForLeaderEpochRequest)))
    assert harness.fetcher.partitions[(TOPIC, 0)].fetch_offset == 2
    harness.run()
    assert_identical(harness)


def test_requests_name_at_most_the_limit_and_rotate(monkeypatch):
    monkeypatch.setattr(fetcher_module, "REQUEST_PARTITIONS_MAX", 2)
    harness = Harness(partitions=range(5))
    for p in range(5):
        append(harness.leader[p], 1, [f"v{p}".encode()])
    harness.add(*range(5))
    harness.run()
    fetches = harness.requests(FetchRequest)
    assert all(sum(len(t.partitions) for t in f.topics) <= 2 for f in fetches)
    for p in range(5):
        assert_identical(harness, p)
