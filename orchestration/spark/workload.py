"""Workload files: OpenMessaging Benchmark's workload YAML plus raykafka's own keys.

Theory of operation. ``load_workload(path)`` reads a YAML mapping and ``parse_workload`` checks it
key by key into a frozen ``Workload``; any problem raises ``WorkloadError`` naming the file, the key
and the allowed values. Nothing here touches Ray or Spark.

OpenMessaging Benchmark's keys (same names, same meaning): ``name``, ``topics``,
``partitionsPerTopic``, ``messageSize`` (bytes per record value), ``keyDistributor`` (``NO_KEY``,
``KEY_ROUND_ROBIN``, ``RANDOM_NANO``), ``producersPerTopic``, ``producerRate`` (records per second
for the whole workload; 0 means as fast as the producers go), ``subscriptionsPerTopic`` (consumer
groups per topic), ``consumerPerSubscription``, ``testDurationMinutes``. OMB keys raykafka accepts
and ignores: ``payloadFile``, ``consumerBacklogSizeGB``, ``warmupDurationMinutes``,
``randomBytesRatio``, ``randomizedPayloadPoolSize``.

raykafka's own: ``recordCount`` (records for the whole workload; give it or
``testDurationMinutes``, not both), ``brokers``, ``replicationFactor``, ``acks``,
``min.insync.replicas``, ``brokerConfig``, ``topicConfig``, ``producerConfig`` and
``consumerConfig`` (Kafka's keys, checked as the brokers and raykafka's clients check them: an
unknown key is an error naming it; ``producerConfig`` is librdkafka's to check when ``client`` is
``confluent-kafka``, ``consumerConfig`` when ``consumerClient`` is), ``consumeTimeoutSeconds`` (how long the consume job may take to
read every acknowledged record), and ``faults``: a list of steps in the chaos schedule format
(``orchestration.chaos.schedule``: ``at`` seconds since the load started or ``after_acks``, ``do``,
``target``, ``role``, ``restart``, ``wait_for``, ...), aimed at partition 0 of the first topic;
``client``: the load job's producers, ``raykafka`` (its Python API, the default) or
``confluent-kafka`` (librdkafka over Kafka's wire protocol, to the brokers' listeners);
``consumerClient``: the consume job's consumers, the same two (default ``raykafka``);
``job``: ``load-consume`` (the default: the load job, the consume job, the checker) or
``streaming-aggregate`` (``orchestration.spark.streaming``: a Structured Streaming job on Spark's
own Kafka source and sink keeps a count and sum per key of the first topic in ``<topic>-totals``
while the faults run, and the summary checks them against the input).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.core.errors import KafkaProtocolError
from actors.core.topic_configs import check_broker_config, validate_topic_config
from orchestration.clients.consumer_config import CONSUMER_KEYS
from orchestration.clients.producer_config import PRODUCER_KEYS
from orchestration.errors import KafkaError

KEY_DISTRIBUTORS = ("NO_KEY", "KEY_ROUND_ROBIN", "RANDOM_NANO")
ACKS = ("0", "1", "all", "-1")
CLIENTS = ("raykafka", "confluent-kafka")
JOBS = ("load-consume", "streaming-aggregate")
OMB_IGNORED = ("payloadFile", "consumerBacklogSizeGB", "warmupDurationMinutes", "randomBytesRatio",
               "randomizedPayloadPoolSize")
# A record count or a duration above these is a typo on a laptop-sized cluster, not a plan.
RECORD_COUNT_MAX = 100_000_000
DURATION_MINUTES_MAX = 24 * 60
MESSAGE_SIZE_MAX = 1 << 20


class WorkloadError(ValueError):
    """A workload file that cannot run; the message names the key and what it may be."""


@dataclass(frozen=True)
class Workload:
    name: str
    topics: int = 1
    partitions_per_topic: int = 1
    message_size: int = 1024
    key_distributor: str = "NO_KEY"
    producers_per_topic: int = 1
    producer_rate: float = 0.0
    subscriptions_per_topic: int = 1
    consumer_per_subscription: int = 1
    test_duration_minutes: float | None = None
    record_count: int | None = None
    brokers: int = 3
    replication_factor: int = 3
    acks: str = "all"
    min_insync_replicas: int = 2
    broker_config: dict[str, str] = field(default_factory=dict)
    topic_config: dict[str, str] = field(default_factory=dict)
    producer_config: dict[str, str] = field(default_factory=dict)
    consumer_config: dict[str, str] = field(default_factory=dict)
    consume_timeout_seconds: float = 120.0
    faults: tuple[dict, ...] = ()
    client: str = "raykafka"
    consumer_client: str = "raykafka"
    job: str = "load-consume"

    @property
    def producers(self) -> int:
        return self.topics * self.producers_per_topic

    @property
    def consumers(self) -> int:
        return self.topics * self.subscriptions_per_topic * self.consumer_per_subscription

    @property
    def duration_s(self) -> float | None:
        return None if self.test_duration_minutes is None else self.test_duration_minutes * 60

    def topic_names(self) -> list[str]:
        slug = "".join(c if c.isalnum() else "-" for c in self.name.lower()).strip("-") or "load"
        return [f"{slug}-{i}" for i in range(self.topics)]

    def records_per_producer(self) -> list[int] | None:
        """With ``recordCount``: each producer's share (the first ones take the remainder)."""
        if self.record_count is None:
            return None
        share, extra = divmod(self.record_count, self.producers)
        return [share + (1 if i < extra else 0) for i in range(self.producers)]

    def rate_per_producer(self) -> float:
        return self.producer_rate / self.producers if self.producer_rate else 0.0


