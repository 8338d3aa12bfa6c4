"""The group coordinator's lag gauges on Ray: every ``LAG_INTERVAL_S`` the committed offsets of its
groups are compared with the partitions' latest offsets, asked of their leaders with ListOffsets
(the leaders found in this coordinator's broker's metadata), and exported as
``raykafka_consumer_group_lag`` (see actors/core/group/lag.py). A broker that does not answer
leaves its partitions out of that pass."""
from __future__ import annotations

import asyncio

import ray
from loguru import logger

from actors.core.group.lag import committed_offsets, lag_metrics
from actors.core.messages.list_offsets import LATEST_TIMESTAMP, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from actors.core.messages.metadata import MetadataRequest

LAG_INTERVAL_S = 5.0
CALL_TIMEOUT_S = 5.0


async def export_lag_forever(*, broker_id: int, namespace: str, groups, broker_name, event_log) -> None:
    """``groups()`` gives the coordinator's groups; ``broker_name(id)`` a broker's actor name."""
    while True:
        await asyncio.sleep(LAG_INTERVAL_S)
        try:
            committed = committed_offsets(groups())
            if committed:
                ends = await _end_offsets(broker_id, namespace, {tp for _, tp in committed}, broker_name)
                for metric in lag_metrics(broker_id, committed, ends):
                    event_log.metric(metric.name, metric.value, metric.tags)
        except Exception as exc:  # a pass that fails is retried on the next one
            logger.warning("group coordinator {}: lag pass failed: {!r}", broker_id, exc)


async def _end_offsets(broker_id: int, namespace: str, wanted: set, broker_name) -> dict:
    own = ray.get_actor(broker_name(broker_id), namespace=namespace)
    topics = tuple(sorted({t for t, _ in wanted}))
    metadata = await asyncio.wait_for(own.handle_metadata.remote(MetadataRequest(topics=topics)), CALL_TIMEOUT_S)
    by_leader: dict[int, list] = {}
    for topic in metadata.topics:
        for p in topic.partitions:
            if (topic.name, p.partition_index) in wanted and p.leader_id >= 0:
                by_leader.setdefault(p.leader_id, []).append((topic.name, p.partition_index))
    ends = {}
    for leader, partitions in sorted(by_leader.items()):
        request = ListOffsetsRequest(topics=tuple(
            ListOffsetsTopic(name=t, partitions=tuple(ListOffsetsPartition(partition_index=i, timestamp=LATEST_TIMESTAMP)
                                                      for tt, i in partitions if tt == t))
            for t in sorted({t for t, _ in partitions})))
        try:
            answer = await asyncio.wait_for(ray.get_actor(broker_name(leader), namespace=namespace)
                                            .handle_list_offsets.remote(request), CALL_TIMEOUT_S)
        except Exception as exc:
            logger.debug("lag: broker {} gave no offsets: {!r}", leader, exc)
            continue
        for topic in answer.topics:
            for p in topic.partitions:
                if p.error_code == 0 and p.offset >= 0:
                    ends[(topic.name, p.partition_index)] = p.offset
    return ends
