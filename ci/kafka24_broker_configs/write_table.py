"""Writes actors/core/kafka_broker_config_defs.py from BrokerConfigDump.java's lines on stdin (see
generate.sh): one BrokerConfigDef per Kafka 2.4 broker config, sorted by name."""
from __future__ import annotations

import sys

HEAD = '''"""Kafka 2.4's broker config definitions, every key its ``KafkaConfig`` defines: the ConfigDef type,
the default as DescribeConfigs prints it (None: Kafka has none), whether the key is read-only or
dynamic per broker or cluster-wide (``DynamicBrokerConfig.dynamicConfigUpdateModes``), and the
broker synonyms in precedence order (``DynamicBrokerConfig.brokerConfigSynonyms``: log.retention.ms,
log.retention.minutes, log.retention.hours). DescribeConfigs for a broker lists every one of them.

Generated from Kafka 2.4.0's jars by ci/kafka24_broker_configs/generate.sh; do not edit by hand.
"""
from __future__ import annotations

from dataclasses import dataclass

READ_ONLY, PER_BROKER, CLUSTER_WIDE = "read-only", "per-broker", "cluster-wide"


@dataclass(frozen=True, slots=True)
class BrokerConfigDef:
    name: str
    config_type: str  # Kafka's ConfigDef.Type name: BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD
    default: str | None
    update_mode: str  # READ_ONLY, PER_BROKER or CLUSTER_WIDE
    synonyms: tuple[str, ...]  # the key itself among them, in Kafka's precedence order


_D = BrokerConfigDef
_R, _P, _C = READ_ONLY, PER_BROKER, CLUSTER_WIDE
'''


def main() -> None:
    modes = {"read-only": "_R", "per-broker": "_P", "cluster-wide": "_C"}
    rows = []
    for line in sys.stdin:
        name, config_type, default, mode, synonyms = line.rstrip("\n").split("\t")
        value = None if default == "\\N" else default
        rows.append(f"    _D({name!r}, {config_type!r}, {value!r}, {modes[mode]}, {tuple(synonyms.split(','))!r}),")
    sys.stdout.write(HEAD + "BROKER_CONFIG_DEFS: dict[str, BrokerConfigDef] = {d.name: d for d in (\n"
                     + "\n".join(rows) + "\n)}\n\n__all__ = [\"BROKER_CONFIG_DEFS\", \"CLUSTER_WIDE\", "
                     "\"PER_BROKER\", \"READ_ONLY\", \"BrokerConfigDef\"]\n")


if __name__ == "__main__":
    main()
