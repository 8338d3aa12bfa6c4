"""A group coordinator's link to its broker: loads, fate sharing and writes, as a pure state machine.

Theory of operation. ``BrokerLink`` owns a ``GroupCoordinatorCore`` and everything between it and
the broker the coordinator belongs to (Kafka runs both in one process; here they are separate
actors, so what the process boundary gave Kafka for free is decided here). Its outputs are
``Send("broker", message)`` (messages in ``group.messages``), whose answers, or the ``ErrorCode``
of a failed call, come back through ``on_broker_response``.

- Leaderships: ``on_leadership_change`` (Kafka's onElection / onResignation) is fenced by leader
  epoch (``CoordinatorEpochs``). An election starts a load: ``OffsetsLogReadRequest`` from offset
  0, ``LOAD_BYTES_PER_READ`` at a time, each chunk decoded by the record codec, until the log end;
  the records then go to the core (``on_become_leader``), unless a newer change arrived meanwhile.
  A failed read is retried after ``LOAD_RETRY_BACKOFF_MS``. Until then the partition's groups
  answer COORDINATOR_LOAD_IN_PROGRESS.
- Fate sharing: in Kafka the coordinator dies with its broker. Here it asks the broker for its
  incarnation every ``BROKER_WATCH_INTERVAL_MS`` (the first time at ``start``). The table:

  | broker answers                                   | then                                              |
  |--------------------------------------------------|---------------------------------------------------|
  | the incarnation we knew                          | nothing                                           |
  | another incarnation (we knew one, or none)       | drop every loaded partition, adopt its leaderships |
  | gone: BROKER_NOT_AVAILABLE, or failures for      | drop every partition; know no incarnation         |
  | ``BROKER_UNREACHABLE_MS`` (slow or restarting)   |                                                   |

  Adopting asks again with ``include_leaderships`` and takes the broker's metadata view, then
  loads each ``__consumer_offsets`` partition it leads (an election heard twice loads once).
- Writes: the core's ``Send("offsets-log", OffsetsLogAppendRequest)`` becomes one record batch
  (built by the codec) in an ``InternalProduceRequest`` with the acks and timeout the core asked
  for; the produce answer becomes the core's ``OffsetsLogAppendResponse`` (a timed-out call is
  REQUEST_TIMED_OUT, any other failure NOT_LEADER_OR_FOLLOWER).

Limits: one watch call in flight; one load per partition, one read of it in flight.
"""
from __future__ import annotations

import collections
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from actors.core.effects import ArmTimer, CoordinatorMetadataUpdate, Effect, LogEvent, Send
from actors.core.errors import ErrorCode
from actors.core.group.coordinator import GroupCoordinatorCore
from actors.core.group.coordinator_epochs import CoordinatorEpochs
from actors.core.group.messages import (
    GROUP_METADATA_TOPIC_NAME, OFFSETS_LOG_DESTINATION, BrokerStateRequest, BrokerStateResponse,
    InternalProduceRequest, OffsetsLogAppendRequest, OffsetsLogAppendResponse, OffsetsLogReadRequest,
    OffsetsLogReadResponse,
)
from actors.core.messages.produce import PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData

BROKER_WATCH_INTERVAL_MS = 500
BROKER_UNREACHABLE_MS = 3_000
LOAD_BYTES_PER_READ = 4 * 1024 * 1024
LOAD_RETRY_BACKOFF_MS = 500
Records = list[tuple[bytes, bytes | None]]


class RecordCodec(Protocol):
    """Kafka's v2 record-batch format (the host passes kafka-python's, actors/codecs/record_batches.py)."""

    def encode(self, records: Iterable[tuple[bytes, bytes | None]], timestamp_ms: int) -> bytes: ...

    def decode(self, buffer: Any, from_offset: int) -> Records: ...


@dataclass
class _Load:
    leader_epoch: int
    records: Records = field(default_factory=list)
    in_flight: OffsetsLogReadRequest | None = None
    next_offset: int = 0
    retry_at_ms: int | None = None


