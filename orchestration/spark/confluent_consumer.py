"""A consume-job consumer on confluent-kafka (librdkafka), over Kafka's wire protocol.

``ConfluentLoadConsumer`` has the part of raykafka's ``Consumer`` API the consume job uses
(``subscribe``, ``poll(timeout_ms)`` returning ``ConsumerRecord``s, ``commit``, ``close``) and
writes the same history: each poll that returns records is recorded with the records and
``positions_before``, the consumer's position in each partition it owns just before the poll
(librdkafka's ``position``: the offset after the last record handed to the application; a
partition with no position yet is left out), so the checker tells a rebalance from a consumer
going backwards.

Settings are librdkafka's, with Kafka's names; ``bootstrap.servers`` is filled in from the
cluster (its brokers' advertised listeners) and librdkafka refuses a key it does not know.
"""
from __future__ import annotations

from actors.codecs.record_batches import ConsumerRecord
from orchestration.history import topic_partition_key

# Records one poll hands out at most (librdkafka's consume() batch); the consume job's own default
# for raykafka's consumer (max.poll.records) is the same.
POLL_RECORDS_MAX = 5000


class ConfluentLoadConsumer:
    def __init__(self, bootstrap_servers: str, config: dict, *, history=None, process: str = "consumer") -> None:
        from confluent_kafka import Consumer
        self._consumer = Consumer({**config, "bootstrap.servers": bootstrap_servers})
        self._history, self.process = history, process

    def subscribe(self, topics: list[str]) -> None:
        self._consumer.subscribe(list(topics))

    def _positions(self) -> dict[str, int]:
        owned = self._consumer.assignment()
        if not owned:
            return {}
        return {topic_partition_key(tp.topic, tp.partition): tp.offset
                for tp in self._consumer.position(owned) if tp.offset >= 0}

    def poll(self, timeout_ms: int = 0) -> list[ConsumerRecord]:
        """Records librdkafka has for this member, up to ``POLL_RECORDS_MAX``; an error a message
        carries (a broker or partition error librdkafka reports to the application) raises."""
        from confluent_kafka import KafkaError, KafkaException
        positions_before = self._positions() if self._history is not None else {}
        messages = self._consumer.consume(POLL_RECORDS_MAX, timeout_ms / 1000.0)
        records = []
        for message in messages:
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:  # only with enable.partition.eof
                    continue
                raise KafkaException(message.error())
            _, timestamp_ms = message.timestamp()
            records.append(ConsumerRecord(message.topic(), message.partition(), message.offset(), timestamp_ms,
                                          message.key(), message.value()))
        if records and self._history is not None:
            self._history.poll(self.process, records, positions_before)
        return records

    def commit(self) -> None:
        """Commits the positions after the records handed out, and waits for the answer."""
        self._consumer.commit(asynchronous=False)

    def close(self) -> None:
        self._consumer.close()
