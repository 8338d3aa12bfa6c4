"""What the conformance tests (tests/integration/test_conformance_*.py) share: the two systems'
names, ``record`` (one checked row of the table: each system's answer against the expected one)
and ``print_table`` (check | Apache Kafka | raykafka), which the ``table`` fixture in
tests/integration/conftest.py prints when a module ends."""
from __future__ import annotations

from orchestration.apache_kafka import kafka_version

APACHE, RAYKAFKA = "Apache Kafka", "raykafka"


def print_table(reporter, rows, what="Kafka's tools"):
    width = max(len(check) for check in rows)
    reporter.write_line("")
    reporter.write_line(f"{what} against Apache Kafka {kafka_version()} and raykafka:")
    reporter.write_line(f"{'check':<{width}} | {APACHE:<12} | {RAYKAFKA}")
    for check, by_system in rows.items():
        reporter.write_line(f"{check:<{width}} | {by_system.get(APACHE, 'not run'):<12} | "
                            f"{by_system.get(RAYKAFKA, 'not run')}")


def record(table, check, observed: dict, expected):
    """Puts each system's result in the table, then fails unless both showed what Kafka's tools show."""
    table[check] = {system: "ok" if seen == expected else f"DIFFERS: {seen!r}"[:200]
                    for system, seen in observed.items()}
    assert observed == {system: expected for system in observed}, f"{check}: expected {expected!r}"
