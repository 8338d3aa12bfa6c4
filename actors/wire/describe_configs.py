"""DescribeConfigs (API key 32), read-only: a topic's or a broker's configuration for admin tools.

A topic is described as Kafka 2.4's ``AdminManager.describeConfigs`` describes it: every topic
key Kafka has (``actors.core.topic_config_synonyms``), each with its value, where that value comes
from (``config_source``: the topic's override, the broker's configuration, or the default), and
``read_only=false`` (a topic's configs are changed with IncrementalAlterConfigs), with the
synonyms in precedence order when ``include_synonyms`` asks for them. A topic the broker's
metadata does not know is UNKNOWN_TOPIC_OR_PARTITION. A broker is described from its
configuration and its dynamic keys (``actors/core/broker_configs.py``), each value from the first
of, as Kafka ranks them: the broker's own dynamic value, the cluster-wide dynamic value, its
configuration, the default; a dynamic key is not read-only. ``configuration_keys`` narrows the
answer as in Kafka. Other resource types are INVALID_REQUEST.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.core.broker_configs import DEFAULT_ENTITY, DYNAMIC_BROKER_KEYS
from actors.core.errors import ErrorCode
from actors.core.topic_config_synonyms import (
    SOURCE_DEFAULT, SOURCE_STATIC_BROKER, SOURCE_TOPIC, ConfigSynonym, resolve_topic_config,
)

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
SOURCE_DYNAMIC_BROKER = 2  # Kafka's DYNAMIC_BROKER_CONFIG
SOURCE_DYNAMIC_DEFAULT_BROKER = 3  # DYNAMIC_DEFAULT_BROKER_CONFIG
__all__ = ["RESOURCE_BROKER", "RESOURCE_TOPIC", "SOURCE_DEFAULT", "SOURCE_STATIC_BROKER", "SOURCE_TOPIC",
           "describe_configs"]


def describe_configs(body: Any, *, broker_id: int, broker_config: Mapping[str, str],
                     broker_overrides: Mapping[str, str], topic_overrides: Mapping[str, Mapping[str, str]],
                     known_topics: frozenset[str],
                     broker_dynamic: Mapping[str, Mapping[str, str]] | None = None) -> dict:
    """The response as a dict for ``convert.to_kio``. ``broker_config`` is every key with its
    value, ``broker_overrides`` the keys set in the broker's configuration, ``topic_overrides``
    each topic's own settings, ``broker_dynamic`` the dynamic broker keys by broker resource name."""
    include_synonyms = bool(getattr(body, "include_synonyms", False))
    results = []
    for resource in body.resources:
        keys = None if resource.configuration_keys is None else set(resource.configuration_keys)
        name = str(resource.resource_name)
        entry = {"resource_type": int(resource.resource_type), "resource_name": name, "error_code": ErrorCode.NONE,
                 "error_message": None, "configs": []}
        if resource.resource_type == RESOURCE_TOPIC:
            if name not in known_topics:
                entry.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=f"unknown topic {name}")
            else:
                for config in resolve_topic_config(topic_overrides.get(name, {}), broker_overrides=broker_overrides):
                    entry["configs"].append(_config(
                        config.name, config.value, config.source, keys, read_only=False,
                        synonyms=config.synonyms if include_synonyms else (), config_type=config.config_type))
        elif resource.resource_type == RESOURCE_BROKER and name in ("", str(broker_id)):
            # The default entity (kafka-configs --entity-default) has no broker's own dynamic values.
            for key, value, source, synonyms in _broker_configs(broker_config, broker_overrides,
                                                               broker_dynamic or {}, name or None):
                entry["configs"].append(_config(key, value, source, keys, read_only=key not in DYNAMIC_BROKER_KEYS,
                                                synonyms=synonyms if include_synonyms else ()))
        else:
            entry.update(error_code=ErrorCode.INVALID_REQUEST,
                         error_message=f"resource type {resource.resource_type} {name!r} cannot be described here")
        entry["configs"] = [c for c in entry["configs"] if c is not None]
        results.append(entry)
    return {"results": results, "throttle_time_ms": 0}


def _broker_configs(broker_config, broker_overrides, broker_dynamic, broker_id: str | None):
    """(key, value, source, synonyms in precedence order) for every broker key, dynamic ones included."""
    layers = ((broker_dynamic.get(broker_id, {}) if broker_id is not None else {}, SOURCE_DYNAMIC_BROKER),
              (broker_dynamic.get(DEFAULT_ENTITY, {}), SOURCE_DYNAMIC_DEFAULT_BROKER),
              (broker_overrides, SOURCE_STATIC_BROKER))
    keys = set(broker_config) | {key for layer, _ in layers[:2] for key in layer}
    for key in sorted(keys):
        synonyms = [ConfigSynonym(key, str(layer[key]), source) for layer, source in layers if key in layer]
        # A key set in the configuration is reported with that one synonym, as before dynamic keys.
        if key not in broker_overrides:
            synonyms.append(ConfigSynonym(key, broker_config.get(key, DYNAMIC_BROKER_KEYS.get(key)), SOURCE_DEFAULT))
        yield key, synonyms[0].value, synonyms[0].source, tuple(synonyms)


def _config(key: str, value: str | None, source: int, keys: set[str] | None, *, read_only: bool,
            synonyms: tuple[ConfigSynonym, ...], config_type: int = 0) -> dict | None:
    if keys is not None and key not in keys:
        return None
    return {"name": key, "value": value, "read_only": read_only, "config_source": source, "is_sensitive": False,
            "is_default": source == SOURCE_DEFAULT, "config_type": config_type, "documentation": None,
            "synonyms": tuple({"name": s.name, "value": s.value, "source": s.source} for s in synonyms)}
