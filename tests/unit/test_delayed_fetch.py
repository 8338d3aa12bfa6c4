"""A parked fetch completes in every case Kafka 2.4's DelayedFetch.tryComplete completes it: the
fetch offset and the readable end in different segments (case F), a follower that has not yet been
sent the leader's current high watermark (case H, KIP-392), and a partition this broker no longer
leads (cases A-C); and it keeps waiting otherwise. With raykafka's high watermark linger, a
follower's fetch that would be answered only to pass on a newer high watermark waits for records
to carry it, up to the linger and never past its max wait. Driven step by step with a fake clock, no Ray."""
from __future__ import annotations

import pytest

from actors.core.errors import ErrorCode
from actors.core.log.storage import InMemoryStorage
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from actors.codecs.record_batches import read_records
from tests.support.core_driver import CoreDriver, fetch_result, make_batch

MAX_WAIT_MS = 500
# raykafka.replica.high.watermark.linger.ms=0: a newer high watermark is sent at once, as Kafka does.
KAFKAS_RULE = {"raykafka.replica.high.watermark.linger.ms": "0"}
# More than any test here writes: only the completion cases under test can answer such a fetch early.
MIN_BYTES_LARGE = 1 << 20
SMALL = make_batch([b"s"])  # 69 bytes
LARGE = make_batch([b"x" * 150])  # 220 bytes


def segmented_leader(segment_bytes: int) -> CoreDriver:
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0, config={"segment.bytes": str(segment_bytes)})
    return driver


def segment_bases(driver) -> list[int]:
    return [segment.base_offset for segment in driver.manager.partitions[("t", 0)].log.segments]


def test_a_fetch_in_an_older_segment_is_answered_at_once_with_what_that_segment_holds():
    driver = segmented_leader(segment_bytes=len(SMALL) * 2)
    for value in (b"a", b"b", b"c", b"d"):
        driver.produce("t", 0, make_batch([value]))
    assert segment_bases(driver) == [0, 2]
    fetch_id = driver.fetch("t", 0, 0, max_wait_ms=MAX_WAIT_MS, min_bytes=MIN_BYTES_LARGE)
    # A read stops at its segment's end; waiting for min_bytes there could only run out the clock.
    data = fetch_result(driver.answers[fetch_id])
    assert [r.value for r in read_records("t", 0, data.records, 0)] == [b"a", b"b"]


def test_a_parked_fetch_completes_when_the_log_rolls_a_new_segment():
    driver = segmented_leader(segment_bytes=len(SMALL) + len(LARGE) - 1)
    driver.produce("t", 0, SMALL)
    fetch_id = driver.fetch("t", 0, 1, max_wait_ms=MAX_WAIT_MS, min_bytes=MIN_BYTES_LARGE)
    assert fetch_id not in driver.answers
    driver.produce("t", 0, LARGE)  # does not fit: offset 1 starts a new segment
    assert segment_bases(driver) == [0, 1]
    data = fetch_result(driver.answers[fetch_id])
    assert [r.value for r in read_records("t", 0, data.records, 1)] == [b"x" * 150]


def test_a_parked_fetch_keeps_waiting_for_min_bytes_within_one_segment():
    driver = segmented_leader(segment_bytes=1 << 20)
    driver.produce("t", 0, SMALL)
    fetch_id = driver.fetch("t", 0, 1, max_wait_ms=MAX_WAIT_MS, min_bytes=MIN_BYTES_LARGE)
    driver.produce("t", 0, LARGE)
    assert fetch_id not in driver.answers
    driver.advance(MAX_WAIT_MS)
    assert len(fetch_result(driver.answers[fetch_id]).records) == len(LARGE)


