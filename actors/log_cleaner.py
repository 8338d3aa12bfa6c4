"""The log cleaner actor: Kafka's ``LogCleaner`` thread as a Ray actor, one per broker, started,
placed and watched by its broker as the broker's fetchers are (actors/broker.py).

A round: ask the broker for the dirtiest compacted log (a ``CleaningPlan``,
actors/core/log/cleaner_manager.py), read that log's segment files from the broker's log directory,
clean them and write the ``.cleaned`` files (actors/core/log/cleaner.py), on a thread of this
actor so that it still answers its broker's pings, then hand the result back for the broker to
swap in. No log to clean: wait ``log.cleaner.backoff.ms``. Reading is throttled to
``log.cleaner.io.max.bytes.per.second``. Killing this actor at any point leaves the broker's logs
whole: it never touches a live file (the swap is the broker's), and its broker starts another.
"""
from __future__ import annotations

import asyncio
import time

from loguru import logger
import ray

from actors.core.config import KafkaConfig
from actors.core.log.cleaner import CleaningPlan, carry_out_round, offset_map_entries
from actors.file_storage import FileStorage
from actors.process_memory import keep_freed_memory


class LogCleanerActor:
    def __init__(self, *, broker_id: int, log_dir: str, config: dict[str, str], broker) -> None:
        keep_freed_memory(config)  # a new buffer reuses the pages of one freed (actors/process_memory.py)
        self.broker_id = broker_id
        self._log_dir = log_dir
        self._broker = broker
        kafka_config = KafkaConfig(config)
        self._backoff_s = kafka_config.get_int("log.cleaner.backoff.ms") / 1000
        self._offset_map_entries = offset_map_entries(kafka_config.get_int("log.cleaner.dedupe.buffer.size", 1))
        self._io_bytes_per_s = float(kafka_config.get_str("log.cleaner.io.max.bytes.per.second"))
        self._phase = "idle"
        self._rounds = 0
        self._last: str | None = None
        # Ray runs an async actor's constructor inside its event loop.
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            try:
                plan = await self._broker.cleaner_plan.remote()
            except Exception as exc:  # the broker is restarting; this actor dies with it anyway
                logger.info("log cleaner {}: no plan from the broker ({})", self.broker_id, type(exc).__name__)
                plan = None
            if plan is None:
                self._phase = "idle"
                await asyncio.sleep(self._backoff_s)
                continue
            self._phase = f"cleaning {plan.key}"
            try:
                cleaned = await asyncio.to_thread(self._clean, plan)
            except Exception as exc:  # a segment deleted or truncated under it: try again later
                logger.warning("log cleaner {}: cleaning {} failed: {}: {}", self.broker_id, plan.key,
                               type(exc).__name__, exc)
                await asyncio.sleep(self._backoff_s)
                continue
            self._phase = f"swapping {plan.key}"
            try:
                await self._broker.cleaner_done.remote(cleaned)
            except Exception as exc:
                logger.info("log cleaner {}: the broker took no result ({})", self.broker_id, type(exc).__name__)
                continue
            self._rounds += 1
            self._last = cleaned.summary
            logger.info("log cleaner {}: {}", self.broker_id, cleaned.summary)

    def _clean(self, plan: CleaningPlan):
        # A storage of its own each round: a descriptor kept from a round before would still read a
        # segment file the broker has swapped out since.
        storage = FileStorage(self._log_dir)
        try:
            return carry_out_round(plan, storage, offset_map_entries=self._offset_map_entries,
                                   on_segment_read=self._throttle)
        finally:
            storage.close()

    def _throttle(self, read_bytes: int) -> None:
        """Kafka's cleaner ``Throttler``: after a read, wait as long as that many bytes take at the
        configured rate (this runs on the cleaning thread, never on the event loop)."""
        if read_bytes > 0 and self._io_bytes_per_s < float("inf"):
            time.sleep(read_bytes / self._io_bytes_per_s)

    async def ping(self) -> dict:
        return {"broker_id": self.broker_id}

    async def describe(self) -> dict:
        """What it does now (``idle``, ``cleaning <partition>``, ``swapping <partition>``), the
        rounds it finished and the last one's summary."""
        return {"broker_id": self.broker_id, "phase": self._phase, "rounds": self._rounds, "last": self._last}


LogCleanerRemote = ray.remote(LogCleanerActor)
