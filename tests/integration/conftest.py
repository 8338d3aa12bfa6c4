"""Integration tests share one local Ray per module: fixed CPUs, a unique namespace, temp log dirs."""
from __future__ import annotations

import uuid

import pytest
import ray

from tests.support.clusters import running_cluster

NUM_CPUS = 2


@pytest.fixture(scope="module")
def ray_session():
    assert not ray.is_initialized(), "another test left Ray running"
    ray.init(address="local", num_cpus=NUM_CPUS, namespace=f"raykafka-test-{uuid.uuid4().hex[:8]}",
             include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().namespace
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory) as started:
        yield started
