"""The consumer's batch-level API: ``poll_batches`` (whole v2 record batches) and ``poll_arrow``
(Arrow columns), beside ``poll``, for applications and Spark jobs that want no Python object per
record. ``Consumer`` inherits it; fetching, positions, commits and group membership are the
consumer's own, shared with ``poll`` (``Consumer._poll``), and the buffered fetch answers are its
``FetchBuffer`` (``orchestration.clients.fetched``).
"""
from __future__ import annotations

from orchestration.clients.arrow_records import record_batches_to_arrow
from orchestration.clients.fetched import FetchedBatch
from actors.codecs.record_batches import ConsumerRecord, read_records


class BatchPolling:
    """``poll_batches`` and ``poll_arrow``, and what each kind of poll does with what it hands out
    (leader epochs for commits, the history); mixed into ``Consumer``, whose state they use."""

    def poll_batches(self, timeout_ms: int = 0,
                     max_bytes: int | None = None) -> dict[tuple[str, int], list[FetchedBatch]]:
        """Whole record batches instead of records, for applications that read Kafka's v2 format
        themselves or want no Python object per record: ``{(topic, partition): [FetchedBatch]}``,
        each batch's bytes as stored (a read-only memoryview of the fetched data, no copy), in
        offset order, waiting up to ``timeout_ms`` for some.

        The batches' sizes add up to at most ``max_bytes`` (default ``fetch.max.bytes``), but one
        batch always goes, however large. Everything else is ``poll``'s: positions move past
        exactly the batches handed out (``position`` is the last one's ``next_offset``), so
        ``commit()`` and auto-commit store that; ``seek``, ``assign`` and rebalances drop what
        is buffered for a partition as for ``poll``. Control batches (transaction markers) are
        never handed out, and a batch that begins before the position (after a seek into it, or
        after ``poll`` returned part of it) is handed out rebuilt with only the records from the
        position on, so no record is handed out twice. ``max.poll.records`` does not apply."""
        budget = self._max_bytes if max_bytes is None else int(max_bytes)
        if budget <= 0:
            raise ValueError(f"max_bytes must be positive, not {max_bytes!r}")
        return self._poll(timeout_ms, lambda: self._take_batches(budget), {})

    def poll_arrow(self, timeout_ms: int = 0, max_bytes: int | None = None, *, headers: bool = False):
        """``poll_batches`` as one ``pyarrow.Table`` with the columns of Spark's Kafka source: key,
        value (binary), topic (string), partition (int32), offset (int64), timestamp (ms),
        timestampType (int32: 0 create time, 1 log append time), and ``headers`` (list of
        ``{key: string, value: binary}``) when ``headers=True``. Rows are in offset order per
        partition; an empty table (same schema) when nothing came within ``timeout_ms``. Keys and
        values are copied once, into Arrow's buffers; no Python object is kept per record."""
        batches = self.poll_batches(timeout_ms, max_bytes)
        return record_batches_to_arrow([b for per_partition in batches.values() for b in per_partition],
                                       with_headers=headers)

    def _take_records(self) -> list[ConsumerRecord]:
        positions_before = self._known_positions() if self._history is not None else None
        # The next fetches go before decoding: the next data travels while this process decodes.
        records = self._buffered.take_records(self._max_poll_records, self._send_fetches)
        for record in records:
            self._consumed_epochs[(record.topic, record.partition)] = record.leader_epoch
        if records and self._history is not None:
            self._history.poll(self.process, records, positions_before)
        return records

    def _take_batches(self, max_bytes: int) -> dict[tuple[str, int], list[FetchedBatch]]:
        positions_before = self._known_positions() if self._history is not None else None
        by_partition: dict[tuple[str, int], list[FetchedBatch]] = {}
        taken = self._buffered.take_batches(max_bytes, self._send_fetches)
        for batch in taken:
            by_partition.setdefault((batch.topic, batch.partition), []).append(batch)
            self._consumed_epochs[(batch.topic, batch.partition)] = batch.leader_epoch
        if taken and self._history is not None:
            records = [r for b in taken for r in read_records(b.topic, b.partition, b.data, b.base_offset)]
            self._history.poll(self.process, records, positions_before)
        return by_partition

