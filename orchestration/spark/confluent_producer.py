"""A load-job producer on confluent-kafka (librdkafka), over Kafka's wire protocol.

``ConfluentLoadProducer`` has the part of raykafka's ``Producer`` API the load job uses (``send``
returns a ``concurrent.futures.Future`` of ``RecordMetadata``; ``flush``; ``close``) and writes
the same history: ``invoke`` before a record is handed to librdkafka, then ``ok`` with its
partition and offset, or an error. librdkafka retries inside the client and reports only a final
outcome, so a failure is ``fail`` (definitely not written) only when its error says the record
never left the client (too large, unknown topic or partition, invalid); every other failure is
``info``, which the checker treats as possibly written. A poll thread serves librdkafka's delivery
reports.

Settings are librdkafka's, with Kafka's names (the load job's defaults are valid for both
clients); ``bootstrap.servers`` is filled in from the cluster, and librdkafka refuses a key it does
not know when the producer starts.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future

from actors.codecs.record_batches import RecordMetadata
from orchestration.clients.producer_batch import history_text

# Errors librdkafka reports for a record it never sent: a definite failure.
_NEVER_SENT = frozenset({"MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC",
                         "_INVALID_ARG"})
POLL_INTERVAL_S = 0.05


class ConfluentLoadProducer:
    def __init__(self, bootstrap_servers: str, config: dict, *, history=None, process: str = "producer") -> None:
        from confluent_kafka import Producer
        # Java's partitioner (murmur2), as raykafka's own producer uses: a keyed workload spreads
        # over the same partitions whichever client runs it.
        self._producer = Producer({"partitioner": "murmur2_random", **config, "bootstrap.servers": bootstrap_servers})
        self._history, self.process = history, process
        self._closed = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="raykafka-confluent-poll", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        while not self._closed.is_set():
            self._producer.poll(POLL_INTERVAL_S)

    def send(self, topic: str, value: bytes | None = None, key: bytes | None = None,
             partition: int | None = None) -> Future:
        future: Future = Future()
        future.set_running_or_notify_cancel()
        text = history_text(value)
        if self._history is not None:
            self._history.invoke(self.process, topic, partition, text)

        def delivered(error, message) -> None:
            if error is None:
                if self._history is not None:
                    self._history.ok(self.process, message.topic(), message.partition(), message.offset(), text)
                future.set_result(RecordMetadata(message.topic(), message.partition(), message.offset()))
                return
            if self._history is not None:
                record = self._history.fail if error.name() in _NEVER_SENT else self._history.info
                record(self.process, text, error.name())
            future.set_exception(RuntimeError(f"{error.name()}: {error.str()}"))
        extra = {} if partition is None else {"partition": partition}
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=delivered, **extra)
                return future
            except BufferError:  # librdkafka's queue is full: wait for deliveries to make room
                self._producer.poll(POLL_INTERVAL_S)

    def flush(self, timeout: float | None = None) -> None:
        left = self._producer.flush(-1 if timeout is None else timeout)
        if left:
            raise TimeoutError(f"{left} records still undelivered after {timeout}s")

    def close(self, timeout: float | None = None) -> None:
        try:
            self.flush(timeout)
        finally:
            self._closed.set()
            self._poller.join(timeout=5)
