"""A model of the acks=all replication round trip: what each acknowledged batch costs on the network.

Theory of operation. ``run_replication_model`` builds a simulated cluster (``ReplicationModel``, a
``Simulation`` whose network latency is set per link and whose every message remembers the message
whose delivery sent it), creates one topic (``partitions``, ``replication_factor``,
``min.insync.replicas``) and produces to it with acks=all as a Kafka producer does: one
ProduceRequest per leader broker, carrying one batch for each partition that broker leads, at most
``max_in_flight`` such requests outstanding per broker, until ``batches`` batches per partition are
acknowledged. Nothing is formula: the brokers, fetchers and controller are the shipped drivers
(actors/drivers/) over the simulator's network, so the counts are what the core code sends.

For each run it reports, per acknowledged batch, the messages sent on the network by type
(requests and responses apart) and their bytes (each message's pickled size, which is what Ray
carries between actors), counting only messages caused, one delivery after another, by a
ProduceRequest: the background (fetches that expired empty, heartbeats) is reported apart, per
simulated second. For each acknowledgement it follows the chain of messages back from the
ProduceResponse to the first one sent once the request was (``hops``: the critical path; on an idle
cluster it starts at the ProduceRequest itself, while a request that arrives as a follower is busy
waits for a chain an earlier one started) and measures the simulated time from send to answer.
With ``idle_between_batches`` every round waits until replication is idle (every follower's fetch
parked at its leader) before the next send: the hand-countable case. Without it the producer sends
its next request the moment one is answered: "one sender, one batch at a time" of the latency
benchmark, where the followers may still be busy with the last batch.

Time. The simulator's clock counts whole units; the model runs it at ``UNITS_PER_MS`` units per
millisecond so that a message latency of 0.3 ms is 3 units, and multiplies every millisecond
setting it passes to the cores (``SCALED_KEYS``) and the tick period alike; figures come back in
milliseconds. A latency is fixed per link, not drawn, so a run is the same on every seed up to the
order in which messages due at the same moment are delivered.

The parameters a design change alters are explicit in ``ReplicationDesign``: the per-message
latency (``message_latency_ms``) and the latency of the calls between a fetcher and its own broker
(``local_latency_ms``, 0 when the follower's append runs in the fetcher's own process),
``replica.fetch.wait.max.ms``, ``replica.fetch.min.bytes``, ``num.replica.fetchers`` (how many
fetchers, and so Fetch requests, share a leader's partitions), the producer's ``max_in_flight``
and the batch shape.
"""
from __future__ import annotations

import collections
import copyreg
import io
import pickle
from collections.abc import Callable
from dataclasses import asdict, dataclass

from actors.core.config import BROKER_DEFAULTS
from actors.core.errors import ErrorCode
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData
from orchestration.simulation.network import REQUEST, RESPONSE, Message
from orchestration.simulation.nodes import CONTROLLER
from orchestration.simulation.simulation import SIM_DEFAULTS, Simulation, make_batch

TOPIC = "replicated"
UNITS_PER_MS = 10  # simulator clock units per millisecond: latencies to 0.1 ms
HIGH_WATERMARK_LINGER_KEY = "raykafka.replica.high.watermark.linger.ms"
TICK_INTERVAL_MS = 10  # the simulator's default tick period, in milliseconds
# The millisecond settings the model hands the cores, scaled by UNITS_PER_MS with the clock.
SCALED_KEYS = tuple(k for k in SIM_DEFAULTS if k.endswith(".ms")) + (
    "replica.fetch.wait.max.ms", "replica.fetch.backoff.ms", "replica.lag.time.max.ms", "request.timeout.ms",
    HIGH_WATERMARK_LINGER_KEY)
PRODUCE_TIMEOUT_MS = 30_000
ROUND_LIMIT_MS = 60_000  # a round that does not finish within this much simulated time stalls the run


