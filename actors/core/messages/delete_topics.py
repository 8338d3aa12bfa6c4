"""DeleteTopics (API key 20): an admin client asks the controller to delete topics.

The controller stops every replica with StopReplica (deleting the logs) before it forgets the
topic, and answers once the topics are gone, or with ``REQUEST_TIMED_OUT`` after ``timeout_ms``.
"""
from __future__ import annotations

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class DeleteTopicsRequest:
    topic_names: tuple[str, ...]
    timeout_ms: int = 60000


@message
class DeletableTopicResult:
    name: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@message
class DeleteTopicsResponse:
    responses: tuple[DeletableTopicResult, ...]
    throttle_time_ms: int = 0
