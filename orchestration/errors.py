"""The exception clients raise for a Kafka error code."""
from __future__ import annotations

from actors.core.errors import ErrorCode


class KafkaError(Exception):
    """A request answered with a Kafka error: ``.name`` is Kafka's error name, ``.code`` its number."""

    def __init__(self, error_code: ErrorCode | int, message: str = "") -> None:
        self.error_code = ErrorCode(error_code)
        self.name = self.error_code.name
        self.code = int(self.error_code)
        self.message = message
        super().__init__(f"{self.name} ({self.code}){': ' + message if message else ''}")

    @property
    def retriable(self) -> bool:
        return self.error_code.retriable
