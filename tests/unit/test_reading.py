"""Proves that the loss check's read-back reads each partition up to its high watermark, so a log
holding duplicates (a retried send written twice) cannot end the read before the last
acknowledged record; run without Ray against an in-process broker core, with a consumer that
returns one record per poll."""
from __future__ import annotations

from orchestration.clients.consumer import Consumer
from tests.support.core_driver import make_batch
from tests.support.reading import read_to_high_watermark
from tests.unit.test_client_history import TOPIC, FakeDirectory, _produce_request, leading_broker


class OneRecordPerPoll:
    """A cluster whose consumers read one partition of ``broker`` one record per poll."""

    def __init__(self, broker) -> None:
        self.broker = broker

    def consumer(self, config: dict) -> Consumer:
        return Consumer(FakeDirectory(self.broker, {TOPIC: 1}), {
            **config, "max.poll.records": "1", "fetch.max.wait.ms": "0", "retry.backoff.ms": "1"})


def test_every_acknowledged_record_is_read_back_when_the_log_holds_duplicates():
    broker = leading_broker()
    # v0's first attempt landed but its answer was lost; the retry wrote v0 again, acknowledged
    # at offset 1. Then v1 was acknowledged at offset 2: two acknowledgements, three records.
    for values in ([b"v0"], [b"v0"], [b"v1"]):
        broker.ask("handle_produce", _produce_request(make_batch(values)))
    acknowledged = {(0, 1): b"v0", (0, 2): b"v1"}

    seen = read_to_high_watermark(OneRecordPerPoll(broker), TOPIC, 1, timeout_s=10)

    assert {k: v for k, v in acknowledged.items() if k not in seen or seen[k].value != v} == {}
    assert [seen[k].value for k in sorted(seen)] == [b"v0", b"v0", b"v1"]