@dataclass(frozen=True)
class ReplicationDesign:
    """What one run models; each field is something a design change could alter."""

    partitions: int = 1
    brokers: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    message_latency_ms: float = 0.3  # one message, one way: half a Ray actor call (~0.6 ms, MEASUREMENTS.md)
    local_latency_ms: float | None = None  # fetcher <-> its own broker; None: message_latency_ms
    replica_fetch_wait_max_ms: int = 500  # Kafka's default
    replica_fetch_min_bytes: int = 1
    # How long a follower's fetch waits for records to carry a newer high watermark (replica/fetch.py);
    # None: the broker's default; 0: Kafka's rule, answered at once.
    high_watermark_linger_ms: int | None = None
    num_replica_fetchers: int = 1
    max_in_flight: int = 1  # produce requests outstanding per broker
    idle_between_batches: bool = False  # each round waits until replication is idle (see the module docstring)
    batches: int = 5  # acknowledged batches per partition the run measures (after one warm-up round)
    records_per_batch: int = 1
    record_bytes: int = 1024
    seed: int = 1

    def config(self) -> dict[str, str]:
        settings = {"replica.fetch.wait.max.ms": self.replica_fetch_wait_max_ms,
                    "replica.fetch.min.bytes": self.replica_fetch_min_bytes,
                    "num.replica.fetchers": self.num_replica_fetchers,
                    "replica.lag.time.max.ms": 10_000, "request.timeout.ms": 30_000}
        settings[HIGH_WATERMARK_LINGER_KEY] = (int(BROKER_DEFAULTS[HIGH_WATERMARK_LINGER_KEY])
                                               if self.high_watermark_linger_ms is None
                                               else self.high_watermark_linger_ms)
        settings = {**SIM_DEFAULTS, **{k: str(v) for k, v in settings.items()}}
        return {k: str(int(v) * UNITS_PER_MS) if k in SCALED_KEYS else v for k, v in settings.items()}


def _units(ms: float) -> int:
    units = round(ms * UNITS_PER_MS)
    assert units >= 0 and abs(units - ms * UNITS_PER_MS) < 1e-6, f"{ms} ms is not a whole {1 / UNITS_PER_MS} ms"
    return units


