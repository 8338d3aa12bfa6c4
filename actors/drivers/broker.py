"""The broker's driver: a ``BrokerCore`` and its effects, for the Ray shell and the simulator.

Theory of operation. Kafka requests reach the core through ``handle`` (checked, given an id, and
answered by ``Respond``, at once or from a purgatory). The core's other effects:

- ``Send("controller", request)``: a call to the active controller (registration, heartbeats,
  AlterPartition, controlled shutdown, CreateTopics for __consumer_offsets, a client's CreateTopics
  and DeleteTopics); its answer, or
  ``NETWORK_EXCEPTION`` whatever the failure (the broker looks the controller up again and
  retries as the core decides), goes back into the core.
- ``AddPartitionsToFetcher`` / ``RemovePartitionsFromFetcher``: Kafka's fetcher manager. The
  fetcher for (leader id, fetcher id) is started when first needed and told the change (in
  order); ``stop_fetcher`` stops it (Kafka's idle-fetcher shutdown) as ``stop(..., idle=True)``:
  the Ray host then keeps the actor, following nothing, for
  ``raykafka.replica.fetcher.idle.keep.ms`` and hands it the next partitions of that leader, since
  a new actor is a new process (actors/broker.py). A fetcher that died is replaced by
  ``on_fetcher_died``, starting from where this broker's logs end now.
- ``CoordinatorLeadershipChange`` / ``CoordinatorMetadataUpdate``: told to this broker's group
  coordinator, which fences them by leader epoch and by version, so order and loss are harmless.

The group coordinator's own calls (its writes to ``__consumer_offsets``, the reads of a load, the
look at this broker's incarnation and leaderships) come in through ``serve_coordinator``.

Fetch answers carry record payloads; the messenger's ``pack`` may turn a large one into a form
that travels without a copy (a shared-memory object for Ray), chosen per answer here, not by the
core. ``StorageWork`` (every fsync, checkpoint and snapshot write and directory removal: the
periodic flush, segment rolls, truncations, deletions) goes to the storage worker seam, which runs
it off the driver's thread; when it is done the core commits it (``on_storage_done``), so a slow
fsync never holds up a request. ``LogDirFailure`` (the broker's log directory failed, see
actors/core/replica/log_dir_failure_handler.py) stops the broker: its fetchers are stopped, nothing is
stepped any more, and the host's ``halt`` ends the process (Ray: the actor exits and Ray starts it
again; the simulator: the node goes down and comes back), as Kafka halts. ``shutdown`` is a clean stop: fetchers stopped, and the logs'
last flush and checkpoints handed to the storage worker, which the host then waits for; nothing
is answered once it began (a work's report after it is dropped).

A follower's Fetch answer is packed whole (``pack_together``): the payloads of all its partitions
travel together, as one object, however many partitions it names (actors/shared_records.py).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from actors.core.apis import BROKER
from actors.core.effects import (
    AddPartitionsToFetcher, CoordinatorLeadershipChange, CoordinatorMetadataUpdate, LogDirFailure,
    RemovePartitionsFromFetcher, Send, StorageWork,
)
from actors.core.errors import ErrorCode
from actors.core.group.messages import (
    GROUP_METADATA_TOPIC_NAME, BrokerStateRequest, BrokerStateResponse, InternalProduceRequest, OffsetsLogReadRequest,
    OffsetsLogReadResponse,
)
from actors.core.log.log_work import run_log_work
from actors.core.log.storage import Storage
from actors.core.messages.fetch import FetchRequest, FetchResponse
from actors.core.broker.broker_core import BrokerCore
from actors.drivers.base import Driver
from actors.drivers.seams import Clock, EventLog, InlineStorageWorker, Reply, StorageWorker, Messenger

# How long the controller may take to answer one of this broker's requests.
CONTROLLER_CALL_TIMEOUT_MS = 5_000
FetcherKey = tuple[int, int]  # (leader id, fetcher id)


def fetcher_name(key: FetcherKey) -> str:
    return f"fetcher:{key[0]}:{key[1]}"


def run_storage_work(storage: Storage, work: StorageWork) -> None:
    """Do ``work`` on ``storage`` (on the storage worker's thread): its fsyncs, files, deletes."""
    run_log_work(storage, work.fsync_paths, work.files, work.delete_paths)


class BrokerDriver(Driver):
    kind = BROKER

    def __init__(self, core: BrokerCore, messenger: Messenger, clock: Clock, log: EventLog,
                 storage_worker: StorageWorker | None = None, halt: Callable[[str], None] | None = None) -> None:
        super().__init__(f"broker {core.broker_id}", messenger, clock, log)
        self.core = core
        # The host's end of this process after a log directory failure (None: only stop stepping).
        self._halt = halt
        self.halted = False  # after a log directory failure: nothing but answers goes out
        self.storage_worker = storage_worker if storage_worker is not None else InlineStorageWorker()
        self.fetchers: set[FetcherKey] = set()  # started and not stopped (alive, as far as we know)
        self.stopped = False

    # ----------------------------------------------------------------------------- inputs
    def start(self) -> None:
        """Register with the controller: after a restart nobody else will call this broker first."""
        self.apply(self.core.start(self.now_ms()))

    def handle(self, request: Any, respond: Reply, *, shared_memory: bool = True) -> None:
        """Step the core's handler for ``type(request)`` (actors/core/apis.py); a Fetch's answer
        has its records packed for the way back: a follower's all together (``pack_together``)
        unless ``shared_memory`` is False (it came over a channel that carries records itself),
        each partition's on its own otherwise (``pack``)."""
        if isinstance(request, FetchRequest):
            for_replica = isinstance(request.replica_id, int) and request.replica_id >= 0
            together = for_replica and shared_memory
            super().handle(request, lambda response: respond(self._pack(response, for_replica, together)))
            return
        super().handle(request, respond)

    def begin_controlled_shutdown(self, respond: Reply) -> None:
        """Ask the controller to move this broker's leaderships away; ``respond`` gets the outcome."""
        self.request(self.core.begin_controlled_shutdown, None, respond)

    def serve_coordinator(self, request: Any, respond: Reply) -> None:
        """A call from this broker's group coordinator (see ``actors.core.group.messages``)."""
        if isinstance(request, InternalProduceRequest):
            self.handle(request, respond)
        elif isinstance(request, OffsetsLogReadRequest):
            records, next_offset, log_end_offset = self.core.read_log(
                GROUP_METADATA_TOPIC_NAME, request.partition, request.offset, request.max_bytes)
            respond(OffsetsLogReadResponse(records=records, next_offset=next_offset, log_end_offset=log_end_offset))
        else:
            assert isinstance(request, BrokerStateRequest), f"{self.name} serves its coordinator no {request!r}"
            leaderships = request.include_leaderships
            respond(BrokerStateResponse(
                incarnation_id=self.core.incarnation_id,
                metadata=self.core.coordinator_metadata() if leaderships else None,
                offsets_partitions_led=tuple(self.core.offsets_partitions_led()) if leaderships else ()))

    def on_wakeup(self) -> None:
        if not self.stopped:
            self.apply(self.core.tick(self.now_ms()))

    def grab_filthiest_log(self):
        """The next round for this broker's log cleaner actor (a ``CleaningPlan``), or None."""
        return None if self.stopped else self.core.replica_manager.grab_filthiest_log(self.now_ms())

    def on_log_cleaned(self, cleaned) -> None:
        """The log cleaner actor wrote a round's cleaned segments: the swap runs on this step."""
        if not self.stopped:
            self.apply(self.core.replica_manager.done_cleaning(cleaned, self.now_ms()))

    def on_fetcher_died(self, key: FetcherKey) -> None:
        """A fetcher of this broker is gone: start another where this broker's logs end now."""
        if key not in self.fetchers or self.stopped:
            return
        states = self.core.fetch_states_for(key)
        if not states:
            self.fetchers.discard(key)  # nothing left for it; the next AddPartitions starts one
            return
        self.messenger.start(fetcher_name(key), leader_id=key[0], fetcher_id=key[1])
        self.messenger.tell(fetcher_name(key), AddPartitionsToFetcher(leader_id=key[0], fetcher_id=key[1],
                                                                      partitions=tuple(states)))

    def shutdown(self) -> None:
        """A clean shutdown: fetchers stopped, and the last work (everything flushed and
        checkpointed) handed to the storage worker, which the host waits for before it stops."""
        if self.stopped:
            return
        self.stopped = True
        for key in sorted(self.fetchers):
            self.messenger.stop(fetcher_name(key))
        self.fetchers.clear()
        self.apply(self.core.shutdown())

    def halt(self, reason: str) -> None:
        """The log directory failed: stop the fetchers, step nothing more, and let the host end
        the process (Kafka's ``Exit.halt``; no clean shutdown: nothing more is written)."""
        if self.stopped:
            return
        self.stopped = self.halted = True
        for key in sorted(self.fetchers):
            self.messenger.stop(fetcher_name(key))
        self.fetchers.clear()
        self.log.log("error", f"{self.name} halts: its log directory failed ({reason})")
        if self._halt is not None:
            self._halt(reason)

    # ---------------------------------------------------------------------------- effects
    def apply_own(self, effect: Any) -> None:
        if self.halted:
            return  # the rest of the step that failed: the process is ending
        if isinstance(effect, Send):
            assert effect.destination == "controller", effect
            request = effect.message
            timeout_ms = CONTROLLER_CALL_TIMEOUT_MS if effect.timeout_ms is None else effect.timeout_ms
            self.messenger.call("controller", request, timeout_ms=timeout_ms,
                                on_reply=lambda response: self._on_controller_response(request, response))
        elif isinstance(effect, AddPartitionsToFetcher):
            key = (effect.leader_id, effect.fetcher_id)
            if key not in self.fetchers:
                self.fetchers.add(key)
                self.messenger.start(fetcher_name(key), leader_id=key[0], fetcher_id=key[1])
            self.messenger.tell(fetcher_name(key), effect)
        elif isinstance(effect, RemovePartitionsFromFetcher):
            key = (effect.leader_id, effect.fetcher_id)
            if key not in self.fetchers:
                return
            if effect.stop_fetcher:
                # Idle: a host may keep it, following nothing, for the next partitions of that leader.
                self.fetchers.discard(key)
                self.messenger.stop(fetcher_name(key), idle=True)
            else:
                self.messenger.tell(fetcher_name(key), effect)
        elif isinstance(effect, (CoordinatorLeadershipChange, CoordinatorMetadataUpdate)):
            self.messenger.tell("coordinator", effect)
        elif isinstance(effect, LogDirFailure):
            self.halt(effect.reason)
        elif isinstance(effect, StorageWork):
            storage = self.core.storage
            self.storage_worker.run(lambda: run_storage_work(storage, effect),
                                    lambda error: self._on_storage_done(effect.work_id, error))
        else:
            super().apply_own(effect)

    def _on_storage_done(self, work_id: int, error: str | None) -> None:
        if not self.stopped:
            self.apply(self.core.on_storage_done(work_id, error, self.now_ms()))

    def _on_controller_response(self, request: Any, response: Any) -> None:
        if isinstance(response, ErrorCode):
            response = ErrorCode.NETWORK_EXCEPTION  # unreachable, restarting, paused or replaced alike
        self.apply(self.core.on_controller_response(request, response, self.now_ms()))

    def _pack(self, response: Any, for_replica: bool, together: bool) -> Any:
        if not isinstance(response, FetchResponse):
            return response
        if together:
            return self._pack_together(response)
        topics, changed = [], False
        for topic in response.responses:
            partitions = []
            for partition in topic.partitions:
                records = partition.records
                packed = records if not records else self.messenger.pack(records, for_replica=for_replica)
                changed |= packed is not records
                partitions.append(partition if packed is records else dataclasses.replace(partition, records=packed))
            topics.append(dataclasses.replace(topic, partitions=tuple(partitions)))
        return dataclasses.replace(response, responses=tuple(topics)) if changed else response

    def _pack_together(self, response: FetchResponse) -> FetchResponse:
        """A follower's answer: the records of all its partitions packed together, as one object
        (see actors/shared_records.py), not one per partition."""
        payloads = [p.records for t in response.responses for p in t.partitions if p.records]
        if not payloads:
            return response
        packed = iter(self.messenger.pack_together(payloads))
        return dataclasses.replace(response, responses=tuple(dataclasses.replace(topic, partitions=tuple(
            dataclasses.replace(p, records=next(packed)) if p.records else p for p in topic.partitions))
            for topic in response.responses))
