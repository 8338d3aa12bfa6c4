"""Replication on a real 3-broker cluster: with replication factor 3 and min.insync.replicas=2,
every record acknowledged with acks=all survives a leader kill at its acknowledged offset and the
replicas agree below the high watermark; a dead follower leaves the ISR and rejoins; a killed
fetcher is replaced and catches up; an idempotent producer writes each record once across a leader
kill; with two brokers down acks=all is refused; a producer sending one
record at a time with acks=all and no retries keeps going across repeated leader kills; a paused
broker serves no log reads until it resumes; a consumer whose records an unclean election truncated
reads the new leader's records from where the logs diverge (KIP-320); a killed broker's old
process never answers once the kill has returned."""
from __future__ import annotations

import concurrent.futures
import threading
import time

import pytest
import ray

from actors.core.errors import ErrorCode
from actors.core.messages.metadata import MetadataRequest
from orchestration import KafkaError
from orchestration.admin.wait import wait_until
from tests.support.clusters import running_cluster
from tests.support.reading import read_to_high_watermark
from tests.support.replication_carriers import carried, copied_whole, replicate_small_and_large

pytestmark = pytest.mark.integration

LAG_TIME_MAX_MS = 3000
CONFIG = {"replica.lag.time.max.ms": str(LAG_TIME_MAX_MS), "broker.session.timeout.ms": "6000",
          "broker.heartbeat.interval.ms": "500", "replica.fetch.wait.max.ms": "100",
          "replica.fetch.backoff.ms": "200", "auto.leader.rebalance.enable": "false"}
RECORDS = 20_000


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory, CONFIG) as started:
        yield started


def replicas_agree_below_hw(cluster, topic: str, partition: int) -> bool:
    description = next(p for p in cluster.describe_topic(topic) if p.partition == partition)
    digests = cluster.replica_digests(topic, partition, description.high_watermark)
    return len(digests) == 3 and len({tuple(d) for d in digests.values()}) == 1