class BrokerLink:
    def __init__(self, core: GroupCoordinatorCore, codec: RecordCodec) -> None:
        self.core = core
        self.codec = codec
        self.epochs = CoordinatorEpochs()
        self.loads_begun: collections.Counter[int] = collections.Counter()
        self.watch_rounds = 0
        self.broker_incarnation: str | None = None
        self._loads: dict[int, _Load] = {}
        self._watch_in_flight: BrokerStateRequest | None = None
        self._next_watch_ms = 0
        self._failing_since_ms: int | None = None
        self._appends: dict[int, OffsetsLogAppendRequest] = {}  # id(produce request) -> the core's append

    # ------------------------------------------------------------------------------- inputs
    def start(self, now_ms: int) -> list[Effect]:
        """The first look at the broker, at once: it adopts the broker's leaderships after a (re)start."""
        self._next_watch_ms = now_ms
        return self._watch(now_ms)

    def step(self, effects: list[Effect]) -> list[Effect]:
        """The core's effects with its writes turned into produce requests to the broker."""
        out: list[Effect] = []
        for effect in effects:
            if isinstance(effect, Send) and effect.destination == OFFSETS_LOG_DESTINATION:
                out.append(self._produce(effect.message))
            else:
                out.append(effect)
        return out

    def on_leadership_change(self, partition: int, leader_epoch: int, is_leader: bool, now_ms: int) -> list[Effect]:
        """The broker started or stopped leading an offsets partition (Kafka's onElection/onResignation)."""
        if not self.epochs.accept(partition, leader_epoch, is_leader=is_leader):
            return []  # an older change that arrived late, or one already heard of
        if not is_leader:
            self._loads.pop(partition, None)
            return self.step(self.core.on_resign(partition, now_ms))
        self.loads_begun[partition] += 1
        self._loads[partition] = _Load(leader_epoch=leader_epoch)
        return self.step(self.core.begin_loading(partition)) + self._read_next(partition, now_ms)

    def on_metadata_update(self, update: Any, now_ms: int) -> list[Effect]:
        if not isinstance(update, CoordinatorMetadataUpdate):
            return [LogEvent(level="warning", message=f"group coordinator {self.core.broker_id} ignored a "
                                                      f"metadata update it cannot read: {update!r}")]
        return self.step(self.core.on_metadata_update(update, now_ms))

    def on_broker_response(self, request: Any, response: Any, now_ms: int) -> list[Effect]:
        if isinstance(request, OffsetsLogReadRequest):
            return self._on_read(request, response, now_ms)
        if isinstance(request, BrokerStateRequest):
            return self._on_broker_state(request, response, now_ms)
        assert isinstance(request, InternalProduceRequest), request
        return self._on_produced(request, response, now_ms)

    def tick(self, now_ms: int) -> list[Effect]:
        effects = self.step(self.core.tick(now_ms)) + self._watch(now_ms)
        for partition, load in sorted(self._loads.items()):
            if load.retry_at_ms is not None and now_ms >= load.retry_at_ms:
                load.retry_at_ms = None
                effects += self._read_next(partition, now_ms)
        return effects

    # ------------------------------------------------------------------------------ loading
    def _read_next(self, partition: int, now_ms: int) -> list[Effect]:
        load = self._loads[partition]
        load.in_flight = OffsetsLogReadRequest(partition=partition, offset=load.next_offset,
                                               max_bytes=LOAD_BYTES_PER_READ)
        return [Send(destination="broker", message=load.in_flight)]

    def _on_read(self, request: OffsetsLogReadRequest, response: Any, now_ms: int) -> list[Effect]:
        partition = request.partition
        load = self._loads.get(partition)
        if load is None or load.in_flight is not request:
            return []  # the load this read was for was superseded or dropped
        load.in_flight = None
        if not isinstance(response, OffsetsLogReadResponse):
            load.retry_at_ms = now_ms + LOAD_RETRY_BACKOFF_MS
            return [LogEvent(level="warning", message=f"group coordinator {self.core.broker_id}: reading "
                                                      f"{GROUP_METADATA_TOPIC_NAME}-{partition} failed ({response!r}); "
                                                      f"retrying"), ArmTimer(deadline_ms=load.retry_at_ms)]
        load.records += self.codec.decode(response.records, request.offset)
        load.next_offset = response.next_offset
        if response.next_offset < response.log_end_offset and response.next_offset != request.offset:
            return self._read_next(partition, now_ms)
        del self._loads[partition]
        if not self.epochs.is_current(partition, load.leader_epoch):
            return []  # leadership moved again while loading; the newer change decides
        return self.step(self.core.on_become_leader(partition, load.records, now_ms))

    # ---------------------------------------------------------------------- fate sharing
    def _watch(self, now_ms: int, *, include_leaderships: bool = False) -> list[Effect]:
        if self._watch_in_flight is not None or (now_ms < self._next_watch_ms and not include_leaderships):
            return []
        self.watch_rounds += 1
        self._watch_in_flight = BrokerStateRequest(include_leaderships=include_leaderships)
        return [Send(destination="broker", message=self._watch_in_flight)]

    def _on_broker_state(self, request: BrokerStateRequest, response: Any, now_ms: int) -> list[Effect]:
        if request is not self._watch_in_flight:
            return []
        self._watch_in_flight = None
        self._next_watch_ms = now_ms + BROKER_WATCH_INTERVAL_MS
        if not isinstance(response, BrokerStateResponse):
            if response != ErrorCode.BROKER_NOT_AVAILABLE:
                # Slow or restarting: give it a while, then count it gone (it cannot write anyway).
                self._failing_since_ms = now_ms if self._failing_since_ms is None else self._failing_since_ms
                if now_ms - self._failing_since_ms < BROKER_UNREACHABLE_MS:
                    return []
            return self._broker_changed(None, now_ms)
        self._failing_since_ms = None
        if response.incarnation_id == self.broker_incarnation:
            return []
        if not request.include_leaderships:
            return self._watch(now_ms, include_leaderships=True)  # a new broker: ask for its view
        effects = self._broker_changed(response.incarnation_id, now_ms)
        effects += self.on_metadata_update(response.metadata, now_ms)
        for partition, leader_epoch in response.offsets_partitions_led:
            effects += self.on_leadership_change(partition, leader_epoch, True, now_ms)
        return effects

    def _broker_changed(self, incarnation: str | None, now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        if self.broker_incarnation is not None or incarnation is None:
            for partition in self.epochs.partitions():
                effects.append(LogEvent(level="info", message=(
                    f"group coordinator {self.core.broker_id}: broker changed; dropping "
                    f"{GROUP_METADATA_TOPIC_NAME}-{partition}")))
                effects += self.step(self.core.on_resign(partition, now_ms))
            self.epochs.clear()
            self._loads.clear()
        self.broker_incarnation = incarnation
        return effects

    # ------------------------------------------------------------------------------- writes
    def _produce(self, append: OffsetsLogAppendRequest) -> Send:
        produce = ProduceRequest(acks=append.required_acks, timeout_ms=append.timeout_ms, topic_data=(
            TopicProduceData(name=GROUP_METADATA_TOPIC_NAME, partition_data=(PartitionProduceData(
                index=append.partition, records=self.codec.encode(append.records, append.timestamp_ms)),)),))
        request = InternalProduceRequest(produce=produce)
        self._appends[id(request)] = append
        return Send(destination="broker", message=request)

    def _on_produced(self, request: InternalProduceRequest, response: Any, now_ms: int) -> list[Effect]:
        append = self._appends.pop(id(request), None)
        if append is None:
            return []
        if isinstance(response, ProduceResponse):
            answer = response.responses[0].partition_responses[0]
            result: Any = OffsetsLogAppendResponse(append_id=append.append_id, partition=append.partition,
                                                   error_code=answer.error_code, base_offset=answer.base_offset)
        else:
            result = ErrorCode.REQUEST_TIMED_OUT if response == ErrorCode.REQUEST_TIMED_OUT \
                else ErrorCode.NOT_LEADER_OR_FOLLOWER
            return [LogEvent(level="warning", message=f"group coordinator {self.core.broker_id}: append to "
                                                      f"{GROUP_METADATA_TOPIC_NAME}-{append.partition} failed: "
                                                      f"{response!r}")] + self.step(
                self.core.on_offsets_log_response(append, result, now_ms))
        return self.step(self.core.on_offsets_log_response(append, result, now_ms))
