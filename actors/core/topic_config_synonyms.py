"""Every topic-level configuration key Kafka has, with the broker key that sets its default, and how
one topic's effective value of each is found: Kafka's ``LogConfig`` keys and
``LogConfig.TopicConfigSynonyms``.

Theory of operation. A topic's value for a key comes, in Kafka's order of precedence, from the
topic's own override (ConfigSource TOPIC_CONFIG, 1), from the broker's configuration under the
key's broker synonym (``segment.bytes`` <- ``log.segment.bytes``; STATIC_BROKER_CONFIG, 4), or from
the default (DEFAULT_CONFIG, 5); a dynamic value of the broker synonym, this broker's
(DYNAMIC_BROKER_CONFIG, 2) or every broker's (DYNAMIC_DEFAULT_BROKER_CONFIG, 3), ranks between the
topic's override and the broker's configuration (raykafka reports it; its brokers do not apply it
yet). ``resolve_topic_config`` answers, for every key, the value, its
source and the synonyms in precedence order (what DescribeConfigs lists with ``include_synonyms``),
as Kafka 2.4's ``AdminManager.createTopicConfigEntry`` does.

``TOPIC_CONFIGS`` is every key Kafka has, with its type and Kafka's default, for DescribeConfigs.
The keys raykafka honours (``config.TOPIC_CONFIG_SYNONYMS``) take their value and source from
``config.effective_topic_config``, which the brokers apply, so what is described is what is used
(raykafka's own broker defaults, such as ``message.max.bytes`` 1048588, and
``log.retention.hours`` scaled to ``retention.ms``, included).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from actors.core.config import (
    BROKER_DEFAULTS, STORED_ONLY_BROKER_SYNONYMS, TOPIC_CONFIG_SYNONYMS as HONOURED, effective_topic_config,
    synonym_value,
)

# Kafka's ConfigSource values (DescribeConfigsResponse).
SOURCE_TOPIC = 1  # TOPIC_CONFIG, "DYNAMIC_TOPIC_CONFIG" in the admin clients
SOURCE_DYNAMIC_BROKER = 2  # DYNAMIC_BROKER_CONFIG: set at runtime on this broker
SOURCE_DYNAMIC_DEFAULT_BROKER = 3  # DYNAMIC_DEFAULT_BROKER_CONFIG: set at runtime on every broker
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
# Kafka's ConfigType values (DescribeConfigs v3, KIP-569).
CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7, "CLASS": 8,
                "PASSWORD": 9}

LONG_MAX = str(2 ** 63 - 1)


@dataclass(frozen=True, slots=True)
class TopicConfigKey:
    name: str  # the topic-level key
    config_type: str  # Kafka's ConfigDef type, a key of CONFIG_TYPES
    default: str  # Kafka 2.4's default, as DescribeConfigs prints it
    broker_synonym: str | None  # the broker key that sets the default for every topic
    # False where Kafka's broker key has no default of its own (log.retention.ms falls back to
    # log.retention.hours): DescribeConfigs then lists no DEFAULT_CONFIG synonym for it.
    broker_synonym_has_default: bool = True


TOPIC_CONFIGS: dict[str, TopicConfigKey] = {key.name: key for key in (
    TopicConfigKey("cleanup.policy", "LIST", "delete", "log.cleanup.policy"),
    TopicConfigKey("compression.type", "STRING", "producer", "compression.type"),
    TopicConfigKey("delete.retention.ms", "LONG", "86400000", "log.cleaner.delete.retention.ms"),
    TopicConfigKey("file.delete.delay.ms", "LONG", "60000", "log.segment.delete.delay.ms"),
    TopicConfigKey("flush.messages", "LONG", LONG_MAX, "log.flush.interval.messages"),
    TopicConfigKey("flush.ms", "LONG", LONG_MAX, "log.flush.interval.ms", broker_synonym_has_default=False),
    TopicConfigKey("follower.replication.throttled.replicas", "LIST", "", None),
    TopicConfigKey("index.interval.bytes", "INT", "4096", "log.index.interval.bytes"),
    TopicConfigKey("leader.replication.throttled.replicas", "LIST", "", None),
    TopicConfigKey("max.compaction.lag.ms", "LONG", LONG_MAX, "log.cleaner.max.compaction.lag.ms"),
    TopicConfigKey("max.message.bytes", "INT", "1000012", "message.max.bytes"),
    TopicConfigKey("message.downconversion.enable", "BOOLEAN", "true", "log.message.downconversion.enable"),
    TopicConfigKey("message.format.version", "STRING", "2.4-IV1", "log.message.format.version"),
    TopicConfigKey("message.timestamp.difference.max.ms", "LONG", LONG_MAX,
                   "log.message.timestamp.difference.max.ms"),
    TopicConfigKey("message.timestamp.type", "STRING", "CreateTime", "log.message.timestamp.type"),
    TopicConfigKey("min.cleanable.dirty.ratio", "DOUBLE", "0.5", "log.cleaner.min.cleanable.ratio"),
    TopicConfigKey("min.compaction.lag.ms", "LONG", "0", "log.cleaner.min.compaction.lag.ms"),
    TopicConfigKey("min.insync.replicas", "INT", "1", "min.insync.replicas"),
    TopicConfigKey("preallocate", "BOOLEAN", "false", "log.preallocate"),
    TopicConfigKey("retention.bytes", "LONG", "-1", "log.retention.bytes"),
    TopicConfigKey("retention.ms", "LONG", "604800000", "log.retention.ms", broker_synonym_has_default=False),
    TopicConfigKey("segment.bytes", "INT", "1073741824", "log.segment.bytes"),
    TopicConfigKey("segment.index.bytes", "INT", "10485760", "log.index.size.max.bytes"),
    TopicConfigKey("segment.jitter.ms", "LONG", "0", "log.roll.jitter.ms", broker_synonym_has_default=False),
    TopicConfigKey("segment.ms", "LONG", "604800000", "log.roll.ms", broker_synonym_has_default=False),
    TopicConfigKey("unclean.leader.election.enable", "BOOLEAN", "false", "unclean.leader.election.enable"),
)}

# Topic key -> the broker key that sets its default (LogConfig.TopicConfigSynonyms), for every key.
BROKER_SYNONYMS: dict[str, str] = {
    key.name: key.broker_synonym for key in TOPIC_CONFIGS.values() if key.broker_synonym is not None}
_SOURCES = {"topic": SOURCE_TOPIC, "broker": SOURCE_STATIC_BROKER, "default": SOURCE_DEFAULT}


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True, slots=True)
class ResolvedConfig:
    name: str
    value: str | None
    source: int  # where ``value`` came from: the first synonym's source, else SOURCE_DEFAULT
    config_type: int
    synonyms: tuple[ConfigSynonym, ...]  # in precedence order, the topic's own first


def resolve_topic_config(topic_overrides: Mapping[str, str], *, broker_overrides: Mapping[str, str],
                         own_dynamic: Mapping[str, str] | None = None,
                         default_dynamic: Mapping[str, str] | None = None) -> list[ResolvedConfig]:
    """Every topic key, sorted, with its value for a topic whose overrides are ``topic_overrides``
    on a broker whose explicitly set keys are ``broker_overrides`` and whose dynamic broker keys
    are ``own_dynamic`` (set on this broker) and ``default_dynamic`` (set on every broker)."""
    effective = effective_topic_config(broker_overrides, topic_overrides)
    resolved = []
    for name in sorted(TOPIC_CONFIGS):
        key = TOPIC_CONFIGS[name]
        # A dynamic broker value of the broker synonym ranks above the broker's configuration, as in
        # Kafka's configSynonyms; raykafka stores it and reports it (its brokers do not apply it yet).
        dynamic = [] if key.broker_synonym is None else [
            ConfigSynonym(key.broker_synonym, str(layer[key.broker_synonym]), source)
            for layer, source in ((own_dynamic or {}, SOURCE_DYNAMIC_BROKER),
                                  (default_dynamic or {}, SOURCE_DYNAMIC_DEFAULT_BROKER))
            if key.broker_synonym in layer]
        if name in STORED_ONLY_BROKER_SYNONYMS:
            resolved.append(_with_dynamic(_resolve_stored_only(key, topic_overrides, broker_overrides), dynamic,
                                          name in topic_overrides))
            continue
        if name in HONOURED:
            broker_keys = HONOURED[name].broker_keys  # log.retention.ms, .minutes, .hours
        else:
            broker_keys = () if key.broker_synonym is None else (key.broker_synonym,)
        synonyms: list[ConfigSynonym] = []
        if name in topic_overrides:
            synonyms.append(ConfigSynonym(name, str(topic_overrides[name]), SOURCE_TOPIC))
        set_on_broker = next((n for n in broker_keys if n in broker_overrides), None)
        if set_on_broker is not None:
            synonyms.append(ConfigSynonym(set_on_broker, str(broker_overrides[set_on_broker]), SOURCE_STATIC_BROKER))
        # The broker synonym's default: raykafka's broker default where it has one, else Kafka's.
        default = BROKER_DEFAULTS.get(key.broker_synonym or "", key.default)
        if key.broker_synonym is not None and key.broker_synonym_has_default:
            synonyms.append(ConfigSynonym(key.broker_synonym, default, SOURCE_DEFAULT))
        if name in effective:
            value, source = effective[name].value, _SOURCES[effective[name].source]
        else:
            value = synonyms[0].value if synonyms else default
            source = synonyms[0].source if synonyms else SOURCE_DEFAULT
        resolved.append(_with_dynamic(ResolvedConfig(name=name, value=value, source=source,
                                                     config_type=CONFIG_TYPES[key.config_type],
                                                     synonyms=tuple(synonyms)), dynamic, name in topic_overrides))
    return resolved


def _with_dynamic(config: ResolvedConfig, dynamic: list[ConfigSynonym], overridden: bool) -> ResolvedConfig:
    """``config`` with the dynamic broker synonyms after the topic's own override, which alone
    outranks them; without an override the first of them gives the value and the source."""
    if not dynamic:
        return config
    head = config.synonyms[:1] if overridden else ()
    synonyms = (*head, *dynamic, *config.synonyms[len(head):])
    if overridden:
        return replace(config, synonyms=synonyms)
    return replace(config, value=dynamic[0].value, source=dynamic[0].source, synonyms=synonyms)


def _resolve_stored_only(key: TopicConfigKey, topic_overrides: Mapping[str, str],
                         broker_overrides: Mapping[str, str]) -> ResolvedConfig:
    """A key raykafka stores but does not apply, as Kafka's ``AdminManager.configSynonyms`` lists
    it: the broker keys of Kafka's synonym chain that are set (STATIC_BROKER_CONFIG), then those
    with a default (DEFAULT_CONFIG), dropped up to the first named as the topic key's synonym (so a
    key set only in hours lists none, as in Kafka), after the topic's own override."""
    chain = STORED_ONLY_BROKER_SYNONYMS[key.name]
    synonyms = [ConfigSynonym(n, str(broker_overrides[n]), SOURCE_STATIC_BROKER) for n, _ in chain
                if n in broker_overrides]
    synonyms += [ConfigSynonym(n, default, SOURCE_DEFAULT) for n, default in chain if default is not None]
    while synonyms and synonyms[0].name != chain[0][0]:
        synonyms.pop(0)
    set_on_broker = next((n for n, _ in chain if n in broker_overrides), None)
    if key.name in topic_overrides:
        value, source = str(topic_overrides[key.name]), SOURCE_TOPIC
        synonyms.insert(0, ConfigSynonym(key.name, value, SOURCE_TOPIC))
    elif set_on_broker is not None:
        value = synonym_value(set_on_broker, str(broker_overrides[set_on_broker]))
        source = synonyms[0].source if synonyms else SOURCE_DEFAULT
    else:
        value, source = key.default, SOURCE_DEFAULT
    return ResolvedConfig(name=key.name, value=value, source=source, config_type=CONFIG_TYPES[key.config_type],
                          synonyms=tuple(synonyms))


__all__ = ["CONFIG_TYPES", "SOURCE_DEFAULT", "SOURCE_DYNAMIC_BROKER", "SOURCE_DYNAMIC_DEFAULT_BROKER",
           "SOURCE_STATIC_BROKER", "SOURCE_TOPIC", "TOPIC_CONFIGS",
           "BROKER_SYNONYMS", "ConfigSynonym", "ResolvedConfig", "TopicConfigKey", "resolve_topic_config"]
