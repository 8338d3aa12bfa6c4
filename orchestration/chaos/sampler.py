"""Cluster invariants sampled during a run, written into the history as ``sample`` events.

Theory of operation. Every ``interval_s`` the ``Sampler`` takes the history's clock, asks every
broker for its hosted replicas (``BrokerActor.describe_partitions``) at once, then asks the
replicas it means to compare for batch digests (``BrokerActor.replica_digest``), and writes one
``sample`` event per partition and claimed leadership, stamped with the time taken before
collecting (so no sample is stamped later than the state it holds). ``orchestration.chaos.checker``
judges the samples; the sampler itself judges nothing but whether digests agree.

The logic is pure and lives in two functions, so it is tested without Ray:
- ``digest_requests(states, topics)`` says which digests a round needs: for each broker claiming
  leadership of a partition, its own and those of the ISR members it lists that answered, up to
  its high watermark (from ``high_watermark - digest_offsets_max`` when a window is set).
- ``build_samples(states, digests, topics)`` turns the brokers' answers into sample values.

What a sample says about a partition, from the brokers that answered:
- One sample per broker that claims leadership (``is_leader``), with its ``leader_epoch`` and its
  view of the ``isr``. Normally there is one; two claiming one epoch is what the checker reports
  as multiple-leaders-in-epoch, while a deposed leader still claiming an older epoch (it has not
  heard of the election yet) is not an anomaly, since the checker keys leadership by epoch.
- With no claimant, one sample with leader None, the highest ``leader_epoch`` seen, the ISR as the
  broker reporting that epoch sees it, and ``digests_agree_below_hw`` true (nothing is judged
  without a leader's high watermark).
- ``replicas``: LEO and HW of every answering broker that hosts the partition.
- ``digests_agree_below_hw``: the claimant and the ISR members it lists that answered (and gave a
  digest) hold the same batches below ``end = min(claimant's HW, each compared replica's LEO)``.
  Every replica stores the leader's batches byte for byte, so equal (base offset, last offset,
  leader epoch, CRC) rows mean equal data. Batches are compared whole: each digest is trimmed to
  batches ending below ``end``, and only the range every digest covers is compared (from the
  latest first batch to the earliest last batch), since a digest may start later (log start or
  window) or stop earlier (a batch straddling ``end``). Out-of-ISR replicas are not compared: they
  may hold a divergent tail until they truncate. A missing claimant digest judges nothing (true).

Brokers that are dead, restarting or too slow to answer within ``call_timeout_s`` are skipped; a
paused broker still answers, since ``describe_partitions`` does not wait on the pause.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from loguru import logger

from orchestration.history import HistoryWriter

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
# A round's digests cover at most this many offsets below each leader's HW, so a long run does not
# make every broker read and ship its whole log twice a second. ``None`` means the whole log.
DIGEST_OFFSETS_MAX = 20_000
# ``stop`` waits at most this long past one round's worst case for the thread to end.
STOP_SLACK_S = 5.0

# (topic, partition) -> broker id -> batch rows (base offset, last offset, leader epoch, CRC).
Digests = Mapping[tuple[str, int], Mapping[int, Iterable[Iterable[int]]]]


def _wanted(topic: str, topics: Iterable[str] | None) -> bool:
    return topic != CONSUMER_OFFSETS_TOPIC if topics is None else topic in topics


def _by_partition(states: Mapping[int, Iterable[Mapping[str, Any]]],
                  topics: Iterable[str] | None) -> dict[tuple[str, int], dict[int, Mapping[str, Any]]]:
    """(topic, partition) -> broker id -> that broker's view, for the chosen topics, sorted."""
    chosen = None if topics is None else frozenset(topics)
    found: dict[tuple[str, int], dict[int, Mapping[str, Any]]] = defaultdict(dict)
    for broker_id, replicas in states.items():
        for replica in replicas:
            if _wanted(replica["topic"], chosen):
                found[(replica["topic"], int(replica["partition"]))][int(broker_id)] = replica
    return {key: dict(sorted(views.items())) for key, views in sorted(found.items())}


def _compared(claimant: int, views: Mapping[int, Mapping[str, Any]]) -> list[int]:
    """The claimant, then the ISR members it lists that answered."""
    return [claimant] + sorted(({int(b) for b in views[claimant]["isr"]} & views.keys()) - {claimant})


