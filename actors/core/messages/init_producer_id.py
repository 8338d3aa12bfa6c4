"""InitProducerId (API key 22): a producer asks any broker for a producer id and epoch (KIP-98).

An idempotent producer sends it once before its first batch, with no ``transactional_id``; the
broker answers with a producer id no other producer in the cluster has, and epoch 0. The ids come
from blocks the controller hands out (``AllocateProducerIds``), so brokers never give out the same
id. While the broker has no block yet it answers ``COORDINATOR_LOAD_IN_PROGRESS`` and the producer
retries. Transactions are not implemented: a request with a ``transactional_id`` gets
``TRANSACTIONS_REFUSED_CODE`` (see there) with ``TRANSACTIONS_REFUSED_MESSAGE``. The
``producer_id``/``producer_epoch`` fields (KIP-360's epoch bump) are carried so transactions can
come later without a message change.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message

# How a broker refuses every transactional request path (FindCoordinator for a transaction
# coordinator, InitProducerId with a transactional id) until transactions exist. The code is the
# one Kafka answers a producer that may not use its transactional id, and the one error on these
# paths that stock clients end at once instead of retrying until their timeout: librdkafka makes it
# a fatal error (rdkafka_txnmgr.c's FindCoordinator handler, rdkafka_idempotence.c's
# rd_kafka_idemp_check_error) and KafkaJS marks it non-retriable. Any other code (INVALID_REQUEST,
# COORDINATOR_NOT_AVAILABLE) left librdkafka's init_transactions() retrying for its whole timeout.
TRANSACTIONS_REFUSED_CODE = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
TRANSACTIONS_REFUSED_MESSAGE = ("raykafka does not support transactions: drop transactional.id (an idempotent "
                                "producer, enable.idempotence=true, is supported)")

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@message
class InitProducerIdRequest:
    API_KEY: ClassVar[int] = 22
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
