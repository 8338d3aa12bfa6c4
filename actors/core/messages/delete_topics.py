"""DeleteTopics (API key 20): an admin client asks the controller to delete topics.

The controller stops every replica with StopReplica (deleting the logs) before it forgets the
topic. It answers once every live broker has applied the UpdateMetadata that removes the topic (or
``timeout_ms`` passed); the broker that forwarded the request then holds the answer until its own
metadata cache no longer has the topic, as Kafka 2.4's ``DelayedDeleteTopics`` does, and answers
``REQUEST_TIMED_OUT`` for a topic still there after ``timeout_ms`` (0 or less: at once).
``forward_id`` is as in CreateTopics.
"""
from __future__ import annotations

from typing import ClassVar

from actors.core.errors import ErrorCode
from actors.core.messages._base import message


@message
class DeleteTopicsRequest:
    API_KEY: ClassVar[int] = 20
    topic_names: tuple[str, ...]
    timeout_ms: int = 60000
    forward_id: int = 0


@message
class DeletableTopicResult:
    name: str
    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None


@message
class DeleteTopicsResponse:
    responses: tuple[DeletableTopicResult, ...]
    throttle_time_ms: int = 0


def refused(request: DeleteTopicsRequest, code: ErrorCode) -> DeleteTopicsResponse:
    """The answer that gives every topic of ``request`` the one error ``code``."""
    return DeleteTopicsResponse(responses=tuple(DeletableTopicResult(name=n, error_code=code)
                                                for n in request.topic_names))
