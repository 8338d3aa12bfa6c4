"""ControlledShutdown (API key 7): a broker asks the controller to move its leaderships away.

The controller elects new leaders for the partitions the broker leads and shrinks it out of the
ISRs it follows, then answers with the partitions it could not yet move; the broker retries until
none remain (or it gives up) and only then stops. A request with a stale ``broker_epoch`` is
answered with ``STALE_BROKER_EPOCH``.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class ControlledShutdownRequest:
    API_KEY: ClassVar[int] = 7
    broker_id: int
    broker_epoch: int


@message
class RemainingPartition:
    topic_name: str
    partition_index: int


@message
class ControlledShutdownResponse:
    error_code: ErrorCode = ErrorCode.NONE
    remaining_partitions: tuple[RemainingPartition, ...] = ()
