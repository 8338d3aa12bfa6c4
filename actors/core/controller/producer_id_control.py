"""The controller's side of producer ids: blocks of ids for brokers (KIP-730's AllocateProducerIds).

Theory of operation. A broker that has handed out its block of producer ids asks the active
controller for another. The controller checks that the broker is registered with that broker
epoch (else ``STALE_BROKER_EPOCH``, as Kafka's ``ControllerApis`` does: a fenced incarnation gets
no ids) and claims the next block in its store (``MetadataStore.claim_producer_id_block``), which
no two claimants can both get. A standby or resigned controller answers ``NOT_CONTROLLER``; the
broker asks again after its backoff.
"""
from __future__ import annotations

from actors.core.controller.context import ControllerContext
from actors.core.controller.metadata_store import PRODUCER_ID_BLOCK_SIZE, MetadataStore
from actors.core.effects import Effect, Respond
from actors.core.errors import ErrorCode
from actors.core.messages.allocate_producer_ids import AllocateProducerIdsRequest, AllocateProducerIdsResponse


def allocate_producer_ids(context: ControllerContext, store: MetadataStore, request_id: int,
                          request: AllocateProducerIdsRequest) -> list[Effect]:
    info = context.brokers.get(request.broker_id)
    if info is None or info.broker_epoch != request.broker_epoch:
        return [Respond(request_id=request_id, response=AllocateProducerIdsResponse(
            error_code=ErrorCode.STALE_BROKER_EPOCH,
            error_message=f"broker {request.broker_id} epoch {request.broker_epoch} is not registered"))]
    start = store.claim_producer_id_block()
    return [Respond(request_id=request_id, response=AllocateProducerIdsResponse(
        producer_id_start=start, producer_id_len=PRODUCER_ID_BLOCK_SIZE))]