def test_acks_all_survives_a_leader_kill_and_replicas_agree(cluster):
    cluster.create_topic("durable", partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    wait_until(lambda: len(cluster.describe_topic("durable")[0].isr) == 3, 30, "a full ISR")
    producer = cluster.producer({"acks": "all", "linger.ms": "5", "retries": "1000000",
                                 "delivery.timeout.ms": "120000"})
    futures = []
    leader = cluster.describe_topic("durable")[0].leader
    for i in range(RECORDS):
        futures.append((f"v{i}".encode(), producer.send("durable", value=f"v{i}".encode(), partition=0)))
        if i == RECORDS // 3:
            cluster.kill("broker", leader, restart=True)  # Ray restarts it; it rejoins as a follower
    producer.flush(timeout=180)
    acknowledged = {}
    failed = 0
    for value, future in futures:
        try:
            metadata = future.result(timeout=1)
        except KafkaError:
            failed += 1  # a send may fail for good; it is then not acknowledged, and not checked
            continue
        assert (0, metadata.offset) not in acknowledged, "two acknowledged sends at one offset"
        acknowledged[(0, metadata.offset)] = value
    assert len(acknowledged) >= RECORDS * 0.9, f"only {len(acknowledged)} acknowledged, {failed} failed"

    # Read up to the high watermark, not until as many records as acknowledgements: retried sends
    # may have written duplicates, which would end a count-based read before the last records.
    seen = read_to_high_watermark(cluster, "durable", 1, at_least={0: max(o for _, o in acknowledged) + 1})
    lost = {k: v for k, v in acknowledged.items() if k not in seen or seen[k].value != v}
    assert not lost, f"{len(lost)} acknowledged records lost or changed, e.g. {sorted(lost.items())[:3]}"
    wait_until(lambda: len(cluster.describe_topic("durable")[0].isr) == 3, 60, "the restarted broker in the ISR")
    wait_until(lambda: replicas_agree_below_hw(cluster, "durable", 0), 60, "identical replicas below HW")


def test_an_idempotent_producer_writes_each_record_once_across_a_leader_kill(cluster):
    """Retries on (the default) with enable.idempotence: every acknowledged record is in the log at
    its offset, and no value is in the log twice, though the leader died with requests in flight."""
    cluster.create_topic("once", partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    wait_until(lambda: len(cluster.describe_topic("once")[0].isr) == 3, 30, "a full ISR")
    producer = cluster.producer({"acks": "all", "linger.ms": "5", "enable.idempotence": "true",
                                 "request.timeout.ms": "3000", "delivery.timeout.ms": "120000"})
    leader = cluster.describe_topic("once")[0].leader
    futures = []
    for i in range(RECORDS // 4):
        futures.append((f"o{i}".encode(), producer.send("once", value=f"o{i}".encode(), partition=0)))
        if i == RECORDS // 12:
            cluster.kill("broker", leader, restart=True)
    producer.flush(timeout=180)
    acknowledged = {f.result(timeout=1).offset: value for value, f in futures if f.exception(timeout=1) is None}
    assert len(acknowledged) >= len(futures) * 0.9, f"only {len(acknowledged)} of {len(futures)} acknowledged"
    seen = read_to_high_watermark(cluster, "once", 1, at_least={0: max(acknowledged) + 1})
    lost = {o: v for o, v in acknowledged.items() if (0, o) not in seen or seen[(0, o)].value != v}
    assert not lost, f"{len(lost)} acknowledged records lost or moved, e.g. {sorted(lost.items())[:3]}"
    values = [record.value for record in seen.values()]
    twice = {v for v in values if values.count(v) > 1} if len(set(values)) != len(values) else set()
    assert not twice, f"{len(twice)} values written twice, e.g. {sorted(twice)[:3]}"


def test_dead_follower_leaves_the_isr_and_rejoins_after_restart(cluster):
    cluster.create_topic("isr", partitions=1, replication_factor=3)
    description = cluster.describe_topic("isr")[0]
    follower = next(r for r in description.replicas if r != description.leader)
    producer = cluster.producer({"acks": "1"})
    cluster.kill("broker", follower, restart=False)
    stopped_at = time.monotonic()
    for i in range(100):
        producer.send("isr", value=b"x", partition=0)
    producer.flush(timeout=30)
    wait_until(lambda: follower not in cluster.describe_topic("isr")[0].isr,
               (LAG_TIME_MAX_MS * 3) / 1000, "the dead follower to leave the ISR")
    print(f"\nfollower {follower} left the ISR {time.monotonic() - stopped_at:.2f}s after it stopped")
    cluster.restart_broker(follower)
    wait_until(lambda: follower in cluster.describe_topic("isr")[0].isr, 60, "the follower back in the ISR")
    wait_until(lambda: replicas_agree_below_hw(cluster, "isr", 0), 60, "identical replicas")


def test_a_killed_broker_never_answers_from_its_old_process_once_kill_returns(cluster):
    """``ray.kill`` only asks Ray to end the process; ``Cluster.kill`` returns once it has ended, so
    a script's next look at the broker (as the chaos rows take right after a kill) sees the
    restarted broker or none, never the one that was killed."""
    cluster.create_topic("bounced", partitions=1, replication_factor=3)
    wait_until(lambda: len(cluster.describe_topic("bounced")[0].isr) == 3, 60, "bounced's ISR to reach 3")
    broker = cluster.broker(2)
    killed_pid = ray.get(broker.ping.remote(), timeout=30)["pid"]
    cluster.kill("broker", 2, restart=True)
    try:
        answered_pid = ray.get(broker.ping.remote(), timeout=60)["pid"]
    except ray.exceptions.RayError:  # restarting: the old process is gone, which is what counts
        answered_pid = None
    assert answered_pid != killed_pid, "broker 2's killed process answered after kill returned"
    restarted_pid = wait_until(lambda: ray.get(broker.ping.remote(), timeout=10)["pid"], 60, "broker 2 restarted")
    assert restarted_pid != killed_pid
    wait_until(lambda: 2 in cluster.describe_topic("bounced")[0].isr, 60, "broker 2 back in bounced's ISR")


def test_killed_fetcher_is_replaced_and_catches_up(cluster):
    cluster.create_topic("refetch", partitions=3, replication_factor=3)
    producer = cluster.producer({"acks": "1", "linger.ms": "5"})
    follower = next(r for r in cluster.describe_topic("refetch")[0].replicas
                    if r != cluster.describe_topic("refetch")[0].leader)
    cluster.kill("replica-fetcher", follower)
    for i in range(3000):
        producer.send("refetch", value=f"r{i}".encode(), partition=i % 3)
    producer.flush(timeout=60)
    for partition in range(3):
        wait_until(lambda: replicas_agree_below_hw(cluster, "refetch", partition)
                   and cluster.describe_topic("refetch")[partition].high_watermark
                   == cluster.describe_topic("refetch")[partition].log_end_offset,
                   60, f"partition {partition} to be fully replicated")
    assert sum(p.high_watermark for p in cluster.describe_topic("refetch")) == 3000


def test_acks_all_is_refused_with_two_brokers_down_and_nothing_is_appended(cluster):
    cluster.create_topic("strict-isr", partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    leader = cluster.describe_topic("strict-isr")[0].leader
    others = [b for b in cluster.broker_ids if b != leader]
    for broker_id in others:
        cluster.kill("broker", broker_id, restart=False)
    def leader_sees_isr_of_itself() -> bool:
        # The leader's own view (not only the controller's): it decides what to refuse.
        return any(e["topic"] == "strict-isr" and e["isr"] == [leader]
                   for e in ray.get(cluster.broker(leader).describe_partitions.remote(), timeout=10))
    wait_until(leader_sees_isr_of_itself, 60, "the leader to see an ISR of itself alone")
    end_before = cluster.describe_topic("strict-isr")[0].log_end_offset
    producer = cluster.producer({"acks": "all", "retries": "0"})
    with pytest.raises(KafkaError) as raised:
        producer.send("strict-isr", value=b"refused", partition=0).result(timeout=30)
    assert raised.value.name == "NOT_ENOUGH_REPLICAS"
    assert cluster.describe_topic("strict-isr")[0].log_end_offset == end_before
    for broker_id in others:
        cluster.restart_broker(broker_id)


# The producer of the one-at-a-time test. delivery.timeout.ms is lowered from Kafka's 120 s so that a
# stalled producer (a batch parked behind a leader its metadata never learns) fails the test in
# minutes rather than an hour; every send completes within delivery.timeout.ms + request.timeout.ms.
# It is near the least Kafka allows (linger.ms + request.timeout.ms), because the last round
# waits for sends that expire while no broker leads the partition.
ONE_AT_A_TIME_PRODUCER = {"acks": "all", "retries": "0", "linger.ms": "2", "delivery.timeout.ms": "6000",
                          "request.timeout.ms": "5000"}
SEND_BOUND_S = 6 + 5 + 20  # delivery.timeout.ms + request.timeout.ms + slack for a busy machine
# While the producer sends, another thread kills the leader, then each next leader as soon as the
# controller names it, KILLS_PER_ROUND times per round. The last kill of a round often finds the
# ISR shrunk to the leader alone (the brokers killed before it have not caught up yet), so the
# partition has no leader (-1) until Ray has restarted that broker: a producer that learns of "no
# leader" then must ask again later. Whether it learns of it depends on timing, so a last round
# makes sure: the brokers stay down until the live ones have told the producer there is no leader.
ROUNDS = 2
KILLS_PER_ROUND = 3
ACKNOWLEDGED_PER_ROUND = 40  # sends acknowledged before each round of kills starts
# Once the partition is led again, the producer must be acknowledged this many times in a row
# (with retries=0, the first sends may still fail while its metadata catches up).
ACKNOWLEDGED_IN_A_ROW = 10
RECOVERY_TIMEOUT_S = 120


def led_with_isr_of_at_least(cluster, topic: str, size: int) -> bool:
    description = cluster.describe_topic(topic)[0]
    return description.leader >= 0 and len(description.isr) >= size


def kill_leaders_in_a_row(cluster, topic: str, kills: int) -> list[int]:
    """Kill partition 0's leader, then each leader the controller names after it, ``kills`` times."""
    killed = []
    for _ in range(kills):
        description = wait_until(lambda: next(p for p in cluster.describe_topic(topic) if p.leader >= 0), 120,
                                 f"a leader for {topic} after killing brokers {killed}")
        cluster.kill("broker", description.leader)  # Ray restarts it; it recovers from its log directory
        killed.append(description.leader)
        wait_until(lambda: cluster.describe_topic(topic)[0].leader_epoch > description.leader_epoch, 120,
                   f"the controller to act on the death of broker {description.leader}")
    return killed


def metadata_names_no_leader(cluster, broker_id: int, topic: str) -> bool:
    """Whether ``broker_id`` answers a client's Metadata request with no leader for partition 0."""
    response = ray.get(cluster.broker(broker_id).handle.remote(MetadataRequest(topics=(topic,))), timeout=10)
    return response.topics[0].error_code == ErrorCode.NONE and response.topics[0].partitions[0].leader_id < 0


def leave_without_leader_until_the_producer_has_asked(cluster, topic: str, failures: dict) -> None:
    """Stop both followers, then the leader, the ISR's last member (none restarts by itself);
    start one follower again, which cannot lead (unclean election is off) but answers Metadata
    with no leader; once the producer has failed sends since, start the others again."""
    description = cluster.describe_topic(topic)[0]
    followers = [r for r in description.replicas if r != description.leader]
    for follower in followers:
        cluster.kill("broker", follower, restart=False)
    wait_until(lambda: cluster.describe_topic(topic)[0].isr == [description.leader], 120,
               f"the ISR of {topic} to shrink to its leader {description.leader}")
    cluster.kill("broker", description.leader, restart=False)
    wait_until(lambda: cluster.describe_topic(topic)[0].leader < 0, 120, f"{topic} to have no leader")
    cluster.restart_broker(followers[0])
    wait_until(lambda: metadata_names_no_leader(cluster, followers[0], topic), 120,
               f"broker {followers[0]} to answer Metadata for {topic} with no leader")
    failed_before = sum(failures.values())
    wait_until(lambda: sum(failures.values()) >= failed_before + 2, 120,
               "two failed sends while the only live broker says there is no leader")
    cluster.restart_broker(description.leader)
    cluster.restart_broker(followers[1])


# A fault story of about a minute: `make chaos` runs it (CI runs both), keeping `make test` near 25 minutes.
@pytest.mark.chaos
def test_one_record_at_a_time_with_acks_all_keeps_going_across_leader_kills(cluster):
    """The scenario of a new user: each send waits for its result while the partition's leader is
    killed again and again (Ray restarts it). With retries=0 a send may fail, but none may hang,
    and once the partition is led again the producer sends again: it asks for metadata while the
    leader it knows of is none, as Kafka's sender does."""
    topic = "one-at-a-time"
    cluster.create_topic(topic, partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    wait_until(lambda: led_with_isr_of_at_least(cluster, topic, 3), 60, f"a full ISR for {topic}")
    producer = cluster.producer(ONE_AT_A_TIME_PRODUCER)
    acknowledged: dict[tuple[int, int], bytes] = {}
    failures: dict[str, int] = {}

    def send_one(index: int) -> KafkaError | None:
        value = f"one-{index}".encode()
        try:
            metadata = producer.send(topic, value=value, partition=0).result(timeout=SEND_BOUND_S)
        except concurrent.futures.TimeoutError:
            pytest.fail(f"send {index} did not complete within {SEND_BOUND_S}s (delivery.timeout.ms + "
                        f"request.timeout.ms): the producer hangs; failures so far {failures}")
        except KafkaError as exc:
            failures[exc.name] = failures.get(exc.name, 0) + 1
            return exc
        assert (0, metadata.offset) not in acknowledged, f"two acknowledged sends at offset {metadata.offset}"
        acknowledged[(0, metadata.offset)] = value
        return None

    killed: list[int] = []
    killer_errors: list[BaseException] = []

    def kill_leaders() -> None:
        try:
            for round_ in range(ROUNDS):
                wanted = len(acknowledged) + ACKNOWLEDGED_PER_ROUND
                wait_until(lambda: len(acknowledged) >= wanted, 120,
                           f"{wanted} sends acknowledged before round {round_ + 1} of kills (the producer "
                           f"does not recover from round {round_}?)")
                killed.extend(kill_leaders_in_a_row(cluster, topic, KILLS_PER_ROUND))
            wait_until(lambda: led_with_isr_of_at_least(cluster, topic, 3), 120,
                       f"{topic} led with a full ISR before the last round")
            leave_without_leader_until_the_producer_has_asked(cluster, topic, failures)
        except BaseException as exc:  # reported by the test's thread
            killer_errors.append(exc)

    killer = threading.Thread(target=kill_leaders, name="leader-killer", daemon=True)
    killer.start()
    index = 0
    while killer.is_alive():
        send_one(index)
        index += 1
    killer.join()
    assert not killer_errors, f"killing leaders failed: {killer_errors[0]!r}"
    wait_until(lambda: led_with_isr_of_at_least(cluster, topic, 2), RECOVERY_TIMEOUT_S,
               f"{topic} led again with at least min.insync.replicas in its ISR")
    in_a_row, deadline = 0, time.monotonic() + RECOVERY_TIMEOUT_S
    while in_a_row < ACKNOWLEDGED_IN_A_ROW:
        assert time.monotonic() < deadline, (
            f"the producer did not get {ACKNOWLEDGED_IN_A_ROW} sends in a row acknowledged within "
            f"{RECOVERY_TIMEOUT_S}s of {topic} being led again ({cluster.describe_topic(topic)[0]}); "
            f"failures so far {failures}")
        in_a_row = in_a_row + 1 if send_one(index) is None else 0
        index += 1
    print(f"\n{len(acknowledged)} of {index} one-at-a-time sends acknowledged; failures {failures}; "
          f"brokers killed in turn {killed}")

    seen = read_to_high_watermark(cluster, topic, 1, at_least={0: max(o for _, o in acknowledged) + 1})
    lost = {k: v for k, v in acknowledged.items() if k not in seen or seen[k].value != v}
    assert not lost, f"{len(lost)} acknowledged records lost or changed, e.g. {sorted(lost.items())[:3]}"


def test_a_paused_broker_serves_no_log_reads_until_it_resumes(cluster):
    # The group coordinator's load (read_log) and the replicas' digests read a broker's logs; a
    # stop-the-world pause must hold them as it holds every other call, or a paused broker would
    # still hand out its log.
    broker = cluster.broker(0)
    ray.get(broker.pause.remote(), timeout=30)
    try:
        reads = [broker.read_log.remote("__consumer_offsets", 0, 0, 1024),
                 broker.replica_digest.remote("__consumer_offsets", 0, 1)]
        answered, _ = ray.wait(reads, num_returns=len(reads), timeout=2)
        assert answered == [], "a paused broker answered a log read"
    finally:
        ray.get(broker.resume.remote(), timeout=30)
    assert len(ray.get(reads, timeout=60)) == 2


def test_a_paused_follower_copies_a_backlog_of_large_answers_over_many_partitions(cluster):
    """The leader answers the follower's fetches with the records of several partitions, each
    answer as one object in Ray's shared memory (actors/shared_records.py): the follower appends
    every partition's share of it, and the replicas end identical."""
    partitions, records_per_partition, value = 4, 400, b"v" * 1024  # 400 KiB a partition
    cluster.create_topic("large-answers", assignment=[[0, 1]] * partitions, config={"min.insync.replicas": "1"})
    wait_until(lambda: all(len(p.isr) == 2 for p in cluster.describe_topic("large-answers")), 30, "a full ISR")
    producer = cluster.producer({"acks": "1", "linger.ms": "5", "batch.size": "1000000"})
    follower = cluster.broker(1)
    ray.get(follower.pause.remote(), timeout=30)
    try:
        for i in range(partitions * records_per_partition):
            producer.send("large-answers", value=value, partition=i % partitions)
        producer.flush(timeout=60)
    finally:
        ray.get(follower.resume.remote(), timeout=30)

    def copied(partition: int) -> bool:
        description = cluster.describe_topic("large-answers")[partition]
        digests = cluster.replica_digests("large-answers", partition, description.log_end_offset)
        return (description.log_end_offset == description.high_watermark == records_per_partition
                and len(digests) == 2 and len({tuple(d) for d in digests.values()}) == 1)
    for partition in range(partitions):
        wait_until(lambda partition=partition: copied(partition), 60,
                   f"partition {partition}'s backlog copied whole to the follower")


def test_a_follower_fetches_over_the_leaders_fetch_channel_and_appends_over_its_brokers_local_channel(cluster):
    """A fetcher sends its Fetches to the leader over TCP and hands its broker the records over
    the broker's Unix socket (actors/broker_channel.py), small answers and large alike: after
    small acks=all writes and a backlog of large answers no call of this follower's went through
    Ray, and the replicas are identical. Then the leader is killed and Ray restarts it (a new
    process, a new channel): replication goes on over the channels, and every record is on both."""
    topic = "channels"
    records, before, after = replicate_small_and_large(cluster, topic)
    assert after["leader_calls", "channel"] - before["leader_calls", "channel"] >= 30, (before, after)
    assert after["local_calls", "channel"] - before["local_calls", "channel"] >= 30, (before, after)
    assert after["leader_calls", "ray"] == before["leader_calls", "ray"], (before, after)
    assert after["local_calls", "ray"] == before["local_calls", "ray"], (before, after)

    cluster.kill("broker", 0, restart=True)
    wait_until(lambda: len(cluster.describe_topic(topic)[0].isr) == 2, 90, "both replicas in sync again")
    follower_id = 1 - cluster.describe_topic(topic)[0].leader
    since_restart = carried(cluster, follower_id)
    producer = cluster.producer({"acks": "all", "linger.ms": "0", "retries": "1000000"})
    for i in range(30):
        producer.send(topic, value=b"after-%d" % i, partition=0)
        producer.flush(timeout=60)
    wait_until(lambda: copied_whole(cluster, topic, records + 30), 60, "the new records on both replicas")
    later = carried(cluster, follower_id)
    assert later["leader_calls", "channel"] - since_restart["leader_calls", "channel"] >= 30, (since_restart, later)


def test_every_broker_and_fetcher_process_keeps_the_memory_it_frees(cluster):
    """Each broker's process and each of its fetchers' set glibc to keep freed memory for their next
    buffers (actors/process_memory.py, on by default), in the Ray workers they run in."""
    import sys
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's malloc only")
    from actors.process_memory import MMAP_THRESHOLD_BYTES, TOP_PAD_BYTES, TRIM_THRESHOLD_BYTES
    kept = {"MALLOC_TRIM_THRESHOLD_": TRIM_THRESHOLD_BYTES, "MALLOC_TOP_PAD_": TOP_PAD_BYTES,
            "MALLOC_MMAP_THRESHOLD_": MMAP_THRESHOLD_BYTES}
    cluster.create_topic("kept-memory", partitions=1, replication_factor=len(cluster.broker_ids))
    for broker_id in cluster.broker_ids:
        assert ray.get(cluster.broker(broker_id).ping.remote(), timeout=30)["freed_memory_kept"] == kept, broker_id

    def fetchers() -> list:
        return [entry["actor"] for broker_id in cluster.broker_ids
                for entry in ray.get(cluster.broker(broker_id).fetchers.remote(), timeout=30).values()]
    wait_until(lambda: len(fetchers()) >= len(cluster.broker_ids) - 1, 60, "the topic's followers' fetchers")
    for described in ray.get([fetcher.describe.remote() for fetcher in fetchers()], timeout=30):
        assert described["freed_memory_kept"] == kept, described


def test_a_consumer_rereads_from_where_an_unclean_election_made_the_logs_diverge(cluster):
    """KIP-320 on a real cluster: a consumer read offsets 0-9 from broker 0 while broker 1 (down)
    had only 0-4; broker 0 dies, broker 1 comes back and is elected uncleanly, and writes 5-11
    anew. The consumer validates its position (10) with the new leader and reads 5-11 from it;
    without validation it fetched on at 10 and never saw the new 5-9."""
    topic = "diverged"
    cluster.create_topic(topic, assignment=[[0, 1]],
                         config={"min.insync.replicas": "1", "unclean.leader.election.enable": "true"})
    wait_until(lambda: sorted(cluster.describe_topic(topic)[0].isr) == [0, 1], 60, f"a full ISR for {topic}")
    producer = cluster.producer({"acks": "all"})
    for i in range(5):
        producer.send(topic, value=b"old-%d" % i, partition=0)
    producer.flush(timeout=60)
    wait_until(lambda: replica_end_offsets(cluster, topic) == {0: 5, 1: 5}, 60, "both replicas to hold 0-4")
    cluster.kill("broker", 1, restart=False)
    try:
        wait_until(lambda: cluster.describe_topic(topic)[0].isr == [0], 60, f"the ISR of {topic} to shrink to broker 0")
        for i in range(5, 10):
            producer.send(topic, value=b"old-%d" % i, partition=0)
        producer.flush(timeout=60)
        consumer = cluster.consumer({"auto.offset.reset": "earliest"})
        consumer.assign([(topic, 0)])
        assert poll_offsets_and_values(consumer, 10) == [(i, b"old-%d" % i) for i in range(10)]

        cluster.kill("broker", 0, restart=False)
        wait_until(lambda: cluster.describe_topic(topic)[0].leader < 0, 60, f"{topic} to have no leader")
        cluster.restart_broker(1)
        wait_until(lambda: cluster.describe_topic(topic)[0].leader == 1, 60, f"broker 1 to lead {topic} (unclean)")
        rewriter = cluster.producer({"acks": "1"})
        for i in range(5, 12):
            rewriter.send(topic, value=b"new-%d" % i, partition=0)
        rewriter.flush(timeout=60)

        assert poll_offsets_and_values(consumer, 7) == [(i, b"new-%d" % i) for i in range(5, 12)]
    finally:
        for broker_id in (0, 1):
            if broker_id not in cluster.describe_cluster()["brokers"]:
                cluster.restart_broker(broker_id)


def replica_end_offsets(cluster, topic: str) -> dict[int, int]:
    """Each live replica's log end offset of partition 0, as its broker reports it."""
    ends = {}
    for broker_id in cluster.describe_topic(topic)[0].replicas:
        entries = ray.get(cluster.broker(broker_id).describe_partitions.remote(), timeout=10)
        ends.update({broker_id: e["log_end_offset"] for e in entries if e["topic"] == topic})
    return ends


def poll_offsets_and_values(consumer, count: int, timeout_s: float = 60) -> list[tuple[int, bytes]]:
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got += [(r.offset, r.value) for r in consumer.poll(timeout_ms=200)]
    assert len(got) >= count, f"waited {timeout_s} s for {count} records, got {got}"
    return got