def three_replicas_with_two_records(config: dict | None = None) -> CoreDriver:
    """Broker 0 leads t-0 with followers 1 and 2 in the ISR; both hold offsets 0-1, HW 2 sent to both."""
    driver = CoreDriver(broker_id=0, config=config)
    driver.become("t", 0, leader=0, replicas=(0, 1, 2), isr=(0, 1, 2), leader_epoch=1)
    driver.produce("t", 0, make_batch([b"a", b"b"]))
    for follower in (1, 2):
        driver.fetch("t", 0, 0, replica_id=follower)
    for follower in (1, 2):
        driver.fetch("t", 0, 2, replica_id=follower)
    partition = driver.manager.partitions[("t", 0)]
    assert partition.high_watermark == 2
    for follower in (1, 2):  # each learns HW 2 from an answer of its own
        assert fetch_result(driver.answers[driver.fetch("t", 0, 2, replica_id=follower)]).high_watermark == 2
    return driver


def follower_fetch(driver, follower: int, offset: int) -> int:
    return driver.fetch("t", 0, offset, replica_id=follower, max_wait_ms=MAX_WAIT_MS, min_bytes=1)


def test_a_caught_up_follower_with_nothing_new_to_learn_waits():
    driver = three_replicas_with_two_records()
    fetch_id = follower_fetch(driver, 1, 2)
    assert fetch_id not in driver.answers
    driver.advance(MAX_WAIT_MS)
    assert fetch_result(driver.answers[fetch_id]).high_watermark == 2


def test_a_parked_follower_fetch_completes_when_another_followers_fetch_moves_the_high_watermark():
    driver = three_replicas_with_two_records(KAFKAS_RULE)
    driver.produce("t", 0, make_batch([b"c"]))
    assert fetch_result(driver.answers[driver.fetch("t", 0, 2, replica_id=1)]).high_watermark == 2
    waiting = follower_fetch(driver, 1, 3)  # broker 1 has offset 2; the HW waits for broker 2
    assert waiting not in driver.answers
    driver.fetch("t", 0, 2, replica_id=2)
    moving = follower_fetch(driver, 2, 3)  # broker 2's fetch offset moves the HW to 3
    assert driver.manager.partitions[("t", 0)].high_watermark == 3
    # Both learn HW 3 now, not a max wait (or a produce) later.
    assert fetch_result(driver.answers[waiting]).high_watermark == 3
    assert fetch_result(driver.answers[moving]).high_watermark == 3
    # Having been sent HW 3, a follower's next fetch waits again: no busy loop.
    assert follower_fetch(driver, 1, 3) not in driver.answers


def test_a_follower_fetch_is_answered_at_once_when_the_high_watermark_moved_since_its_last_answer():
    driver = three_replicas_with_two_records(KAFKAS_RULE)
    driver.produce("t", 0, make_batch([b"c"]))
    for follower in (1, 2):
        assert fetch_result(driver.answers[driver.fetch("t", 0, 2, replica_id=follower)]).high_watermark == 2
    driver.fetch("t", 0, 3, replica_id=2)  # answered at once (its offset moved nothing): HW 2 ...
    assert driver.manager.partitions[("t", 0)].high_watermark == 2
    driver.fetch("t", 0, 3, replica_id=1)  # ... until broker 1's moves it to 3, answered to 1
    assert driver.manager.partitions[("t", 0)].high_watermark == 3
    # Broker 2 was last sent HW 2: its next fetch, with nothing new to read, is answered at once.
    assert fetch_result(driver.answers[follower_fetch(driver, 2, 3)]).high_watermark == 3


LINGER_MS = 50


def lingering(linger_ms: int = LINGER_MS) -> CoreDriver:
    return three_replicas_with_two_records({"raykafka.replica.high.watermark.linger.ms": str(linger_ms)})


def high_watermark_moved_to_three(driver) -> tuple[int, int]:
    """Offset 2 written; broker 1 fetched it and parks; broker 2's fetch moves the HW to 3."""
    driver.produce("t", 0, make_batch([b"c"]))
    assert fetch_result(driver.answers[driver.fetch("t", 0, 2, replica_id=1)]).high_watermark == 2
    waiting = follower_fetch(driver, 1, 3)
    driver.fetch("t", 0, 2, replica_id=2)
    moving = follower_fetch(driver, 2, 3)
    assert driver.manager.partitions[("t", 0)].high_watermark == 3
    return waiting, moving


