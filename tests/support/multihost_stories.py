"""The drivers of the multi-host stories (tests/integration/test_multihost.py), run inside the head's
host: ``python multihost_stories.py STORY WORK_DIR`` starts a raykafka cluster on the Ray cluster
``RAY_ADDRESS`` names (broker i pinned to host i, the controller where the story says), drives
confluent-kafka clients through the brokers' advertised 198.18 addresses, and prints one JSON
object with what it saw. Stories with a fault hand it to the test at named steps (``Steps``):
the driver says ``ready``, the test makes the fault and says ``fault`` with its time, and so on,
each wait bounded. Every send and poll goes into a history that ``orchestration.chaos.checker``
judges at the end.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path

if __name__ == "__main__":  # run as a script: the repo root, for the imports below
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from orchestration.admin.cluster import Cluster  # noqa: E402
from orchestration.admin.wait import wait_until  # noqa: E402
from orchestration.chaos.checker import check  # noqa: E402
from orchestration.clients.producer_batch import history_text  # noqa: E402
from orchestration.history import HistoryWriter, read_history, topic_partition_key  # noqa: E402
from orchestration.spark.confluent_producer import ConfluentLoadProducer  # noqa: E402
from tests.support.netns_hosts import host_resource  # noqa: E402

BROKERS = 3
KAFKA_PORT = 9092
# Each host has a port space of its own, so every broker listens on Kafka's usual port at its own
# address, written with the placeholder a user would write once for every broker.
CONFIG = {"listeners": f"PLAINTEXT://{{node_ip}}:{KAFKA_PORT}",
          "replica.lag.time.max.ms": "3000", "broker.session.timeout.ms": "6000",
          "broker.heartbeat.interval.ms": "500", "replica.fetch.wait.max.ms": "100",
          "replica.fetch.backoff.ms": "200", "auto.leader.rebalance.enable": "false"}
PLACEMENT_AMOUNT = 0.01
TOPIC_CONFIG = {"min.insync.replicas": "2"}
STEP_TIMEOUT_S = 120
# librdkafka: short request timeouts and metadata refreshes so a producer finds a moved leader in
# seconds; a long message timeout so a record waits out the failover instead of expiring.
PRODUCER_CONFIG = {"acks": "all", "enable.idempotence": False, "linger.ms": 5, "message.timeout.ms": 90000,
                   "request.timeout.ms": 5000, "retry.backoff.ms": 200, "topic.metadata.refresh.interval.ms": 1000,
                   "socket.timeout.ms": 5000}
SEND_INTERVAL_S = 0.01
# The anomalies that mean an acknowledged record was lost or reordered. A plain (non-idempotent)
# producer may legitimately write a retried record twice (a "duplicate"), which loses nothing.
LOSS_KINDS = ("lost-write", "inconsistent-offsets", "non-monotonic-poll", "poll-skip", "non-monotonic-send",
              "aborted-read", "read-above-commit")


def host_ip(index: int) -> str:
    return f"198.18.0.{10 + index}"


# ------------------------------------------------------------------------------ steps
class Steps:
    """Named steps shared by the driver and the test through files in one directory: ``tell``
    writes a step's JSON (atomically), ``wait`` polls for one, bounded."""

    def __init__(self, directory: str | Path, on_wait=None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._on_wait = on_wait or (lambda: None)

    def tell(self, name: str, **data) -> None:
        temp = self.directory / f".{name}.json"
        temp.write_text(json.dumps(data))
        temp.rename(self.directory / f"{name}.json")

    def wait(self, name: str, timeout_s: float = STEP_TIMEOUT_S) -> dict:
        path = self.directory / f"{name}.json"
        deadline = time.monotonic() + timeout_s
        while not path.exists():
            self._on_wait()
            if time.monotonic() > deadline:
                raise TimeoutError(f"step {name!r} not reached within {timeout_s}s")
            time.sleep(0.1)
        return json.loads(path.read_text())


# ------------------------------------------------------------------------------ cluster
def start_cluster(work_dir: Path, controller_host: int) -> Cluster:
    import ray
    ray.init(address=os.environ["RAY_ADDRESS"], namespace=f"multihost-{uuid.uuid4().hex[:8]}", log_to_driver=False)
    return Cluster.start(brokers=BROKERS, log_dir=str(work_dir / "logs"), config=CONFIG,
                         broker_resources={i: {host_resource(i): PLACEMENT_AMOUNT} for i in range(BROKERS)},
                         controller_resources={host_resource(controller_host): PLACEMENT_AMOUNT})


def create_topic(cluster: Cluster, topic: str, partitions: int) -> None:
    cluster.create_topic(topic, partitions=partitions, replication_factor=BROKERS, config=TOPIC_CONFIG)
    wait_until(lambda: all(p.leader >= 0 and len(p.isr) == BROKERS for p in cluster.describe_topic(topic)),
               60, f"every partition of {topic} to have a leader and a full ISR")


def broker_addresses() -> dict[int, str]:
    return {i: f"{host_ip(i)}:{KAFKA_PORT}" for i in range(BROKERS)}


# ------------------------------------------------------------------------------ clients
class SteadyProducer:
    """Sends unique values to every partition in turn with acks=all, from a thread, into the
    history, and notes when each send was acknowledged (monotonic clock, shared by every process
    on this machine, so comparable with a fault's time taken by the test)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, history: HistoryWriter) -> None:
        self.topic, self.partitions = topic, partitions
        self._producer = ConfluentLoadProducer(bootstrap, PRODUCER_CONFIG, history=history, process="producer")
        self.acks: list[tuple[int, float, float, int]] = []  # (partition, sent at, acked at, offset)
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="steady-producer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        sequence = 0
        while not self._stop.is_set():
            partition = sequence % self.partitions
            sent_at = time.monotonic()
            future = self._producer.send(self.topic, value=b"v-%d" % sequence, partition=partition)
            future.add_done_callback(lambda f, p=partition, s=sent_at: self._done(f, p, s))
            sequence += 1
            self._stop.wait(SEND_INTERVAL_S)

    def _done(self, future, partition: int, sent_at: float) -> None:
        with self._lock:
            if future.exception() is None:
                self.acks.append((partition, sent_at, time.monotonic(), future.result().offset))
            else:
                self.errors.append(str(future.exception()))

    def first_ack_sent_after(self, partition: int, moment: float) -> float | None:
        """When the first send to ``partition`` made after ``moment`` was acknowledged."""
        with self._lock:
            times = [acked_at for p, sent_at, acked_at, _ in self.acks if p == partition and sent_at > moment]
        return min(times) if times else None

    def acked_count(self, partition: int | None = None) -> int:
        with self._lock:
            return sum(1 for p, *_ in self.acks if partition is None or p == partition)

    def stop(self, timeout_s: float = 120) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._producer.close(timeout_s)


def read_everything(bootstrap: str, topic: str, partitions: int, history: HistoryWriter,
                    timeout_s: float = 120) -> dict[int, dict[int, int]]:
    """Read every partition from offset 0 to its high watermark with confluent-kafka, each poll into
    the history; returns, per partition, the leader epoch of each offset read."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        positions = {p: 0 for p in range(partitions)}
        epochs: dict[int, dict[int, int]] = {p: {} for p in range(partitions)}
        deadline = time.monotonic() + timeout_s
        while any(positions[p] < ends[p] for p in range(partitions)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} to {ends}: at {positions} after {timeout_s}s")
            messages = [m for m in consumer.consume(num_messages=500, timeout=0.5) if m.error() is None]
            if not messages:
                continue
            before = {topic_partition_key(topic, p): positions[p] for p in range(partitions)}
            history.poll("reader", [(m.topic(), m.partition(), m.offset(), history_text(m.value())) for m in messages],
                         before)
            for message in messages:
                positions[message.partition()] = message.offset() + 1
                epochs[message.partition()][message.offset()] = message.leader_epoch()
        return epochs
    finally:
        consumer.close()


def verdict(history_path: Path) -> dict:
    report = check(read_history(history_path))
    events = list(read_history(history_path))
    sends = [e for e in events if e["f"] == "send"]
    loss = {kind: len(report.of_kind(kind)) for kind in LOSS_KINDS if report.of_kind(kind)}
    return {"acknowledged": sum(1 for e in sends if e["type"] == "ok"),
            "failed": sum(1 for e in sends if e["type"] == "fail"),
            "indeterminate": sum(1 for e in sends if e["type"] == "info"),
            "lost": len(report.of_kind("lost-write")), "loss_anomalies": loss,
            "duplicates": len(report.of_kind("duplicate")), "unseen": len(report.of_kind("unseen")),
            "examples": [a.to_dict() for kind in loss for a in report.of_kind(kind)[:3]]}


# ------------------------------------------------------------------------------ stories
def story_addresses(work_dir: Path, steps: Steps) -> dict:
    """Every broker's advertised address serves a producer and a consumer on its own."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    cluster = start_cluster(work_dir, controller_host=2)
    try:
        topic, partitions = "addresses", 3
        create_topic(cluster, topic, partitions)
        result = {"bootstrap_servers": cluster.bootstrap_servers, "by_bootstrap": {}}
        for broker_id, address in broker_addresses().items():
            brokers = AdminClient({"bootstrap.servers": address}).list_topics(timeout=30).brokers
            listed = {b.id: f"{b.host}:{b.port}" for b in brokers.values()}
            producer = Producer({"bootstrap.servers": address, **PRODUCER_CONFIG})
            acked: dict[tuple[int, int], bytes] = {}

            def delivered(error, message, acked=acked):
                if error is None:
                    acked[(message.partition(), message.offset())] = message.value()
            values = [b"via-%d-%d" % (broker_id, i) for i in range(60)]
            for i, value in enumerate(values):
                producer.produce(topic, value=value, partition=i % partitions, on_delivery=delivered)
            unacked = producer.flush(60)
            consumer = Consumer({"bootstrap.servers": address, "group.id": f"via-{broker_id}",
                                 "enable.auto.commit": False})
            consumer.assign([TopicPartition(topic, p, min(o for (q, o) in acked if q == p)) for p in range(partitions)])
            read: dict[tuple[int, int], bytes] = {}
            deadline = time.monotonic() + 60
            while len(read) < len(acked) and time.monotonic() < deadline:
                for message in consumer.consume(num_messages=100, timeout=0.5):
                    if message.error() is None and message.value().startswith(b"via-%d-" % broker_id):
                        read[(message.partition(), message.offset())] = message.value()
            consumer.close()
            result["by_bootstrap"][address] = {
                "metadata_brokers": {str(k): v for k, v in sorted(listed.items())}, "unacknowledged": unacked,
                "acknowledged": len(acked), "read": len(read),
                "mismatched": sum(1 for key, value in acked.items() if read.get(key) != value)}
        result["expected_brokers"] = {str(k): v for k, v in broker_addresses().items()}
        result["leaders"] = {p.partition: p.leader for p in cluster.describe_topic(topic)}
        # The followers fetched over the leaders' fetch channels, each on its own host's address.
        import ray
        from tests.support.replication_carriers import carried
        result["fetch_channels"] = {str(b): list(ray.get(cluster.broker(b).fetch_channel.remote(), timeout=60)[0])
                                    for b in cluster.broker_ids}
        result["fetches_carried"] = {str(b): {f"{leg} {carrier}": count for (leg, carrier), count
                                              in carried(cluster, b).items() if leg == "leader_calls"}
                                     for b in cluster.broker_ids}
        return result
    finally:
        cluster.shutdown()


def _leader_partition(cluster: Cluster, topic: str, broker_id: int) -> int:
    led = [p.partition for p in cluster.describe_topic(topic) if p.leader == broker_id]
    assert led, f"broker {broker_id} leads no partition of {topic}: {cluster.describe_topic(topic)}"
    return led[0]


def _fault_story(work_dir: Path, steps: Steps, *, fault_name: str) -> dict:
    """Shared by the host-loss and host-partition stories: the controller on host 2, clients on host
    0, broker 1 (host 1) leading a partition with a full ISR when the test makes its fault.

    Failover time is from the fault to the acknowledgement of the first record written in a later
    leader epoch on that partition (the epochs read back say where the new epoch starts)."""
    topic, partitions, victim = f"{fault_name}-story", 3, 1
    cluster = start_cluster(work_dir, controller_host=2)
    history_path = work_dir / "history.jsonl"
    try:
        create_topic(cluster, topic, partitions)
        moved = _leader_partition(cluster, topic, victim)

        def state():
            (described,) = [p for p in cluster.describe_topic(topic) if p.partition == moved]
            return described
        with HistoryWriter(history_path) as history:
            producer = SteadyProducer(cluster.bootstrap_servers, topic, partitions, history)
            wait_until(lambda: all(producer.acked_count(p) >= 20 for p in range(partitions)), 60,
                       "20 acknowledged sends on every partition before the fault")
            wait_until(lambda: len(state().isr) == BROKERS, 60, f"partition {moved}'s ISR to be full before the fault")
            before = state()
            steps.tell("ready", victim_broker=victim, partition=moved)
            fault = steps.wait("fault")
            history.fault(fault_name, f"host-{victim}", {"at_monotonic": fault["at"]})
            # The victim's own view while it is away from the controller: a zombie leader still
            # answers the clients' host (a lost host answers nobody, so it is not asked).
            victim_views = []
            watch_victim = fault_name == "partition"

            def moved_on() -> bool:
                if watch_victim:
                    victim_views.append(_broker_view(cluster, victim, topic, moved))
                return state().leader not in (victim, -1)
            wait_until(moved_on, 120, f"the controller to elect a new leader for partition {moved}")
            elected_at = time.monotonic()
            during = state()
            wait_until(lambda: producer.first_ack_sent_after(moved, elected_at) is not None, 120,
                       f"an acks=all send to partition {moved} made after the election to be acknowledged")
            # A few seconds more with the victim away: a zombie leader would take writes now.
            zombie_until = time.monotonic() + 3
            while time.monotonic() < zombie_until:
                if watch_victim:
                    victim_views.append(_broker_view(cluster, victim, topic, moved))
                time.sleep(0.5)
            steps.tell("failed-over")
            steps.wait("restored")
            restored_at = time.monotonic()
            history.fault(f"{fault_name}-healed", f"host-{victim}", {})
            wait_until(lambda: len(state().isr) == BROKERS, 180, f"broker {victim} to rejoin partition {moved}'s ISR")
            rejoin_s = time.monotonic() - restored_at
            victim_after = _broker_view(cluster, victim, topic, moved)
            producer.stop()
            epochs = read_everything(cluster.bootstrap_servers, topic, partitions, history)
        after = state()
        new_epoch_start = min(offset for offset, epoch in epochs[moved].items() if epoch > before.leader_epoch)
        failover_s = min(acked_at for p, _, acked_at, offset in producer.acks
                         if p == moved and offset >= new_epoch_start) - fault["at"]
        zombie = [v for v in victim_views if v and v.get("is_leader") and v.get("leader_epoch") == before.leader_epoch]
        return {"partition": moved, "victim_broker": victim, "failover_s": round(failover_s, 3),
                "election_s": round(elected_at - fault["at"], 3), "rejoin_s": round(rejoin_s, 3),
                "leader_before": before.leader, "epoch_before": before.leader_epoch, "isr_before": before.isr,
                "leader_during": during.leader, "epoch_during": during.leader_epoch, "isr_during": during.isr,
                "new_epoch_start_offset": new_epoch_start,
                "zombie_high_watermarks": sorted({v["high_watermark"] for v in zombie}),
                "victim_after": victim_after, "isr_after": after.isr, "epoch_after": after.leader_epoch,
                "read": sum(len(e) for e in epochs.values()), "producer_errors": producer.errors[:5],
                **verdict(history_path)}
    finally:
        cluster.shutdown()


def _broker_view(cluster: Cluster, broker_id: int, topic: str, partition: int) -> dict | None:
    """How ``broker_id`` sees ``topic``-``partition`` (asked from the clients' host, which reaches it)."""
    import ray
    try:
        rows = ray.get(cluster.broker(broker_id).describe_partitions.remote(), timeout=2)
    except Exception as exc:  # the view is reported, not judged here
        return {"error": repr(exc)}
    for row in rows:
        if row.get("topic") == topic and row.get("partition") == partition:
            return {k: row.get(k) for k in ("leader", "is_leader", "leader_epoch", "isr", "high_watermark",
                                            "log_end_offset")}
    return None


def story_host_loss(work_dir: Path, steps: Steps) -> dict:
    return _fault_story(work_dir, steps, fault_name="host-loss")


def story_host_partition(work_dir: Path, steps: Steps) -> dict:
    return _fault_story(work_dir, steps, fault_name="partition")


STORIES = {"addresses": story_addresses, "host-loss": story_host_loss, "host-partition": story_host_partition}


def main(argv: list[str]) -> int:
    story, work_dir = argv[0], Path(argv[1])
    work_dir.mkdir(parents=True, exist_ok=True)
    result = STORIES[story](work_dir, Steps(work_dir / "steps"))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