# key in the file -> (field, kind, lower bound)
_NUMBERS = {
    "topics": ("topics", int, 1), "partitionsPerTopic": ("partitions_per_topic", int, 1),
    "messageSize": ("message_size", int, 1), "producersPerTopic": ("producers_per_topic", int, 1),
    "producerRate": ("producer_rate", float, 0), "subscriptionsPerTopic": ("subscriptions_per_topic", int, 0),
    "consumerPerSubscription": ("consumer_per_subscription", int, 1),
    "testDurationMinutes": ("test_duration_minutes", float, 0), "recordCount": ("record_count", int, 1),
    "brokers": ("brokers", int, 1), "replicationFactor": ("replication_factor", int, 1),
    "min.insync.replicas": ("min_insync_replicas", int, 1),
    "consumeTimeoutSeconds": ("consume_timeout_seconds", float, 1),
}
_MAPPINGS = {"brokerConfig": "broker_config", "topicConfig": "topic_config", "producerConfig": "producer_config",
             "consumerConfig": "consumer_config"}
ALLOWED_KEYS = ("name", "keyDistributor", "acks", "faults", "client", "consumerClient", "job", *_NUMBERS, *_MAPPINGS,
                *OMB_IGNORED)


def load_workload(path: str | Path) -> Workload:
    import yaml
    path = Path(path)
    try:
        spec = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise WorkloadError(f"{path}: {exc}") from exc
    return parse_workload(spec, where=str(path))


def _number(where: str, key: str, value: Any, kind: type, lowest: float):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
        raise WorkloadError(f"{where}: '{key}' must be {'an integer' if kind is int else 'a number'} >= {lowest}, "
                            f"not {value!r}")
    if value < lowest:
        raise WorkloadError(f"{where}: '{key}' must be >= {lowest}, not {value!r}")
    return kind(value)


