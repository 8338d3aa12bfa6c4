"""Ray's own messages, kept off a command's output: its Python log lines ("Connecting to existing Ray
cluster at address ...", the token-authentication warning) and the raylet's messages that Ray prints
on the driver's stdout ("A worker died ...", "N PYTHON worker processes have been started ...") go
to raykafka's log at DEBUG, so that ``--log-level DEBUG`` shows them and nothing else does.

The raylet's messages reach the driver through ``ray._private.worker.print_to_stdstream`` (Ray 2.60),
which a thread Ray starts in ``ray.init`` calls for each one; it is replaced here. Should a later Ray
move it, the messages print as before and nothing else changes.
"""
from __future__ import annotations

import logging

from loguru import logger


class _ToDebugLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        logger.debug("ray {} ({}): {}", record.levelname, record.name, record.getMessage())


def _raylet_message(data: dict, **_ray_options) -> None:
    for line in data.get("lines", ()):
        logger.debug("ray ({}): {}", data.get("pid"), line)


def route_rays_messages() -> None:
    """From now on in this process, Ray's messages go to raykafka's log at DEBUG."""
    rays = logging.getLogger("ray")
    rays.handlers[:] = [_ToDebugLog()]
    rays.propagate = False
    from ray._private import worker
    if hasattr(worker, "print_to_stdstream"):
        worker.print_to_stdstream = _raylet_message
