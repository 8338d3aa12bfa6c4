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

import os
from collections.abc import MutableMapping

import ray
from loguru import logger
from tenacity import RetryError, Retrying, stop_after_attempt, wait_exponential

from actors.shared_records import RAY_INLINE_BYTES_ENV

START_ATTEMPTS = 3
# Ray frees objects nobody references in batches, every free_objects_period_milliseconds (1000 by
# default). Meanwhile a consumer reading at 400 MB/s leaves about a second of fetch answers in the
# object store, pages the brokers wrote that count in their resident memory: in a 1 GiB backlog
# read (benchmarks/throughput.py --backlog) 457 MB of it at 1000 ms, 90 MB at 100 ms.
LOCAL_RAY_SYSTEM_CONFIG = {"free_objects_period_milliseconds": 100}
# Ray hands an object of up to max_direct_call_object_size bytes over inside the call's message and
# puts a bigger one into its shared-memory object store (100 KiB by default). A replica fetcher's
# round is two calls, and its records an object from 100 KiB up: on this 2-core machine an object
# cost a round about 2 ms and 3 ms of CPU more than the same records inline, up to about 1 MB
# (benchmarks/replication_round.py). The Rays raykafka starts let objects of up to 2 MiB travel
# inline; a leader then sends a follower its records inline below a quarter of that
# (actors/shared_records.py). Set in the environment, where every Ray process started from it
# reads it, raykafka's shells included; a Ray started with the variable already set keeps its value.
LOCAL_RAY_INLINE_BYTES = 2 * 1024 * 1024


def with_raykafka_ray_environment(environment: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """``environment`` (``os.environ``, or a child's copy of it) with the Ray settings raykafka
    starts its Rays with, where it does not name them already."""
    environment.setdefault(RAY_INLINE_BYTES_ENV, str(LOCAL_RAY_INLINE_BYTES))
    return environment


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
    with_raykafka_ray_environment(os.environ)

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

