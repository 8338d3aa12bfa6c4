"""Integration tests share one local Ray head per session (fixed CPUs, its own temp dir), each module
connected to it as a job of its own with a unique namespace, and temp log dirs."""
from __future__ import annotations

import uuid
import warnings

import pytest
import ray

from tests.support.clusters import running_cluster

NUM_CPUS = 2


@pytest.fixture(scope="session")
def session_ray_head():
    """One local Ray head for the session (``tests.support.session_ray``), started when a module
    first asks for it and stopped at the session's end."""
    from tests.support.session_ray import start_session_head
    head = start_session_head(num_cpus=NUM_CPUS)
    try:
        yield head
    finally:
        head.stop()


@pytest.fixture(scope="module")
def ray_session(session_ray_head):
    """This module's own job on the session's Ray head: a unique namespace, joined once whatever
    the modules before it started has ended, and left at the module's end (Ray then ends the
    module's actors and placement groups)."""
    # A module that failed must not leave its Ray behind for the next one: shut it down and say so
    # (the module that left it is the one to fix), rather than fail every module after it.
    if ray.is_initialized():
        warnings.warn("an earlier test left Ray running; it was shut down before this module")
        ray.shutdown()
    session_ray_head.connect(namespace=f"raykafka-test-{uuid.uuid4().hex[:8]}")
    try:
        yield ray.get_runtime_context().namespace
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def cluster(ray_session, tmp_path_factory):
    with running_cluster(tmp_path_factory) as started:
        yield started


@pytest.fixture(scope="module")
def netns_hosts(request):
    """Hosts made of network namespaces with a Ray node each (``tests.support.netns_hosts``), shared by
    a module and always torn down. A module sets ``NETNS_HOST_COUNT`` (3), ``NETNS_NUM_CPUS`` (1) and
    ``NETNS_RAY_ENV`` ({}) to change them. Skips where network namespaces cannot be made."""
    from tests.support.netns_hosts import NetnsHosts, netns_unavailable_reason
    reason = netns_unavailable_reason()
    if reason:
        pytest.skip(reason)
    with NetnsHosts(getattr(request.module, "NETNS_HOST_COUNT", 3),
                    num_cpus=getattr(request.module, "NETNS_NUM_CPUS", 1),
                    ray_env=getattr(request.module, "NETNS_RAY_ENV", None)) as hosts:
        yield hosts


@pytest.fixture(scope="session")
def apache_kafka(kafka_libs, tmp_path_factory):
    """A 1-node Apache Kafka (KRaft) on 127.0.0.1, shared by the conformance modules of a session
    (each uses topic and group names of its own); a module that needs another shape defines its
    own ``apache_kafka``."""
    from orchestration.apache_kafka import ApacheKafkaCluster
    with ApacheKafkaCluster(kafka_libs, tmp_path_factory.mktemp("apache-kafka"), nodes=1) as started:
        yield started


@pytest.fixture(scope="module")
def systems(apache_kafka, cluster):
    """A conformance module's two systems' bootstrap servers, Apache Kafka first."""
    from tests.support.conformance import APACHE, RAYKAFKA
    return {APACHE: apache_kafka.bootstrap_servers, RAYKAFKA: cluster.bootstrap_servers}


@pytest.fixture(scope="module")
def table(request):
    """check -> system -> what it showed (``tests.support.conformance.record`` fills it); printed
    when the module ends, under the module's ``CONFORMANCE_TABLE`` title."""
    from tests.support.conformance import print_table
    rows: dict[str, dict[str, str]] = {}
    yield rows
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None and rows:
        with capture.global_and_fixture_disabled():
            print_table(reporter, rows, getattr(request.module, "CONFORMANCE_TABLE", "Kafka's tools"))


@pytest.fixture(scope="session")
def kafka_libs():
    """Apache Kafka's jars (orchestration.apache_kafka), fetched once and then reused from the cache;
    a test that needs them skips, saying what to install, where Java or Maven is missing."""
    from orchestration.apache_kafka import KafkaUnavailable, fetch_kafka, unavailable_reason
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    try:
        return fetch_kafka()
    except KafkaUnavailable as error:
        pytest.fail(f"Java and Maven are here, yet Apache Kafka's jars could not be fetched: {error}")
