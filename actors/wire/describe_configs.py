"""DescribeConfigs (API key 32), read-only: a topic's or a broker's configuration for admin tools.

A topic is described with the keys raykafka honours, each with the topic's override, the broker
key that sets its default (``log.segment.bytes`` for ``segment.bytes``), or Kafka's default
(``config_source`` says which, with Kafka's numbers); a topic the broker's metadata does not know
is UNKNOWN_TOPIC_OR_PARTITION. A broker is described from its configuration.
``configuration_keys`` narrows the answer as in Kafka. Other resource types are INVALID_REQUEST.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.core.config import effective_topic_config
from actors.core.errors import ErrorCode

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
# Kafka's ConfigSource values.
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
TOPIC_KEYS = ("cleanup.policy", "max.message.bytes", "min.insync.replicas", "segment.bytes",
              "unclean.leader.election.enable")
_SOURCES = {"topic": SOURCE_DYNAMIC_TOPIC, "broker": SOURCE_STATIC_BROKER, "default": SOURCE_DEFAULT}


def describe_configs(body: Any, *, broker_id: int, broker_config: Mapping[str, str],
                     broker_overrides: Mapping[str, str], topic_overrides: Mapping[str, Mapping[str, str]],
                     known_topics: frozenset[str]) -> dict:
    """The response as a dict for ``convert.to_kio``. ``broker_config`` is every key with its
    value, ``broker_overrides`` the keys set in the broker's configuration, ``topic_overrides``
    each topic's own settings."""
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
                effective = effective_topic_config(broker_overrides, topic_overrides.get(name, {}))
                for key in TOPIC_KEYS:
                    value, source = effective[key].value, _SOURCES[effective[key].source]
                    entry["configs"].append(_config(key, value, source, keys))
        elif resource.resource_type == RESOURCE_BROKER and name in ("", str(broker_id)):
            for key in sorted(broker_config):
                source = SOURCE_STATIC_BROKER if key in broker_overrides else SOURCE_DEFAULT
                entry["configs"].append(_config(key, broker_config[key], source, keys))
        else:
            entry.update(error_code=ErrorCode.INVALID_REQUEST,
                         error_message=f"resource type {resource.resource_type} {name!r} cannot be described here")
        entry["configs"] = [c for c in entry["configs"] if c is not None]
        results.append(entry)
    return {"results": results, "throttle_time_ms": 0}


def _config(key: str, value: str | None, source: int, keys: set[str] | None) -> dict | None:
    if keys is not None and key not in keys:
        return None
    return {"name": key, "value": value, "read_only": True, "config_source": source, "is_sensitive": False,
            "is_default": source == SOURCE_DEFAULT, "synonyms": ()}