def test_with_a_high_watermark_linger_records_that_arrive_carry_the_new_high_watermark():
    driver = lingering()
    waiting, moving = high_watermark_moved_to_three(driver)
    assert waiting not in driver.answers and moving not in driver.answers, "no record-less round at once"
    driver.advance(LINGER_MS - 1)
    driver.produce("t", 0, make_batch([b"d"]))
    for fetch_id in (waiting, moving):
        data = fetch_result(driver.answers[fetch_id])
        assert data.high_watermark == 3
        assert [r.value for r in read_records("t", 0, data.records, 3)] == [b"d"]


def test_with_a_high_watermark_linger_the_new_high_watermark_goes_out_alone_when_the_linger_ends():
    driver = lingering()
    waiting, moving = high_watermark_moved_to_three(driver)
    driver.advance(LINGER_MS - 1)
    assert waiting not in driver.answers and moving not in driver.answers
    driver.advance(1)
    for fetch_id in (waiting, moving):
        data = fetch_result(driver.answers[fetch_id])
        assert data.high_watermark == 3 and not data.records
    # Having been sent HW 3, a follower's next fetch waits its whole max wait again.
    assert follower_fetch(driver, 1, 3) not in driver.answers


def test_a_high_watermark_linger_never_holds_a_fetch_past_its_max_wait():
    driver = lingering(linger_ms=MAX_WAIT_MS * 4)
    driver.produce("t", 0, make_batch([b"c"]))
    driver.fetch("t", 0, 2, replica_id=1)
    waiting = follower_fetch(driver, 1, 3)
    driver.advance(MAX_WAIT_MS - 10)
    driver.fetch("t", 0, 2, replica_id=2)
    follower_fetch(driver, 2, 3)  # moves the HW to 3: broker 1's fetch lingers, for 10 ms more at most
    assert waiting not in driver.answers
    driver.advance(10)
    assert fetch_result(driver.answers[waiting]).high_watermark == 3


def test_a_consumer_fetch_does_not_complete_on_a_high_watermark_it_cannot_read_up_to():
    driver = three_replicas_with_two_records()
    fetch_id = driver.fetch("t", 0, 2, max_wait_ms=MAX_WAIT_MS, min_bytes=MIN_BYTES_LARGE)
    driver.produce("t", 0, make_batch([b"c"]))
    driver.fetch("t", 0, 3, replica_id=1)
    driver.fetch("t", 0, 3, replica_id=2)
    assert driver.manager.partitions[("t", 0)].high_watermark == 3
    assert fetch_id not in driver.answers, "case H is for followers only; a consumer waits for min_bytes"


