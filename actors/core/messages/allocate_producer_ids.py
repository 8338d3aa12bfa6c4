"""AllocateProducerIds (API key 67, KIP-730): a broker asks the controller for a block of ids.

Kafka 2.4 brokers claimed blocks of 1000 producer ids in ZooKeeper themselves; KIP-730 moved the
claim to the controller, which is where raykafka's store lives. The controller fences a broker
whose ``broker_epoch`` is not its registered one (``STALE_BROKER_EPOCH``) and answers with the
block ``[producer_id_start, producer_id_start + producer_id_len)``, which no other broker ever
gets, across controller failovers too.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class AllocateProducerIdsRequest:
    API_KEY: ClassVar[int] = 67
    broker_id: int
    broker_epoch: int


@message
class AllocateProducerIdsResponse:
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    producer_id_start: int = -1
    producer_id_len: int = 0
    throttle_time_ms: int = 0