def digest_requests(states: Mapping[int, Iterable[Mapping[str, Any]]], topics: Iterable[str] | None = None,
                    digest_offsets_max: int | None = DIGEST_OFFSETS_MAX) -> dict[tuple[str, int, int], tuple[int, int]]:
    """(topic, partition, broker id) -> (start offset, end offset) of each digest a round needs.

    One request per replica even when two brokers claim a partition: the widest range is asked
    for, and ``build_samples`` trims each comparison to its own claimant's high watermark.
    """
    assert digest_offsets_max is None or digest_offsets_max > 0, "a digest window must hold an offset"
    wanted: dict[tuple[str, int, int], tuple[int, int]] = {}
    for (topic, partition), views in _by_partition(states, topics).items():
        for claimant, view in views.items():
            end = int(view["high_watermark"])
            if not view["is_leader"] or end <= 0:
                continue  # no claim, or nothing committed to compare
            start = 0 if digest_offsets_max is None else max(0, end - digest_offsets_max)
            for broker_id in _compared(claimant, views):
                key = (topic, partition, broker_id)
                low, high = wanted.get(key, (start, end))
                wanted[key] = (min(low, start), max(high, end))
    return wanted


def digests_agree(digests: Iterable[Iterable[Iterable[int]]], end_offset: int) -> bool:
    """Whether the digests hold the same whole batches below ``end_offset``, over the range every
    one of them covers; digests that share no range agree vacuously."""
    trimmed = [[tuple(int(x) for x in row) for row in digest] for digest in digests]
    trimmed = [[row for row in digest if row[1] < end_offset] for digest in trimmed]
    if len(trimmed) < 2 or any(not digest for digest in trimmed):
        return True
    start = max(digest[0][0] for digest in trimmed)
    covered_end = min(digest[-1][1] + 1 for digest in trimmed)
    windows = [[row for row in digest if row[0] >= start and row[1] < covered_end] for digest in trimmed]
    return all(window == windows[0] for window in windows[1:])


def build_samples(states: Mapping[int, Iterable[Mapping[str, Any]]], digests: Digests,
                  topics: Iterable[str] | None = None) -> list[dict]:
    """Sample values (the keyword arguments of ``HistoryWriter.sample``) from the brokers' answers.

    ``states`` maps each broker that answered to its ``describe_partitions`` list; a broker that
    did not answer is simply absent. ``digests`` holds the digests that were obtained (see
    ``digest_requests``); a missing one leaves that replica out of the comparison. ``topics`` is a
    list of names, or None for every topic but ``__consumer_offsets``.
    """
    samples = []
    for (topic, partition), views in _by_partition(states, topics).items():
        replicas = {broker_id: {"log_end_offset": int(view["log_end_offset"]),
                                "high_watermark": int(view["high_watermark"])}
                    for broker_id, view in views.items()}
        partition_digests = digests.get((topic, partition), {})
        claimants = [broker_id for broker_id, view in views.items() if view["is_leader"]]
        for claimant in claimants:
            view = views[claimant]
            compared = [b for b in _compared(claimant, views) if b in partition_digests]
            agree = True
            if claimant in compared:
                end = min([int(view["high_watermark"])] + [replicas[b]["log_end_offset"] for b in compared])
                agree = digests_agree([partition_digests[b] for b in compared], end)
            samples.append({"topic": topic, "partition": partition, "leader": claimant,
                            "leader_epoch": int(view["leader_epoch"]), "isr": sorted(int(b) for b in view["isr"]),
                            "replicas": replicas, "digests_agree_below_hw": agree})
        if not claimants:
            newest = max(views, key=lambda b: (int(views[b]["leader_epoch"]), -b))
            samples.append({"topic": topic, "partition": partition, "leader": None,
                            "leader_epoch": int(views[newest]["leader_epoch"]),
                            "isr": sorted(int(b) for b in views[newest]["isr"]),
                            "replicas": replicas, "digests_agree_below_hw": True})
    return samples


