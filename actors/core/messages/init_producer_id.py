"""InitProducerId (API key 22): a producer asks any broker for a producer id and epoch (KIP-98).

An idempotent producer sends it once before its first batch, with no ``transactional_id``; the
broker answers with a producer id no other producer in the cluster has, and epoch 0. The ids come
from blocks the controller hands out (``AllocateProducerIds``), so brokers never give out the same
id. While the broker has no block yet it answers ``COORDINATOR_LOAD_IN_PROGRESS`` and the producer
retries. Transactions are not implemented: a request with a ``transactional_id`` gets
``INVALID_REQUEST`` naming the reason. The ``producer_id``/``producer_epoch`` fields (KIP-360's
epoch bump) are carried so transactions can come later without a message change.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode
from actors.core.messages._base import message

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@message
class InitProducerIdRequest:
    transactional_id: str | None = None
    transaction_timeout_ms: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@message
class InitProducerIdResponse:
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    throttle_time_ms: int = 0