def _mapping(where: str, key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise WorkloadError(f"{where}: '{key}' must be a mapping of Kafka config keys to values, not {value!r}")
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


def _faults(where: str, value: Any) -> tuple[dict, ...]:
    from orchestration.chaos.schedule import VERBS, WAITS
    if not isinstance(value, list):
        raise WorkloadError(f"{where}: 'faults' must be a list of steps (chaos schedule format), not {value!r}")
    for index, step in enumerate(value, start=1):
        here = f"{where}: faults step {index}"
        if not isinstance(step, dict):
            raise WorkloadError(f"{here}: a step is a mapping with 'do', 'at' or 'after_acks', 'target', ...")
        if step.get("do") not in VERBS:
            raise WorkloadError(f"{here}: 'do' must be one of {', '.join(VERBS)}, not {step.get('do')!r}")
        if step.get("wait_for", "none") not in WAITS:
            raise WorkloadError(f"{here}: 'wait_for' must be one of {', '.join(WAITS)}, not {step.get('wait_for')!r}")
        if ("at" in step) == ("after_acks" in step):
            raise WorkloadError(f"{here}: give exactly one of 'at' (seconds after the load starts) or 'after_acks'")
        trigger = "at" if "at" in step else "after_acks"
        _number(here, trigger, step[trigger], float if trigger == "at" else int, 0)
    return tuple(dict(step) for step in value)


def parse_workload(spec: Any, where: str = "workload") -> Workload:
    """A checked ``Workload`` from the mapping a workload file holds."""
    if not isinstance(spec, dict):
        raise WorkloadError(f"{where}: a workload is a YAML mapping of keys ({', '.join(ALLOWED_KEYS)})")
    unknown = sorted(set(map(str, spec)) - set(ALLOWED_KEYS))
    if unknown:
        raise WorkloadError(f"{where}: unknown key '{unknown[0]}'; allowed keys: {', '.join(ALLOWED_KEYS)}")
    if not isinstance(spec.get("name"), str) or not spec["name"].strip():
        raise WorkloadError(f"{where}: 'name' must be a non-empty string")
    values: dict[str, Any] = {"name": spec["name"].strip()}
    for key, (name, kind, lowest) in _NUMBERS.items():
        if key in spec:
            values[name] = _number(where, key, spec[key], kind, lowest)
    for key, name in _MAPPINGS.items():
        if key in spec:
            values[name] = _mapping(where, key, spec[key])
    if "keyDistributor" in spec:
        if spec["keyDistributor"] not in KEY_DISTRIBUTORS:
            raise WorkloadError(f"{where}: 'keyDistributor' must be one of {', '.join(KEY_DISTRIBUTORS)}, "
                                f"not {spec['keyDistributor']!r}")
        values["key_distributor"] = spec["keyDistributor"]
    if "acks" in spec:
        acks = str(spec["acks"]).lower()
        if acks not in ACKS:
            raise WorkloadError(f"{where}: 'acks' must be one of {', '.join(ACKS)}, not {spec['acks']!r}")
        values["acks"] = "all" if acks == "-1" else acks
    if "faults" in spec:
        values["faults"] = _faults(where, spec["faults"])
    for key, name in (("client", "client"), ("consumerClient", "consumer_client")):
        if key in spec:
            if spec[key] not in CLIENTS:
                raise WorkloadError(f"{where}: '{key}' must be one of {', '.join(CLIENTS)}, not {spec[key]!r}")
            values[name] = spec[key]
    if "job" in spec:
        if spec["job"] not in JOBS:
            raise WorkloadError(f"{where}: 'job' must be one of {', '.join(JOBS)}, not {spec['job']!r}")
        values["job"] = spec["job"]
    workload = Workload(**values)
    _check_together(where, workload)
    return workload


def _check_together(where: str, workload: Workload) -> None:
    if (workload.test_duration_minutes is None) == (workload.record_count is None):
        raise WorkloadError(f"{where}: give exactly one of 'testDurationMinutes' or 'recordCount'")
    if workload.record_count is not None and workload.record_count > RECORD_COUNT_MAX:
        raise WorkloadError(f"{where}: 'recordCount' must be <= {RECORD_COUNT_MAX}")
    if workload.test_duration_minutes is not None and not 0 < workload.test_duration_minutes <= DURATION_MINUTES_MAX:
        raise WorkloadError(f"{where}: 'testDurationMinutes' must be > 0 and <= {DURATION_MINUTES_MAX}")
    if workload.message_size > MESSAGE_SIZE_MAX:
        raise WorkloadError(f"{where}: 'messageSize' must be <= {MESSAGE_SIZE_MAX} bytes")
    if workload.replication_factor > workload.brokers:
        raise WorkloadError(f"{where}: 'replicationFactor' ({workload.replication_factor}) must be <= 'brokers' "
                            f"({workload.brokers})")
    if workload.min_insync_replicas > workload.replication_factor:
        raise WorkloadError(f"{where}: 'min.insync.replicas' ({workload.min_insync_replicas}) must be <= "
                            f"'replicationFactor' ({workload.replication_factor})")
    if workload.record_count is not None and workload.record_count < workload.producers:
        raise WorkloadError(f"{where}: 'recordCount' must be at least the number of producers ({workload.producers})")
    if "acks" in workload.producer_config:
        raise WorkloadError(f"{where}: set 'acks' at the top level, not in 'producerConfig'")
    _check_kafka_configs(where, workload)


def _check_kafka_configs(where: str, workload: Workload) -> None:
    """Each Kafka config mapping against the keys its reader knows, as a cluster or client would."""
    checks = [("brokerConfig", check_broker_config, workload.broker_config),
              ("topicConfig", validate_topic_config, workload.topic_config)]
    if workload.consumer_client == "raykafka":
        checks.append(("consumerConfig", CONSUMER_KEYS.settings, workload.consumer_config))
    if workload.client == "raykafka":
        checks.append(("producerConfig", PRODUCER_KEYS.settings, workload.producer_config))
    for key, check, config in checks:
        try:
            check(config)
        except (KafkaProtocolError, KafkaError) as exc:
            raise WorkloadError(f"{where}: '{key}': {exc.message}") from None
