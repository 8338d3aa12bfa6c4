"""What DescribeConfigs says about a broker resource: every broker config Kafka 2.4 defines
(``kafka_broker_config_defs``), raykafka's own keys and the dynamic keys raykafka stores, each with
its value, source, sensitivity and synonyms, as Kafka 2.4's ``AdminManager.createBrokerConfigEntry``
and ``configSynonyms`` build them.

Theory of operation. A key's synonyms are its broker synonym chain (log.retention.ms,
log.retention.minutes, log.retention.hours) looked up in four layers in Kafka's order of precedence:
this broker's dynamic values (DYNAMIC_BROKER_CONFIG), the cluster-wide dynamic values
(DYNAMIC_DEFAULT_BROKER_CONFIG), the broker's configuration (STATIC_BROKER_CONFIG) and the
defaults (DEFAULT_CONFIG: raykafka's own default for a key it applies, else Kafka 2.4's; a key
with no default has no such synonym); then, as in Kafka, the synonyms before the first one named
as the key itself are dropped (log.retention.ms set only in hours lists none). The value and
source are the first synonym's, else the key's default with DEFAULT_CONFIG. A PASSWORD key is
sensitive: its value and its synonyms' values are null. The cluster-wide resource (the empty name,
kafka-configs --entity-default) lists, as Kafka does, only the keys set cluster-wide, each with
its DYNAMIC_DEFAULT_BROKER_CONFIG synonyms. A key is read-only unless raykafka can change it
(``broker_configs.DYNAMIC_BROKER_KEYS``): Kafka's other dynamic keys are refused by its
IncrementalAlterConfigs, so it does not call them writable.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from actors.core.broker_configs import DEFAULT_ENTITY, DYNAMIC_BROKER_KEYS
from actors.core.config import BROKER_DEFAULTS
from actors.core.kafka_broker_config_defs import BROKER_CONFIG_DEFS
from actors.core.topic_config_synonyms import (
    CONFIG_TYPES, SOURCE_DEFAULT, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_STATIC_BROKER,
    ConfigSynonym,
)

# Every key's default as DescribeConfigs reports it: Kafka 2.4's, the dynamic keys' (the replication
# throttles are not in Kafka 2.4's KafkaConfig), then raykafka's own where it applies the key.
DEFAULTS: dict[str, str] = {
    **{name: d.default for name, d in BROKER_CONFIG_DEFS.items() if d.default is not None},
    **{name: default for name, default in DYNAMIC_BROKER_KEYS.items() if default is not None},
    **BROKER_DEFAULTS,
}


@dataclass(frozen=True, slots=True)
class BrokerConfigEntry:
    name: str
    value: str | None  # None for a sensitive key, and for a key with neither a value nor a default
    source: int  # the first synonym's source, else SOURCE_DEFAULT
    read_only: bool
    is_sensitive: bool
    config_type: int  # Kafka's ConfigType (DescribeConfigs v3+), 0 when unknown
    synonyms: tuple[ConfigSynonym, ...]  # in precedence order


def broker_synonyms(name: str) -> tuple[str, ...]:
    """Kafka's broker synonym chain of ``name`` (itself alone for a key Kafka 2.4 does not define)."""
    known = BROKER_CONFIG_DEFS.get(name)
    return known.synonyms if known is not None else (name,)


def config_synonyms(name: str, *, own_dynamic: Mapping[str, str], default_dynamic: Mapping[str, str],
                    broker_overrides: Mapping[str, str], sensitive: bool = False) -> list[ConfigSynonym]:
    """The synonyms of broker key ``name`` in precedence order (Kafka's ``AdminManager.configSynonyms``)."""
    chain = broker_synonyms(name)
    found = [ConfigSynonym(key, None if sensitive else str(layer[key]), source)
             for layer, source in ((own_dynamic, SOURCE_DYNAMIC_BROKER), (default_dynamic, SOURCE_DYNAMIC_DEFAULT_BROKER),
                                   (broker_overrides, SOURCE_STATIC_BROKER), (DEFAULTS, SOURCE_DEFAULT))
             for key in chain if layer.get(key) is not None]
    while found and found[0].name != name:
        found.pop(0)
    return found


def _type_of(name: str) -> str | None:
    known = BROKER_CONFIG_DEFS.get(name)
    if known is not None:
        return known.config_type
    return "LONG" if name in DYNAMIC_BROKER_KEYS else None


def describe_broker(name: str, *, broker_overrides: Mapping[str, str],
                    broker_dynamic: Mapping[str, Mapping[str, str]],
                    facts: Mapping[str, str] | None = None) -> list[BrokerConfigEntry]:
    """Every entry of broker resource ``name`` (this broker's id, or the empty name for the
    cluster-wide one), sorted by key. ``broker_overrides`` are the keys set in the broker's
    configuration, ``broker_dynamic`` the stored dynamic keys by resource name, ``facts`` values the
    broker knows of itself that its configuration does not carry (its ``broker.id``, which a Kafka
    broker has in its configuration): they are described as configured, STATIC_BROKER_CONFIG."""
    default_dynamic = broker_dynamic.get(DEFAULT_ENTITY, {})
    if name == DEFAULT_ENTITY:
        return [_entry(key, default_dynamic[key], [s for s in _synonyms(key, {}, default_dynamic, broker_overrides)
                                                   if s.source == SOURCE_DYNAMIC_DEFAULT_BROKER])
                for key in sorted(default_dynamic)]
    own_dynamic = broker_dynamic.get(name, {})
    configured = {**(facts or {}), **broker_overrides}
    keys: Iterable[str] = sorted(set(BROKER_CONFIG_DEFS) | set(DEFAULTS) | set(configured) | set(own_dynamic)
                                 | set(default_dynamic))
    entries = []
    for key in keys:
        synonyms = _synonyms(key, own_dynamic, default_dynamic, configured)
        entries.append(_entry(key, synonyms[0].value if synonyms else DEFAULTS.get(key), synonyms))
    return entries


def _synonyms(key, own_dynamic, default_dynamic, broker_overrides) -> list[ConfigSynonym]:
    return config_synonyms(key, own_dynamic=own_dynamic, default_dynamic=default_dynamic,
                           broker_overrides=broker_overrides, sensitive=_type_of(key) == "PASSWORD")


def _entry(key: str, value: str | None, synonyms: list[ConfigSynonym]) -> BrokerConfigEntry:
    config_type = _type_of(key)
    sensitive = config_type == "PASSWORD"
    return BrokerConfigEntry(
        name=key, value=None if sensitive else value, source=synonyms[0].source if synonyms else SOURCE_DEFAULT,
        read_only=key not in DYNAMIC_BROKER_KEYS, is_sensitive=sensitive,
        config_type=CONFIG_TYPES.get(config_type or "", 0), synonyms=tuple(synonyms))


__all__ = ["DEFAULTS", "BrokerConfigEntry", "broker_synonyms", "config_synonyms", "describe_broker"]
