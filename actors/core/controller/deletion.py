"""Topic deletion, as Kafka 2.4's ``TopicDeletionManager``.

Theory of operation. A topic queued for deletion is persisted in the metadata store first, so a
new controller resumes the deletion. Deletion then runs per replica: every broker is told (by
UpdateMetadata with leader -2) to forget the topic's partitions; each live replica is stopped and
deleted (StopReplica with ``delete_partitions``, replica state DELETION_STARTED); a replica on a
dead broker is DELETION_INELIGIBLE and retried when its broker returns. When every replica of the
topic has answered success, the topic is removed from the store and the controller's context.
Until then the topic's name stays taken (TOPIC_ALREADY_EXISTS for a new topic of that name).
A broker's resync repeats the StopReplica of its replicas still being deleted, which the dropped
queue or dead send thread that caused the resync may have lost.
"""
from __future__ import annotations

from typing import Any

from actors.core.controller.broker_requests import BrokerRequests
from actors.core.controller.state import PartitionState, ReplicaState
from actors.core.effects import Effect, LogEvent, Respond
from actors.core.errors import ErrorCode
from actors.core.messages.delete_topics import DeletableTopicResult, DeleteTopicsRequest, DeleteTopicsResponse
from actors.core.messages.stop_replica import StopReplicaRequest


class TopicDeletion:
    def __init__(self, requests: BrokerRequests) -> None:
        self.requests = requests

    @property
    def context(self):
        return self.requests.context

    def handle_delete_topics(self, request_id: int, request: DeleteTopicsRequest) -> list[Effect]:
        """Queue the known topics (a topic queued already is fine, as in Kafka) and answer at once."""
        results = []
        to_delete = []
        for name in request.topic_names:
            if name not in self.context.topics:
                results.append(DeletableTopicResult(name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            results.append(DeletableTopicResult(name=name))
            if name not in self.context.topics_to_delete:
                to_delete.append(name)
        effects = self.enqueue(to_delete)
        effects.append(Respond(request_id=request_id, response=DeleteTopicsResponse(responses=tuple(results))))
        return effects

    def enqueue(self, names: list[str]) -> list[Effect]:
        for name in names:
            self.context.mark_for_deletion(name)
        return self.resume()

    def resume(self) -> list[Effect]:
        """Start (or retry) deletion of every replica not yet deleted, of every queued topic."""
        context = self.context
        if not context.topics_to_delete:
            return []
        batch = self.requests.batch
        batch.new_batch()
        live = context.live_or_shutting_down_broker_ids
        effects: list[Effect] = []
        for name in sorted(context.topics_to_delete):
            partitions = [(name, p) for p in sorted(context.topics[name].assignment)]
            batch.add_update_metadata_request_for_brokers(live, partitions)
            for topic_partition in partitions:
                if context.partition_states.get(topic_partition) != PartitionState.OFFLINE_PARTITION:
                    context.partition_states.transition(topic_partition, PartitionState.OFFLINE_PARTITION)
                for broker_id in context.replicas(topic_partition):
                    self._start_replica_deletion(topic_partition, broker_id, broker_id in live)
        effects += self.requests.flush()
        return effects + self._complete_finished()

    def _start_replica_deletion(self, topic_partition, broker_id: int, is_live: bool) -> None:
        states = self.context.replica_states
        replica = (topic_partition, broker_id)
        if replica not in states:
            states.initialize(replica, ReplicaState.OFFLINE_REPLICA)
        current = states.get(replica)
        if current in (ReplicaState.REPLICA_DELETION_SUCCESSFUL, ReplicaState.REPLICA_DELETION_STARTED):
            return
        states.transition(replica, ReplicaState.OFFLINE_REPLICA)
        if is_live:
            states.transition(replica, ReplicaState.REPLICA_DELETION_STARTED)
            self.requests.batch.add_stop_replica_request_for_brokers([broker_id], topic_partition,
                                                                     delete_partition=True)
        else:
            states.transition(replica, ReplicaState.REPLICA_DELETION_INELIGIBLE)

    def resend_stop_replicas(self, broker_id: int) -> None:
        """Add to the batch a StopReplica (delete) for each of ``broker_id``'s replicas still being
        deleted: its send thread was replaced or its queue dropped, so the first may be lost."""
        for name in sorted(self.context.topics_to_delete):
            for topic_partition, replica_id in self.context.replica_states.replicas_in(
                    ReplicaState.REPLICA_DELETION_STARTED, topic=name):
                if replica_id == broker_id:
                    self.requests.batch.add_stop_replica_request_for_brokers(
                        [broker_id], topic_partition, delete_partition=True)

    def on_brokers_dead(self, broker_ids: list[int]) -> list[Effect]:
        states = self.context.replica_states
        for name in self.context.topics_to_delete:
            for replica in states.replicas_in(ReplicaState.REPLICA_DELETION_STARTED, topic=name):
                if replica[1] in broker_ids:
                    states.transition(replica, ReplicaState.REPLICA_DELETION_INELIGIBLE)
        return []

    def on_stop_replica_response(self, broker_id: int, request: Any, response: Any) -> list[Effect]:
        if not isinstance(request, StopReplicaRequest) or not request.delete_partitions:
            return []
        context = self.context
        failed = {(e.topic_name, e.partition_index) for e in getattr(response, "partition_errors", ())
                  if e.error_code != ErrorCode.NONE}
        whole_request_failed = response.error_code != ErrorCode.NONE
        for topic in request.topics:
            if topic.name not in context.topics_to_delete:
                continue
            for index in topic.partition_indexes:
                replica = ((topic.name, index), broker_id)
                if context.replica_states.get(replica) != ReplicaState.REPLICA_DELETION_STARTED:
                    continue
                ok = not whole_request_failed and (topic.name, index) not in failed
                context.replica_states.transition(
                    replica, ReplicaState.REPLICA_DELETION_SUCCESSFUL if ok else ReplicaState.REPLICA_DELETION_INELIGIBLE)
        return self._complete_finished()

    def _complete_finished(self) -> list[Effect]:
        context = self.context
        effects: list[Effect] = []
        for name in sorted(context.topics_to_delete):
            replicas = [((name, p), b) for p, rs in context.topics[name].assignment.items() for b in rs]
            if all(context.replica_states.get(r) == ReplicaState.REPLICA_DELETION_SUCCESSFUL for r in replicas):
                context.remove_topic(name)
                effects.append(LogEvent(level="info", message=f"deleted topic {name}"))
        return effects
