"""Replication with the fetch channel off (``raykafka.replica.fetch.channel.enable=false``): the
way a follower's Fetches and large answers go when the leader's TCP channel is not used, on a
2-broker cluster of its own (tests/integration/test_replication.py runs them over the channels)."""
from __future__ import annotations

import pytest

from tests.integration.test_replication import CONFIG
from tests.support.clusters import running_cluster
from tests.support.replication_carriers import replicate_small_and_large

pytestmark = pytest.mark.integration


def test_without_the_fetch_channel_large_answers_travel_in_rays_shared_memory(ray_session, tmp_path_factory):
    """``raykafka.replica.fetch.channel.enable=false``: Fetches are Ray calls, and a large answer's
    records one object in shared memory, which the fetcher hands its broker through Ray; small
    ones still go to the broker over the local channel. The replicas end identical."""
    config = CONFIG | {"raykafka.replica.fetch.channel.enable": "false"}
    with running_cluster(tmp_path_factory, config, brokers=2) as two:
        _, before, after = replicate_small_and_large(two, "shared-memory")
    assert after["leader_calls", "channel"] == 0 and after["leader_calls", "ray"] > before["leader_calls", "ray"]
    assert after["local_calls", "channel"] - before["local_calls", "channel"] >= 30, (before, after)
    assert after["local_calls", "ray"] > before["local_calls", "ray"], "the large answers' appends went through Ray"