@pytest.mark.parametrize("replica_id", [-1, 2], ids=["consumer", "follower"])
def test_a_parked_fetch_completes_at_once_when_this_broker_stops_leading_and_truncates_below_it(replica_id):
    driver = CoreDriver(broker_id=0, config={"raykafka.truncation.policy": "high-watermark"})
    driver.become("t", 0, leader=0, replicas=(0, 1, 2), isr=(0, 1, 2), leader_epoch=1)
    for value in (b"a", b"b", b"c"):
        driver.produce("t", 0, make_batch([value]))
    driver.fetch("t", 0, 3, replica_id=2)
    driver.fetch("t", 0, 1, replica_id=1)  # the HW stops at 1, below broker 2's fetch offset
    driver.fetch("t", 0, 3, replica_id=2)  # broker 2 is sent HW 1
    fetch_id = driver.fetch("t", 0, 3, replica_id=replica_id, max_wait_ms=MAX_WAIT_MS, min_bytes=MIN_BYTES_LARGE)
    assert fetch_id not in driver.answers
    driver.become("t", 0, leader=1, replicas=(0, 1, 2), isr=(1, 2), leader_epoch=2)
    assert driver.manager.partitions[("t", 0)].log_end_offset == 1, "truncated to the HW, below the fetch"
    assert fetch_result(driver.answers[fetch_id]).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_follower_fetch_answered_with_a_diverging_epoch_does_not_wait():
    driver = CoreDriver(broker_id=0)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=0)
    driver.produce("t", 0, make_batch([b"a", b"b", b"c"]))
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=3)
    fetch_id = driver.call("handle_fetch", FetchRequest(
        replica_id=1, max_wait_ms=MAX_WAIT_MS, min_bytes=1, max_bytes=1 << 20, topics=(FetchTopic(
            topic="t", partitions=(FetchPartition(partition=0, fetch_offset=4, partition_max_bytes=1 << 20,
                                                  last_fetched_epoch=1),)),)))
    # Broker 1 wrote epoch 1, which this leader never had: waiting would only delay its truncation.
    diverging = fetch_result(driver.answers[fetch_id]).diverging_epoch
    assert (diverging.epoch, diverging.end_offset) == (0, 3)


class CountingStorage(InMemoryStorage):
    """In-memory storage that counts reads of segment data (``.log`` files)."""

    def __init__(self) -> None:
        super().__init__()
        self.log_reads = 0

    def read(self, path: str, position: int, size: int) -> bytes:
        self.log_reads += path.endswith(".log")
        return super().read(path, position, size)


@pytest.mark.parametrize("replica_id", [-1, 1], ids=["consumer", "follower"])
def test_a_parked_fetch_is_woken_by_appends_without_reading_the_log_until_it_completes(replica_id):
    """Kafka's DelayedFetch counts the bytes between the fetch offset and the readable end from
    log positions; only the completing read touches the log, not every append."""
    storage = CountingStorage()
    driver = CoreDriver(broker_id=0, storage=storage)
    driver.become("t", 0, leader=0, replicas=(0, 1), isr=(0,))
    driver.produce("t", 0, SMALL)
    if replica_id >= 0:
        driver.fetch("t", 0, 1, replica_id=replica_id)  # it learns HW 1, so case H does not answer it
    min_bytes = 5 * len(SMALL)
    fetch_id = driver.fetch("t", 0, 1, replica_id=replica_id, max_wait_ms=MAX_WAIT_MS, min_bytes=min_bytes)
    assert fetch_id not in driver.answers
    reads_when_parked = storage.log_reads
    for _ in range(4):
        driver.produce("t", 0, SMALL)
    assert fetch_id not in driver.answers, "4 batches are less than min_bytes"
    assert storage.log_reads == reads_when_parked, "appends below min_bytes read the log"
    driver.produce("t", 0, SMALL)
    assert len(fetch_result(driver.answers[fetch_id]).records) == 5 * len(SMALL)
    assert storage.log_reads == reads_when_parked + 1, "the completing read is the only one"


def test_a_parked_consumer_fetch_counts_only_bytes_below_the_high_watermark():
    driver = three_replicas_with_two_records()
    fetch_id = driver.fetch("t", 0, 2, max_wait_ms=MAX_WAIT_MS, min_bytes=2 * len(SMALL))
    driver.produce("t", 0, SMALL)
    driver.produce("t", 0, SMALL)
    assert fetch_id not in driver.answers, "nothing above the HW counts for a consumer"
    driver.fetch("t", 0, 3, replica_id=1)
    driver.fetch("t", 0, 3, replica_id=2)  # the HW moves to 3: one batch readable, min_bytes is two
    assert fetch_id not in driver.answers
    driver.fetch("t", 0, 4, replica_id=1)
    driver.fetch("t", 0, 4, replica_id=2)  # HW 4: two batches
    assert len(fetch_result(driver.answers[fetch_id]).records) == 2 * len(SMALL)
