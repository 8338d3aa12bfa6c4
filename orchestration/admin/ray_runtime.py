"""Starting a local Ray that survives a busy machine.

Ray's start-up is a handful of processes (GCS, raylet, object store, agents) that must find each
other within Ray's own time limits. On a small machine that is already running another Ray (a
second test run, a benchmark, a Spark job), one of them can miss its limit and ``ray.init``
raises, sometimes after it has half-connected this process. ``start_local_ray`` makes that a
bounded retry: each failed attempt is shut down completely before the next, so no later
``ray.is_initialized()`` check sees a half-started Ray, and the last failure is raised with what
was tried and where Ray's own logs are.
"""
from __future__ import annotations

import ray
from loguru import logger
from tenacity import RetryError, Retrying, stop_after_attempt, wait_exponential

START_ATTEMPTS = 3
# Ray frees objects nobody references in batches, every free_objects_period_milliseconds (1000 by
# default). Meanwhile a consumer reading at 400 MB/s leaves about a second of fetch answers in the
# object store, pages the brokers wrote that count in their resident memory: in a 1 GiB backlog
# read (benchmarks/throughput.py --backlog) 457 MB of it at 1000 ms, 90 MB at 100 ms.
LOCAL_RAY_SYSTEM_CONFIG = {"free_objects_period_milliseconds": 100}
RAY_SESSION_LOGS = "/tmp/ray/session_latest/logs"


class RayStartError(RuntimeError):
    """A local Ray could not be started in ``START_ATTEMPTS`` attempts."""


def _shutdown_quietly() -> None:
    try:
        ray.shutdown()
    except Exception as exc:  # a half-started Ray can fail its own shutdown; the next try starts afresh
        logger.warning("shutting down a half-started Ray failed: {!r}", exc)


def start_local_ray(*, num_cpus: int | None, namespace: str, attempts: int = START_ATTEMPTS,
                    first_wait_s: float = 1.0, **init_kwargs) -> None:
    """Start a new local Ray (never join one recorded on this machine) in ``namespace``.

    ``address="local"`` keeps a test or a chaos run from joining whatever Ray another process
    started (``/tmp/ray/ray_current_cluster``). Between attempts the failed Ray is shut down and
    the wait grows (1 s, 2 s, ...): the usual cause is a machine too busy for Ray's start-up
    limits, which a short wait relieves."""
    assert not ray.is_initialized(), "start_local_ray starts a Ray of its own: shut the current one down first"
    init_kwargs.setdefault("include_dashboard", False)
    init_kwargs.setdefault("log_to_driver", False)
    init_kwargs["_system_config"] = {**LOCAL_RAY_SYSTEM_CONFIG, **(init_kwargs.get("_system_config") or {})}

    def attempt() -> None:
        try:
            ray.init(address="local", num_cpus=num_cpus, namespace=namespace, **init_kwargs)
        except BaseException as exc:
            logger.warning("starting a local Ray (num_cpus={}) failed: {!r}", num_cpus, exc)
            _shutdown_quietly()
            raise

    try:
        for try_ in Retrying(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=first_wait_s, max=8),
                             reraise=False):
            with try_:
                attempt()
    except RetryError as exc:
        last = exc.last_attempt.exception()
        raise RayStartError(
            f"could not start a local Ray (num_cpus={num_cpus}, namespace={namespace}) in {attempts} attempts; "
            f"last error: {last!r}. The machine may be too busy or out of /tmp space (df -h /tmp); "
            f"Ray's own logs are in {RAY_SESSION_LOGS}") from last