def message_bytes(payload) -> int:
    """What Ray would carry for one message: its pickled size, records included (a log slice, a
    memoryview, which the Ray shell packs before it travels, counted as its bytes)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.dispatch_table = {**copyreg.dispatch_table, memoryview: lambda view: (bytes, (view.tobytes(),))}
    pickler.dump(payload)
    return buffer.tell()


class ReplicationModel(Simulation):
    """A ``Simulation`` with a fixed latency per link and the cause of every message it sends."""

    def __init__(self, design: ReplicationDesign) -> None:
        self.design = design
        self._latency_units = _units(design.message_latency_ms)
        self._local_units = _units(design.message_latency_ms if design.local_latency_ms is None
                                   else design.local_latency_ms)
        assert self._latency_units >= 1, "a message takes at least one clock unit between brokers"
        self.cause: dict[int, int | None] = {}  # message id -> id of the message whose delivery sent it
        self.sent: dict[int, Message] = {}
        self._delivering: int | None = None
        self.tracing = False
        super().__init__(brokers=range(design.brokers), config=design.config(), seed=design.seed,
                         latency_ms=(self._latency_units, self._latency_units),
                         tick_interval_ms=TICK_INTERVAL_MS * UNITS_PER_MS, trace_max=50)

    def _post(self, source, destination: str, destination_incarnation, kind: str, payload, call_id=None) -> None:
        local = source.name.startswith("fetcher:") and destination == "broker:" + source.name.split(":")[1] \
            or destination.startswith("fetcher:") and source.name == "broker:" + destination.split(":")[1]
        message = self.network.post(source=source.name, source_incarnation=source.incarnation,
                                    destination=destination, destination_incarnation=destination_incarnation,
                                    kind=kind, payload=payload, now_ms=self.now_ms,
                                    latency_ms=self._local_units if local else self._latency_units, call_id=call_id)
        if message is not None and message.held_by is not None:
            self.record(f"hold {message.describe()}")
        if message is not None and self.tracing:
            self.cause[message.id], self.sent[message.id] = self._delivering, message

    def _deliver(self, message: Message) -> None:
        self._delivering = message.id
        try:
            super()._deliver(message)
        finally:
            self._delivering = None

    def chain(self, message_id: int) -> list[Message]:
        """The messages, first to last, whose deliveries led to ``message_id`` (a timer or the client starts it)."""
        chain = []
        while message_id is not None and message_id in self.sent:
            chain.append(self.sent[message_id])
            message_id = self.cause.get(message_id)
        return chain[::-1]


@dataclass
class _Send:
    broker_id: int
    message_id: int | None = None
    sent_units: int = 0
    answered_units: int | None = None
    batches: int = 0
    acknowledged: int = 0


def _leaders(sim: ReplicationModel, partitions: int) -> dict[int, list[int]]:
    by_broker: dict[int, list[int]] = collections.defaultdict(list)
    for partition in range(partitions):
        by_broker[sim.leader(TOPIC, partition)].append(partition)
    return dict(sorted(by_broker.items()))


def _settled(sim: ReplicationModel, partitions: int) -> bool:
    """Every replica holds the leader's log and high watermark, and every follower's fetch is parked."""
    for partition in range(partitions):
        described = sim.describe(TOPIC, partition)
        leader = sim.replica(described["leader"], TOPIC, partition)
        if sorted(leader.isr) != sorted(described["replicas"]) or leader.high_watermark != leader.log_end_offset:
            return False
        for broker_id in described["replicas"]:
            if sim.high_watermark(broker_id, TOPIC, partition) != leader.high_watermark:
                return False
    return not any(m.source.startswith(("fetcher:", "broker:")) and m.destination.startswith(("fetcher:", "broker:"))
                   for m in sim.network.messages.values())


class _Producer:
    """acks=all sends as a Kafka producer makes them: per leader broker one request for all its partitions."""

    def __init__(self, sim: ReplicationModel, design: ReplicationDesign) -> None:
        self.sim, self.design = sim, design
        self.leaders = _leaders(sim, design.partitions)
        self.sends: list[_Send] = []
        self.errors: collections.Counter = collections.Counter()
        self.next_value = 0

    def send(self, broker_id: int) -> None:
        partitions = self.leaders[broker_id]
        batch = _Send(broker_id=broker_id, sent_units=self.sim.now_ms, batches=len(partitions))
        data = []
        for partition in partitions:
            values = [(f"{self.next_value + i:08d}".encode() * (self.design.record_bytes // 8 + 1))
                      [:self.design.record_bytes] for i in range(self.design.records_per_batch)]
            self.next_value += len(values)
            data.append(PartitionProduceData(index=partition, records=make_batch(values)))
        request = ProduceRequest(acks=-1, timeout_ms=PRODUCE_TIMEOUT_MS * UNITS_PER_MS,
                                 topic_data=(TopicProduceData(name=TOPIC, partition_data=tuple(data)),))
        self.sim._client_call(f"broker:{broker_id}", request, lambda response: self._answered(batch, response),
                              timeout_ms=(PRODUCE_TIMEOUT_MS + 5_000) * UNITS_PER_MS)
        batch.message_id = max(self.sim.network.messages)  # the request just posted: ids grow
        self.sends.append(batch)

    def _answered(self, batch: _Send, response) -> None:
        batch.answered_units = self.sim.now_ms
        if isinstance(response, ErrorCode):
            self.errors[response.name] += batch.batches
            return
        assert isinstance(response, ProduceResponse), response
        for topic in response.responses:
            for answer in topic.partition_responses:
                if answer.error_code == ErrorCode.NONE:
                    batch.acknowledged += 1
                else:
                    self.errors[ErrorCode(answer.error_code).name] += 1

    def outstanding(self, broker_id: int) -> int:
        return sum(1 for s in self.sends if s.broker_id == broker_id and s.answered_units is None)


def _run_rounds(sim: ReplicationModel, producer: _Producer, rounds: int) -> None:
    """Send ``rounds`` requests to every leader broker, ``max_in_flight`` at a time per broker, or
    one round at a time on an idle cluster (``idle_between_batches``)."""
    if producer.design.idle_between_batches:
        for _ in range(rounds):
            for broker_id in producer.leaders:
                producer.send(broker_id)
            sim.run_until(lambda: all(s.answered_units is not None for s in producer.sends),
                          limit_ms=ROUND_LIMIT_MS * UNITS_PER_MS, what="the round answered")
            sim.run_until(lambda: _settled(sim, producer.design.partitions), limit_ms=ROUND_LIMIT_MS * UNITS_PER_MS,
                          what="the round replicated")
        return
    remaining = dict.fromkeys(producer.leaders, rounds)

    def top_up() -> bool:
        for broker_id in producer.leaders:
            while remaining[broker_id] and producer.outstanding(broker_id) < producer.design.max_in_flight:
                remaining[broker_id] -= 1
                producer.send(broker_id)
        return not any(remaining.values()) and all(s.answered_units is not None for s in producer.sends)
    sim.run_until(top_up, limit_ms=ROUND_LIMIT_MS * UNITS_PER_MS * rounds, what="every produce answered")


def run_replication_model(design: ReplicationDesign, out: Callable[[str], None] | None = None) -> dict:
    """One run of the model (see the module docstring); returns its figures as a dict."""
    sim = ReplicationModel(design)
    assert sim.create_topic(TOPIC, partitions=design.partitions, replication_factor=design.replication_factor,
                            config={"min.insync.replicas": str(design.min_insync_replicas)}) == "NONE"
    settle_limit = ROUND_LIMIT_MS * UNITS_PER_MS
    sim.run_until(lambda: _settled(sim, design.partitions), limit_ms=settle_limit, what="every ISR full")
    producer = _Producer(sim, design)
    _run_rounds(sim, producer, 1)  # warm-up: fetch sessions and the followers' first high watermark
    sim.run_until(lambda: _settled(sim, design.partitions), limit_ms=settle_limit, what="the warm-up replicated")
    producer.sends.clear()
    producer.errors.clear()
    sim.tracing, started_units = True, sim.now_ms
    _run_rounds(sim, producer, design.batches)
    sim.run_until(lambda: _settled(sim, design.partitions), limit_ms=settle_limit, what="the batches replicated")
    sim.tracing = False
    return _figures(sim, producer, started_units)


def _figures(sim: ReplicationModel, producer: _Producer, started_units: int) -> dict:
    """The run's figures: ``messages`` and ``bytes`` ("Type request|response|event" -> what the
    produce requests caused), ``controller_messages`` (those of them to or from the controller or
    its send threads), ``background_messages`` (the rest sent meanwhile), ``acks`` ((hops, ms) per
    answered request) and ``ack_chains`` (each critical path -> how many answers took it)."""
    roots = {s.message_id for s in producer.sends}
    caused: set[int] = set()
    for message_id in sorted(sim.sent):  # a message is sent after the one that caused it
        if message_id in roots or sim.cause[message_id] in caused:
            caused.add(message_id)
    counts, sizes, background, controller = (collections.Counter() for _ in range(4))
    for message_id, message in sim.sent.items():
        row = f"{message.type_name} {'request' if message.kind == REQUEST else message.kind}"
        if message_id not in caused:
            background[row] += 1
            continue
        counts[row] += 1
        sizes[row] += message_bytes(message.payload)
        if any(name == CONTROLLER or name.startswith("channel:") for name in (message.source, message.destination)):
            controller[row] += 1
    acks, ack_chains = [], collections.Counter()
    by_call = {m.call_id: i for i, m in sim.sent.items() if m.kind == RESPONSE and m.type_name == "ProduceResponse"}
    for send in producer.sends:
        response_id = by_call.get(sim.sent[send.message_id].call_id)
        if response_id is None:  # not answered (a call that failed at once)
            continue
        # The critical path: the answer's chain from the first message sent once the request was.
        chain = [m for m in sim.chain(response_id) if m.sent_at_ms >= send.sent_units]
        acks.append((len(chain), (send.answered_units - send.sent_units) / UNITS_PER_MS))
        ack_chains[" > ".join(f"{m.type_name}({_role(m.source)}>{_role(m.destination)})" for m in chain)] += 1
    return {"design": asdict(sim.design), "acknowledged_batches": sum(s.acknowledged for s in producer.sends),
            "errors": dict(producer.errors), "simulated_ms": (sim.now_ms - started_units) / UNITS_PER_MS,
            "messages": dict(counts), "bytes": dict(sizes), "controller_messages": dict(controller),
            "background_messages": dict(background), "acks": acks, "ack_chains": dict(ack_chains)}


def _role(name: str) -> str:
    """A node's role on the chain: client, leader or follower broker, fetcher."""
    return name.split(":")[0]


