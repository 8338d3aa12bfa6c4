"""ControlledShutdown on the controller: Kafka 2.4's ``doControlledShutdown``.

A broker about to stop asks the controller to move its leaderships elsewhere first, so clients
see a leader change instead of an outage. The controller marks the broker shutting down, elects a
new leader from the rest of the ISR for every partition it leads (a partition with a single
replica, or of a topic being deleted, is left alone), stops its follower replicas and takes them
out of their ISRs, and answers with the leaderships that remain. The broker retries until none
remain. A request from an unknown broker is answered ``BROKER_NOT_AVAILABLE``, one with an older
broker epoch ``STALE_BROKER_EPOCH``.
"""
from __future__ import annotations

from actors.core.controller import elections
from actors.core.controller.broker_requests import BrokerRequests
from actors.core.effects import Effect, LogEvent, Respond
from actors.core.errors import ErrorCode
from actors.core.messages.controlled_shutdown import (
    ControlledShutdownRequest, ControlledShutdownResponse, RemainingPartition,
)


def handle_controlled_shutdown(requests: BrokerRequests, request_id: int, request: ControlledShutdownRequest,
                               error) -> list[Effect]:
    """Lead elsewhere, leave the ISRs, report what remains."""
    context = requests.context
    info = context.brokers.get(request.broker_id)
    if info is None:
        return [Respond(request_id=request_id, response=error(ErrorCode.BROKER_NOT_AVAILABLE))]
    if request.broker_epoch != -1 and request.broker_epoch < info.broker_epoch:
        return [Respond(request_id=request_id, response=error(ErrorCode.STALE_BROKER_EPOCH))]
    info.shutting_down = True
    broker_id = request.broker_id
    requests.batch.new_batch()
    for topic_partition in context.partitions_on_broker(broker_id):
        replicas = context.replicas(topic_partition)
        current = context.leadership.get(topic_partition)
        if current is None or len(replicas) <= 1 or topic_partition[0] in context.topics_to_delete:
            continue
        if current.leader == broker_id:
            result = elections.elect_for_controlled_shutdown(
                leader_and_isr=current, assignment=replicas, live_replicas=context.live_broker_ids,
                shutting_down_brokers=context.shutting_down_broker_ids,
                controller_epoch=requests.controller_epoch)
            if result.leader_and_isr is not None:
                context.set_leadership(topic_partition, result.leader_and_isr)
                requests.add_leader_and_isr(topic_partition, result.live_replicas_to_notify)
        else:
            requests.batch.add_stop_replica_request_for_brokers([broker_id], topic_partition,
                                                                delete_partition=False)
            requests.replica_offline(topic_partition, broker_id)
    effects = requests.flush()
    # Kafka's replicatedPartitionsBrokerLeads: topics queued for deletion are not waited for.
    remaining = [tp for tp in context.partitions_led_by(broker_id)
                 if len(context.replicas(tp)) > 1 and tp[0] not in context.topics_to_delete]
    effects.append(LogEvent(level="info", message=f"[controller epoch {requests.controller_epoch}] broker "
                                                  f"{broker_id} shutting down; {len(remaining)} leaderships remain"))
    effects.append(Respond(request_id=request_id, response=ControlledShutdownResponse(
        remaining_partitions=tuple(RemainingPartition(topic_name=t, partition_index=p) for t, p in remaining))))
    return effects
