"""The group coordinator's lag gauges on Ray: every ``LAG_INTERVAL_S`` the committed offsets of its
groups are compared with the partitions' latest offsets, asked of their leaders with ListOffsets
(the leaders found in this coordinator's broker's metadata), and exported as
``raykafka_consumer_group_lag`` (see actors/core/group/lag.py). A broker that does not answer
leaves its partitions out of that pass."""
from __future__ import annotations

import asyncio

import ray
from loguru import logger

from actors.core.group.lag import committed_offsets, lag_metrics, latest_offsets, latest_offsets_requests
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
    metadata = await asyncio.wait_for(own.handle.remote(MetadataRequest(topics=topics)), CALL_TIMEOUT_S)
    ends = {}
    for leader, request in latest_offsets_requests(metadata, wanted).items():
        try:
            answer = await asyncio.wait_for(ray.get_actor(broker_name(leader), namespace=namespace)
                                            .handle.remote(request), CALL_TIMEOUT_S)
        except Exception as exc:
            logger.debug("lag: broker {} gave no offsets: {!r}", leader, exc)
            continue
        ends.update(latest_offsets(answer))
    return ends