def summary(figures: dict) -> dict:
    """Per acknowledged batch: messages and bytes by request type, hops and milliseconds to the answer."""
    batches = max(1, figures["acknowledged_batches"])
    by_type: dict[str, float] = collections.defaultdict(float)
    for row, count in figures["messages"].items():
        by_type[row] += count / batches
    hops = [h for h, _ in figures["acks"]]
    background = sum(figures["background_messages"].values())
    latencies = sorted(ms for _, ms in figures["acks"])
    return {
        "partitions": figures["design"]["partitions"],
        "messages_per_batch": round(sum(figures["messages"].values()) / batches, 2),
        # Everything sent while the run measured, what timers sent included (an expired fetch's answer).
        "all_messages_per_batch": round((sum(figures["messages"].values()) + background) / batches, 2),
        "bytes_per_batch": round(sum(figures["bytes"].values()) / batches),
        "by_type_per_batch": {k: round(v, 2) for k, v in sorted(by_type.items())},
        "hops_to_ack": None if not hops else round(sum(hops) / len(hops), 2),
        "hops_to_ack_max": None if not hops else max(hops),
        "ms_to_ack_mean": round(sum(latencies) / len(latencies), 2) if latencies else None,
        "ms_to_ack_max": latencies[-1] if latencies else None,
        "controller_messages_per_batch": round(sum(figures["controller_messages"].values()) / batches, 2),
        "background_per_simulated_s": round(background / max(figures["simulated_ms"], 1e-9) * 1000, 1),
        "errors": figures["errors"],
    }
