"""A broker's producer ids: InitProducerId answered from blocks the controller hands out (KIP-98, KIP-730).

Theory of operation. Any broker answers an idempotent producer's InitProducerId with a fresh
producer id and epoch 0. Ids come in blocks of ``PRODUCER_ID_BLOCK_SIZE`` that the controller
claims in its store for this broker (``AllocateProducerIds``); no two brokers, and no two blocks,
share an id, so ids stay unique across broker restarts and controller failovers (a restarted
broker asks for a new block; the rest of its old one is never used).

While the broker has no id left, requests are parked (at most ``PARKED_REQUESTS_MAX``) and one
AllocateProducerIds goes to the controller; its answer releases them in arrival order. If the
controller cannot be reached, refuses, or this broker is not registered yet, the parked requests
get ``COORDINATOR_LOAD_IN_PROGRESS``, which producers retry, as Kafka 3.x's brokers answer while
their next block is on its way. When a block is 90% used the next one is asked for ahead of need
(Kafka's prefetch), so a steady stream of new producers never waits for the controller.

Inputs: ``handle_init_producer_id`` (with the broker's current epoch) and
``on_allocate_response`` (the controller's answer, or an ``ErrorCode`` if it was unreachable).
Outputs: ``Respond`` effects and ``Send(destination="controller", AllocateProducerIdsRequest)``.
"""
from __future__ import annotations

from collections import deque

from actors.core.effects import Effect, Respond, Send
from actors.core.errors import ErrorCode
from actors.core.messages.allocate_producer_ids import AllocateProducerIdsRequest, AllocateProducerIdsResponse
from actors.core.messages.init_producer_id import (
    TRANSACTIONS_REFUSED_CODE, TRANSACTIONS_REFUSED_MESSAGE, InitProducerIdRequest, InitProducerIdResponse,
)

CONTROLLER = "controller"
PARKED_REQUESTS_MAX = 10_000
PREFETCH_FRACTION = 0.9  # Kafka's RPCProducerIdManager asks for the next block at 90% use
FIRST_PRODUCER_EPOCH = 0


class ProducerIdManager:
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self._blocks: deque[list[int]] = deque()  # [next id, end) per block, current first
        self._block_sizes: dict[int, int] = {}  # block end -> its length, for the prefetch point
        self._in_flight = False
        self._parked: deque[int] = deque()

    def __repr__(self) -> str:
        return (f"ProducerIdManager(broker={self.broker_id}, blocks={list(self._blocks)}, "
                f"in_flight={self._in_flight}, parked={len(self._parked)})")

    def handle_init_producer_id(self, request_id: int, request: InitProducerIdRequest,
                                broker_epoch: int) -> list[Effect]:
        if request.transactional_id is not None:
            return [Respond(request_id=request_id, response=InitProducerIdResponse(
                error_code=TRANSACTIONS_REFUSED_CODE, error_message=TRANSACTIONS_REFUSED_MESSAGE))]
        if self._blocks and not self._parked:
            return [self._answer(request_id)] + self._maybe_allocate(broker_epoch)
        if len(self._parked) >= PARKED_REQUESTS_MAX:
            return [self._retry_later(request_id, f"{len(self._parked)} producers already wait for ids")]
        self._parked.append(request_id)
        effects = self._maybe_allocate(broker_epoch)
        if not self._in_flight:  # nothing asked for: this broker is not registered yet
            effects += self._release_parked()
        return effects

    def on_allocate_response(self, response: AllocateProducerIdsResponse | ErrorCode) -> list[Effect]:
        self._in_flight = False
        if isinstance(response, AllocateProducerIdsResponse) and response.error_code == ErrorCode.NONE \
                and response.producer_id_len > 0:
            end = response.producer_id_start + response.producer_id_len
            self._blocks.append([response.producer_id_start, end])
            self._block_sizes[end] = response.producer_id_len
        return self._release_parked()

    def _release_parked(self) -> list[Effect]:
        effects: list[Effect] = []
        while self._parked:
            request_id = self._parked.popleft()
            if self._blocks:
                effects.append(self._answer(request_id))
            else:
                effects.append(self._retry_later(request_id, "no producer-id block from the controller yet"))
        return effects

    def _answer(self, request_id: int) -> Respond:
        block = self._blocks[0]
        producer_id = block[0]
        block[0] += 1
        if block[0] >= block[1]:
            self._blocks.popleft()
            self._block_sizes.pop(block[1], None)
        return Respond(request_id=request_id, response=InitProducerIdResponse(
            producer_id=producer_id, producer_epoch=FIRST_PRODUCER_EPOCH))

    def _needs_block(self) -> bool:
        if not self._blocks:
            return True
        if len(self._blocks) > 1:
            return False
        next_id, end = self._blocks[0]
        size = self._block_sizes.get(end, end - next_id)
        return end - next_id <= size * (1 - PREFETCH_FRACTION)

    def _maybe_allocate(self, broker_epoch: int) -> list[Effect]:
        if self._in_flight or broker_epoch < 0 or not self._needs_block():
            return []
        self._in_flight = True
        return [Send(destination=CONTROLLER, message=AllocateProducerIdsRequest(
            broker_id=self.broker_id, broker_epoch=broker_epoch))]

    @staticmethod
    def _retry_later(request_id: int, why: str) -> Respond:
        return Respond(request_id=request_id, response=InitProducerIdResponse(
            error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, error_message=why))
