"""The producer's drain: which queued batches go to which leader now (Kafka's ``RecordAccumulator``
``ready`` and ``drain``), for ``Producer``'s sender thread, under the producer's lock.

It reads the producer's queues, leaders, in-flight requests and settings (``Producer`` holds
them; this class only adds the drain's methods), and pops what it drains from the queues.
"""
from __future__ import annotations

import collections
import time

from actors.core.errors import ErrorCode
from orchestration.errors import KafkaError


class ProducerDrain:
    """The drain's methods, mixed into ``Producer``: they use its ``_queues``, ``_in_flight``,
    ``_directory``, ``_idempotence``, settings and ``_drain_starts`` (leader -> where that leader's
    next drain starts)."""

    def _drain_ready(self, can_send: bool = True) -> tuple[list, float, list, bool]:
        """Per partition, the batches to send now; how long until the next is due; the queued
        batches older than ``delivery.timeout.ms``, which the caller fails; and whether a
        partition with queued batches has no known leader (the caller asks for metadata again).

        As Kafka's accumulator (``ready`` then ``drain``): a leader is ready once one of its
        partitions has a batch that is full, lingered ``linger.ms``, already built (a retry) or
        being flushed; a drain then takes the head batches of every partition that leader leads,
        lingered or not, up to ``max.request.size`` (the first whatever its size), for one request.
        So a producer spread over many partitions sends one request per leader, not one per
        partition. The partitions a full drain leaves out come first in the leader's next drain
        (Kafka's ``drainIndex``), so none starves. A partition sends its head batch together with
        the batches queued behind it: they travel as one records field, which the leader appends
        with consecutive offsets. Expiry takes batches from the front only, so the batches that
        stay keep their order (``expired`` holds (batch, error) pairs). An idempotent producer
        drains nothing before it has a producer id (``can_send``), and a partition only as
        ``Idempotence.may_drain`` and ``may_join`` allow (see there), stamping each batch it
        drains first; queued batches past a gap are stamped afresh or failed first
        (``Idempotence.settle_gap``).
        """
        now = _now_ms()
        hurry = self._flushing > 0 or self._closed
        per_broker_in_flight = collections.Counter(request.broker_id for request in self._in_flight.values())
        wait_ms, expired, leaderless = 100.0, [], False
        sendable: dict[int, list] = collections.defaultdict(list)  # leader -> queues whose head may go now
        ready_leaders = set()
        for key, queue in self._queues.items():
            while queue and now - queue[0].created_ms >= self._delivery_timeout_ms:
                batch = queue.popleft()
                expired.append((batch, KafkaError(ErrorCode.REQUEST_TIMED_OUT, (
                    f"expiring a batch of {batch.topic}-{batch.partition}: delivery.timeout.ms="
                    f"{self._delivery_timeout_ms:.0f} has passed since it was made"))))
            if self._idempotence is not None and can_send:
                expired += self._idempotence.settle_gap(queue)
            if not queue:
                continue
            batch = queue[0]
            wait_ms = min(wait_ms, batch.created_ms + self._delivery_timeout_ms - now)
            # As Kafka's accumulator: any partition with data and no known leader counts, whether
            # or not its batch is ready yet, so that the leader is known by the time it is.
            leader = self._leader_or_none(*key)
            if leader is None:
                leaderless = True
                wait_ms = min(wait_ms, self._retry_backoff_ms)
                continue
            if batch.retry_after_ms > now:
                wait_ms = min(wait_ms, batch.retry_after_ms - now)
                continue
            if not can_send or (self._idempotence is not None and not self._idempotence.may_drain(batch)):
                continue
            sendable[leader].append(queue)
            due = batch.created_ms + self._linger_ms
            full = len(queue) > 1 or batch.builder.size_in_bytes() >= self._batch_size
            if hurry or full or batch.payload is not None or due <= now:
                ready_leaders.add(leader)
            else:
                wait_ms = min(wait_ms, due - now)
        ready = []
        for leader in ready_leaders:
            if per_broker_in_flight[leader] >= self._max_in_flight:
                wait_ms = min(wait_ms, self._retry_backoff_ms)
                continue
            ready += self._drain_leader(leader, sendable[leader], now, hurry)
            per_broker_in_flight[leader] += 1
        return ready, max(wait_ms, 0.0), expired, leaderless

    def _drain_leader(self, leader: int, queues: list, now: float, hurry: bool) -> list:
        """One request's worth for ``leader``: (leader, batches) per partition, from ``queues``
        (its partitions whose head batch may go now), starting where its last drain stopped."""
        start = self._drain_starts.get(leader, 0) % len(queues)
        ready, size = [], 0
        for offset in range(len(queues)):
            queue = queues[(start + offset) % len(queues)]
            if ready and size + queue[0].size_in_bytes() > self._max_request_size:
                self._drain_starts[leader] = start + offset  # this partition goes first next time
                break
            group = []
            while queue and queue[0].retry_after_ms <= now:
                head = queue[0]
                is_open = head.payload is None and head is queue[-1]
                if group and (size + head.size_in_bytes() > self._max_request_size or head.alone or group[0].alone
                              or (is_open and not hurry and head.created_ms + self._linger_ms > now)):
                    break  # (a batch ``alone`` goes in a request of its own: see ``split_refused``)
                if self._idempotence is not None and group and not self._idempotence.may_join(group, head):
                    break
                queue.popleft()
                if self._idempotence is not None:
                    self._idempotence.stamp(head)
                group.append(head)
                size += head.size_in_bytes()
            ready.append((leader, group))
        return ready

    def _leader_or_none(self, topic: str, partition: int) -> int | None:
        try:
            leader, _ = self._directory.leader_for(topic, partition)
        except KafkaError:
            return None
        return leader if leader >= 0 else None


def _now_ms() -> float:
    return time.monotonic() * 1000