class Sampler:
    """Samples the cluster into ``history`` every ``interval_s`` on a daemon thread.

    ``start``/``stop`` (or ``with Sampler(...)``) run the thread; ``sample_once`` takes one
    sample synchronously and returns the events it wrote. Counters: ``rounds``,
    ``samples_written`` and ``errors`` (rounds that raised; the thread logs them and goes on).
    """

    def __init__(self, cluster, history: HistoryWriter, topics: Iterable[str] | None = None,
                 interval_s: float = 0.5, call_timeout_s: float = 2.0,
                 digest_offsets_max: int | None = DIGEST_OFFSETS_MAX) -> None:
        assert interval_s > 0 and call_timeout_s > 0, "interval and call timeout must be positive"
        self.cluster = cluster
        self.history = history
        self.topics = None if topics is None else list(topics)
        # Topics whose replicas are not compared by digest: a compacted topic's replicas are each
        # cleaned by their own broker's log cleaner, at their own times, so their batches below
        # the HW legitimately differ (the checker's latest-value-per-key rule judges them instead).
        self.undigested_topics: set[str] = set()
        self.interval_s = interval_s
        self.call_timeout_s = call_timeout_s
        self.digest_offsets_max = digest_offsets_max
        self.rounds = 0
        self.samples_written = 0
        self.errors = 0
        self._round_lock = threading.Lock()  # one round at a time: the thread's and sample_once's
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------------------- one round
    def _gather(self, calls: Mapping[Any, Any]) -> dict[Any, Any]:
        """Results of the object refs in ``calls`` that answered within ``call_timeout_s``;
        failed and late calls are left out (a late one is abandoned, not cancelled)."""
        import ray

        if not calls:
            return {}
        ready, _ = ray.wait(list(calls.values()), num_returns=len(calls), timeout=self.call_timeout_s)
        ready_set = set(ready)
        results = {}
        for key, ref in calls.items():
            if ref not in ready_set:
                continue
            try:
                results[key] = ray.get(ref, timeout=0)
            except ray.exceptions.RayError as exc:  # a dead or restarting actor, or a failed call
                logger.debug("sampler: {} did not answer: {!r}", key, exc)
        return results

    def _describe_all(self) -> dict[int, list[dict]]:
        calls = {}
        for broker_id in self.cluster.broker_ids:
            try:
                calls[broker_id] = self.cluster.broker(broker_id).describe_partitions.remote()
            except Exception as exc:  # noqa: BLE001 (no handle, or the actor is gone for good: skip it)
                logger.debug("sampler: cannot call broker {}: {!r}", broker_id, exc)
        return self._gather(calls)

    def _digests(self, wanted: Mapping[tuple[str, int, int], tuple[int, int]]) -> dict:
        calls = {}
        for (topic, partition, broker_id), (start, end) in wanted.items():
            try:
                calls[(topic, partition, broker_id)] = self.cluster.broker(broker_id).replica_digest.remote(
                    topic, partition, end, start_offset=start)
            except Exception as exc:  # noqa: BLE001 (as for describe: skip the broker)
                logger.debug("sampler: cannot ask broker {} for a digest: {!r}", broker_id, exc)
        answered = self._gather(calls)
        digests: dict[tuple[str, int], dict[int, list]] = defaultdict(dict)
        for (topic, partition, broker_id), digest in answered.items():
            digests[(topic, partition)][broker_id] = digest
        return digests

    def sample_once(self, full_digests: bool = False) -> list[dict]:
        """Takes one sample of every chosen partition and returns the events written.
        ``full_digests`` compares whole logs below the HW (for a run's final sample) instead of
        the last ``digest_offsets_max`` offsets. Unreachable brokers are skipped, not errors."""
        with self._round_lock:
            sampled_at = self.history.now()  # before collecting: no later than any state we see
            states = self._describe_all()
            window = None if full_digests else self.digest_offsets_max
            wanted = digest_requests(states, self.topics, window)
            digests = self._digests({key: span for key, span in wanted.items() if key[0] not in self.undigested_topics})
            events = [self.history.sample(**value, time=sampled_at)
                      for value in build_samples(states, digests, self.topics)]
            self.rounds += 1
            self.samples_written += len(events)
            return events

    # ------------------------------------------------------------------------------- thread
    def _run(self) -> None:
        next_round = time.monotonic()
        while not self._stopping.is_set():
            try:
                self.sample_once()
            except Exception as exc:  # noqa: BLE001 (the thread never dies of a bad round)
                self.errors += 1
                logger.warning("sampler round failed ({} so far): {!r}", self.errors, exc)
            # Fixed-rate rounds; a round longer than the interval is followed at once, not queued.
            next_round = max(next_round + self.interval_s, time.monotonic())
            self._stopping.wait(max(0.0, next_round - time.monotonic()))

    def start(self) -> Sampler:
        assert self._thread is None, "a sampler starts once"
        self._thread = threading.Thread(target=self._run, name="raykafka-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops the thread and waits for its round to end (bounded: two call timeouts plus slack;
        the thread is a daemon, so one stuck past that does not hold the process)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.call_timeout_s + STOP_SLACK_S)
            if self._thread.is_alive():
                logger.warning("sampler thread still running after stop")

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
