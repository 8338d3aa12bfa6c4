"""DescribeConfigs (API key 32), read-only: a topic's or a broker's configuration for admin tools.

A topic is described as Kafka 2.4's ``AdminManager.describeConfigs`` describes it: every topic
key Kafka has (``actors.core.topic_config_synonyms``), each with its value, where that value comes
from (``config_source``: the topic's override, the broker's configuration, or the default), and
``read_only=false`` (a topic's configs are changed with IncrementalAlterConfigs), with the
synonyms in precedence order when ``include_synonyms`` asks for them (the broker synonym's dynamic
values, this broker's and the cluster-wide one, rank above the broker's configuration). A topic the
broker's metadata does not know is UNKNOWN_TOPIC_OR_PARTITION. A broker is described with every
broker config Kafka 2.4 defines and raykafka's own (``actors/core/broker_config_entries.py``). ``configuration_keys`` narrows the
answer as in Kafka. Other resource types are INVALID_REQUEST.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.core.broker_config_entries import describe_broker
from actors.core.broker_configs import DEFAULT_ENTITY
from actors.core.errors import ErrorCode
from actors.core.topic_config_synonyms import (
    SOURCE_DEFAULT, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_STATIC_BROKER, SOURCE_TOPIC,
    ConfigSynonym, resolve_topic_config,
)

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
__all__ = ["RESOURCE_BROKER", "RESOURCE_TOPIC", "SOURCE_DEFAULT", "SOURCE_DYNAMIC_BROKER", "SOURCE_DYNAMIC_DEFAULT_BROKER",
           "SOURCE_STATIC_BROKER", "SOURCE_TOPIC",
           "describe_configs"]


def describe_configs(body: Any, *, broker_id: int, broker_overrides: Mapping[str, str],
                     topic_overrides: Mapping[str, Mapping[str, str]], known_topics: frozenset[str],
                     broker_dynamic: Mapping[str, Mapping[str, str]] | None = None) -> dict:
    """The response as a dict for ``convert.to_kio``. ``broker_overrides`` are the keys set in the
    broker's configuration, ``topic_overrides`` each topic's own settings, ``broker_dynamic`` the
    dynamic broker keys by broker resource name."""
    include_synonyms = bool(getattr(body, "include_synonyms", False))
    broker_dynamic = broker_dynamic or {}
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
                for config in resolve_topic_config(topic_overrides.get(name, {}), broker_overrides=broker_overrides,
                                                   own_dynamic=broker_dynamic.get(str(broker_id), {}),
                                                   default_dynamic=broker_dynamic.get(DEFAULT_ENTITY, {})):
                    entry["configs"].append(_config(
                        config.name, config.value, config.source, keys, read_only=False,
                        synonyms=config.synonyms if include_synonyms else (), config_type=config.config_type))
        elif resource.resource_type == RESOURCE_BROKER and name in ("", str(broker_id)):
            for config in describe_broker(name, broker_overrides=broker_overrides, broker_dynamic=broker_dynamic,
                                          facts={"broker.id": str(broker_id)}):
                entry["configs"].append(_config(
                    config.name, config.value, config.source, keys, read_only=config.read_only,
                    synonyms=config.synonyms if include_synonyms else (), config_type=config.config_type,
                    is_sensitive=config.is_sensitive))
        else:
            entry.update(error_code=ErrorCode.INVALID_REQUEST,
                         error_message=f"resource type {resource.resource_type} {name!r} cannot be described here")
        entry["configs"] = [c for c in entry["configs"] if c is not None]
        results.append(entry)
    return {"results": results, "throttle_time_ms": 0}


def _config(key: str, value: str | None, source: int, keys: set[str] | None, *, read_only: bool,
            synonyms: tuple[ConfigSynonym, ...], config_type: int = 0, is_sensitive: bool = False) -> dict | None:
    if keys is not None and key not in keys:
        return None
    return {"name": key, "value": value, "read_only": read_only, "config_source": source, "is_sensitive": is_sensitive,
            "is_default": source == SOURCE_DEFAULT, "config_type": config_type, "documentation": None,
            "synonyms": tuple({"name": s.name, "value": s.value, "source": s.source} for s in synonyms)}
