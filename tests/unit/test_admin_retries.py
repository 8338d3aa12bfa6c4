"""Proves that Cluster's admin calls behave as Kafka's AdminClient does (retriable errors retried
with backoff until timeout_ms, then the last one raised; other errors at once; a retried create or
delete that finds its own earlier attempt's work succeeds) and that a client sees the broker's own
error code for an error the actor raised, by running a Cluster without Ray against a scripted
controller and scripted group coordinators."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from ray.exceptions import ActorDiedError, ActorUnavailableError, GetTimeoutError, RayTaskError

from actors.core.apis import api_of
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.create_topics import CreatableTopicResult, CreateTopicsResponse
from actors.core.messages.delete_topics import DeletableTopicResult, DeleteTopicsResponse
from actors.core.messages.describe_groups import DescribedGroup, DescribeGroupsResponse
from actors.core.messages.elect_leaders import ElectLeadersResponse, PartitionResult, ReplicaElectionResult
from actors.core.messages.find_coordinator import FindCoordinatorResponse
from actors.core.messages.list_groups import ListedGroup, ListGroupsResponse
from actors.core.messages.offset_fetch import OffsetFetchResponse
from orchestration.admin import groups
from orchestration.clients.broker_directory import as_kafka_error
from orchestration.admin.admin_client import PartitionDescription
from orchestration.admin.cluster import Cluster
from orchestration.errors import KafkaError

TOPIC = "t"
SHORT_TIMEOUT_MS = 300  # for the calls that are meant to run out of time


def restarting() -> ActorUnavailableError:
    return ActorUnavailableError("The actor is restarting", None)


def not_controller() -> KafkaError:
    """What Cluster.controller() raises while no controller has published itself."""
    return KafkaError(ErrorCode.NOT_CONTROLLER, "no active controller")


class Scripted:
    """Answers calls by method name from a script, in turn (the last entry from then on): an
    exception is raised, anything else is the answer. ``calls`` lists the methods called."""

    def __init__(self, **script) -> None:
        self.script = {method: list(entries) for method, entries in script.items()}
        self.calls: list[str] = []

    def answer(self, method: str):
        self.calls.append(method)
        entries = self.script[method]
        entry = entries.pop(0) if len(entries) > 1 else entries[0]
        if isinstance(entry, BaseException):
            raise entry
        return entry

    def __call__(self, call, **kwargs):  # stands in for Cluster._ask_controller
        return call(_ScriptedHandle(self))

    def count(self, method: str) -> int:
        return self.calls.count(method)


class _ScriptedHandle:
    """A controller handle whose ``<method>.remote(...)`` is answered from the script."""

    def __init__(self, scripted: Scripted) -> None:
        self._scripted = scripted

    def __getattr__(self, method: str):
        return SimpleNamespace(remote=lambda *args, **kwargs: self._scripted.answer(method))


def make_cluster(monkeypatch, controller: Scripted, partitions: list[list[int]] | None = None) -> Cluster:
    """A Cluster object with no Ray behind it: the controller is ``controller``; ``partitions``
    (each partition's replicas) is what describe_topic reports for TOPIC, every one led and served."""
    cluster = Cluster(namespace="unit-test", broker_ids=[0, 1, 2], log_dir="/nonexistent", config={},
                      owns_ray=False, owns_log_dir=False)
    monkeypatch.setattr(cluster, "_ask_controller", controller)
    # A Kafka request goes to the controller's ``handle``: scripted by the API table's name.
    monkeypatch.setattr(cluster, "_request_controller",
                        lambda request, **kwargs: controller.answer(api_of(request).name))
    monkeypatch.setattr(cluster.directory, "refresh_metadata", lambda: None)
    if partitions is not None:
        served = [PartitionDescription(topic=TOPIC, partition=i, leader=replicas[0], replicas=replicas, isr=replicas,
                                       leader_epoch=0, partition_epoch=0, high_watermark=0, log_end_offset=0,
                                       log_start_offset=0) for i, replicas in enumerate(partitions)]
        monkeypatch.setattr(cluster, "describe_topic", lambda name, **kwargs: served)
    return cluster


def created(code: ErrorCode = ErrorCode.NONE) -> CreateTopicsResponse:
    return CreateTopicsResponse(topics=(CreatableTopicResult(name=TOPIC, error_code=code),))


def deleted(code: ErrorCode = ErrorCode.NONE) -> DeleteTopicsResponse:
    return DeleteTopicsResponse(responses=(DeletableTopicResult(name=TOPIC, error_code=code),))


# --------------------------------------------------------------------------------- controller
def test_describe_cluster_rides_out_a_controller_that_restarts_moves_and_times_out(monkeypatch):
    view = {"controller_epoch": 2, "brokers": {0: 1}, "topics": []}
    controller = Scripted(describe_cluster=[restarting(), GetTimeoutError("no answer"), not_controller(), view])
    cluster = make_cluster(monkeypatch, controller)

    assert cluster.describe_cluster() == view
    assert controller.count("describe_cluster") == 4


def test_a_retriable_error_that_lasts_is_raised_when_timeout_ms_is_up(monkeypatch):
    controller = Scripted(describe_cluster=[restarting()])
    cluster = make_cluster(monkeypatch, controller)

    with pytest.raises(KafkaError) as raised:
        cluster.describe_cluster(timeout_ms=SHORT_TIMEOUT_MS)
    assert raised.value.error_code == ErrorCode.NETWORK_EXCEPTION
    assert controller.count("describe_cluster") > 1


def test_create_topic_retries_not_controller_then_creates(monkeypatch):
    controller = Scripted(create_topics=[created(ErrorCode.NOT_CONTROLLER), created()])
    cluster = make_cluster(monkeypatch, controller, partitions=[[0, 1, 2]])

    cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    assert controller.count("create_topics") == 2


@pytest.mark.parametrize("code", [ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.INVALID_PARTITIONS,
                                  ErrorCode.INVALID_REPLICATION_FACTOR, ErrorCode.INVALID_CONFIG])
def test_create_topic_raises_a_non_retriable_answer_at_once(monkeypatch, code):
    controller = Scripted(create_topics=[created(code), created()])
    cluster = make_cluster(monkeypatch, controller, partitions=[[0, 1, 2]])

    with pytest.raises(KafkaError) as raised:
        cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
    assert raised.value.error_code == code
    assert controller.count("create_topics") == 1


@pytest.mark.parametrize("lost", [GetTimeoutError("no answer in time"), restarting(), ActorDiedError()],
                         ids=["timed-out", "controller-restarting", "controller-died"])
def test_a_retried_create_that_finds_the_topic_it_asked_for_succeeds(monkeypatch, lost):
    """The first attempt's fate is unknown; the topic it may have created is there, as asked."""
    controller = Scripted(create_topics=[lost, created(ErrorCode.TOPIC_ALREADY_EXISTS)])
    cluster = make_cluster(monkeypatch, controller, partitions=[[0, 1, 2], [1, 2, 0]])

    cluster.create_topic(TOPIC, partitions=2, replication_factor=3)
    assert controller.count("create_topics") == 2


def test_a_retried_create_that_finds_another_topic_of_that_name_raises_topic_already_exists(monkeypatch):
    controller = Scripted(create_topics=[GetTimeoutError("no answer"), created(ErrorCode.TOPIC_ALREADY_EXISTS)])
    cluster = make_cluster(monkeypatch, controller, partitions=[[0]])  # one partition, one replica

    with pytest.raises(KafkaError) as raised:
        cluster.create_topic(TOPIC, partitions=2, replication_factor=3)
    assert raised.value.error_code == ErrorCode.TOPIC_ALREADY_EXISTS


def test_a_retried_create_with_an_explicit_assignment_compares_the_replicas(monkeypatch):
    controller = Scripted(create_topics=[restarting(), created(ErrorCode.TOPIC_ALREADY_EXISTS)])
    cluster = make_cluster(monkeypatch, controller, partitions=[[2, 0]])

    cluster.create_topic(TOPIC, assignment=[[2, 0]])
    with pytest.raises(KafkaError):
        make_cluster(monkeypatch, Scripted(create_topics=[restarting(), created(
            ErrorCode.TOPIC_ALREADY_EXISTS)]), partitions=[[2, 0]]).create_topic(TOPIC, assignment=[[0, 2]])


def test_delete_topic_after_an_attempt_of_unknown_fate_accepts_that_the_topic_is_gone(monkeypatch):
    controller = Scripted(delete_topics=[restarting(), deleted(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)],
                          describe_cluster=[{"topics": []}])
    cluster = make_cluster(monkeypatch, controller)

    cluster.delete_topic(TOPIC)
    assert controller.count("delete_topics") == 2


def test_delete_topic_of_an_unknown_topic_raises_at_once(monkeypatch):
    controller = Scripted(delete_topics=[deleted(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])
    cluster = make_cluster(monkeypatch, controller)

    with pytest.raises(KafkaError) as raised:
        cluster.delete_topic(TOPIC)
    assert raised.value.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert controller.count("delete_topics") == 1


def test_describe_topic_of_an_unknown_topic_raises_at_once_after_riding_out_a_restart(monkeypatch):
    controller = Scripted(describe_topic=[restarting(), None])
    cluster = make_cluster(monkeypatch, controller)

    with pytest.raises(KafkaError) as raised:
        cluster.describe_topic(TOPIC)
    assert raised.value.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert controller.count("describe_topic") == 2


def test_elect_preferred_leaders_retries_not_controller(monkeypatch):
    elected = ElectLeadersResponse(replica_election_results=(ReplicaElectionResult(
        topic=TOPIC, partition_result=(PartitionResult(partition_id=0, error_code=ErrorCode.ELECTION_NOT_NEEDED),)),))
    controller = Scripted(elect_leaders=[ElectLeadersResponse(replica_election_results=(),
                                                                     error_code=ErrorCode.NOT_CONTROLLER), elected])
    cluster = make_cluster(monkeypatch, controller)

    assert cluster.elect_preferred_leaders() == {(TOPIC, 0): "ELECTION_NOT_NEEDED"}


# ------------------------------------------------------------------------------------- groups
class FakeCoordinatorActor:
    """A group coordinator actor: ``handle.remote(request)`` is answered from ``script``, by the
    API table's name of the request."""

    def __init__(self, script: Scripted) -> None:
        script_ = script

        class _Handle:
            @staticmethod
            def remote(request):
                return script_.answer(api_of(request).name)
        self.handle = _Handle


class FindCoordinatorDirectory:
    """The brokers: FindCoordinator answered from ``script``; no partition has a leader."""

    namespace = "unit-test"

    def __init__(self, script: Scripted) -> None:
        self._script = script

    def known_broker_ids(self) -> list[int]:
        return [0, 1, 2]

    def call(self, broker_id: int, request, timeout_ms: int | None = None):
        return self._script.answer(api_of(request).name)


@pytest.fixture
def coordinators(monkeypatch):
    """Coordinator actors by name, found through ray.get_actor; ray.get hands answers back as they are."""
    actors: dict[str, FakeCoordinatorActor] = {}

    def get_actor(name: str, namespace: str | None = None):
        if name not in actors:
            raise ValueError(f"no actor {name}")
        return actors[name]
    monkeypatch.setattr(groups.ray, "get_actor", get_actor)
    monkeypatch.setattr(groups.ray, "get", lambda value, timeout=None: value)
    return actors


def test_describe_group_waits_for_a_coordinator_that_is_being_created_and_loads(monkeypatch, coordinators):
    """Right after the first consumer subscribes, __consumer_offsets is being created: no broker
    can name the group's coordinator yet, and then the coordinator is still loading."""
    script = Scripted(
        find_coordinator=[FindCoordinatorResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE),
                                 FindCoordinatorResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE),
                                 FindCoordinatorResponse(node_id=1, host="coordinator-1")],
        describe_groups=[
            DescribeGroupsResponse(groups=(DescribedGroup(group_id="g", error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),)),
            DescribeGroupsResponse(groups=(DescribedGroup(group_id="g", error_code=ErrorCode.NOT_COORDINATOR),)),
            DescribeGroupsResponse(groups=(DescribedGroup(group_id="g", group_state="Stable", protocol_type="consumer",
                                                          protocol_data="range", generation_id=3),))],
        offset_fetch=[OffsetFetchResponse(topics=())])
    coordinators["coordinator-1"] = FakeCoordinatorActor(script)
    cluster = make_cluster(monkeypatch, Scripted())
    monkeypatch.setattr(cluster, "_new_directory", lambda: FindCoordinatorDirectory(script))

    description = cluster.describe_group("g")
    assert (description.state, description.generation_id, description.coordinator) == ("Stable", 3, 1)
    assert script.count("describe_groups") == 3


def test_describe_group_raises_a_non_retriable_error_at_once(monkeypatch, coordinators):
    script = Scripted(find_coordinator=[FindCoordinatorResponse(error_code=ErrorCode.INVALID_GROUP_ID)])
    cluster = make_cluster(monkeypatch, Scripted())
    monkeypatch.setattr(cluster, "_new_directory", lambda: FindCoordinatorDirectory(script))

    with pytest.raises(KafkaError) as raised:
        cluster.describe_group("")
    assert raised.value.error_code == ErrorCode.INVALID_GROUP_ID
    assert script.count("find_coordinator") == 1


def test_list_groups_waits_for_a_loading_coordinator_and_skips_one_that_is_gone(monkeypatch, coordinators):
    loading = Scripted(list_groups=[
        ListGroupsResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, groups=()),
        restarting(),
        ListGroupsResponse(groups=(ListedGroup(group_id="a", group_state="Stable"),))])
    coordinators["raykafka-group-coordinator-0"] = FakeCoordinatorActor(loading)
    coordinators["raykafka-group-coordinator-2"] = FakeCoordinatorActor(Scripted(list_groups=[
        ListGroupsResponse(groups=(ListedGroup(group_id="b", group_state="Empty"),))]))
    cluster = make_cluster(monkeypatch, Scripted())
    monkeypatch.setattr(cluster, "_new_directory", lambda: FindCoordinatorDirectory(Scripted()))

    assert cluster.list_groups() == [("a", "Stable"), ("b", "Empty")]
    assert loading.count("list_groups") == 3


# ----------------------------------------------------------------------- the broker's own error
def raised_by_actor(exc: BaseException) -> RayTaskError:
    """What ray.get raises when an actor method raised ``exc``."""
    return RayTaskError("handle_produce", "Traceback (most recent call last): ...", exc).as_instanceof_cause()


@pytest.mark.parametrize("raised, expected", [
    (KafkaProtocolError(ErrorCode.INVALID_REQUEST, "not a valid ProduceRequest"), ErrorCode.INVALID_REQUEST),
    (KafkaProtocolError(ErrorCode.CORRUPT_MESSAGE, "CRC"), ErrorCode.CORRUPT_MESSAGE),
    (KafkaError(ErrorCode.NOT_COORDINATOR, "moved"), ErrorCode.NOT_COORDINATOR),
    (AssertionError("a broken invariant"), ErrorCode.UNKNOWN_SERVER_ERROR),
    (ActorDiedError(), ErrorCode.UNKNOWN_SERVER_ERROR),  # a call the actor made failed: the actor's failure
], ids=["invalid-request", "corrupt-message", "client-error", "bug", "nested-ray-failure"])
def test_an_error_the_actor_raised_reaches_the_client_with_its_own_error_code(raised, expected):
    error = as_kafka_error(raised_by_actor(raised))
    assert error.error_code == expected
    assert as_kafka_error(RayTaskError("outer", "...", raised_by_actor(raised))).error_code == expected


@pytest.mark.parametrize("failure, expected", [
    (GetTimeoutError("no answer"), ErrorCode.REQUEST_TIMED_OUT),
    (ActorDiedError(), ErrorCode.NETWORK_EXCEPTION),
    (ActorUnavailableError("restarting", None), ErrorCode.NETWORK_EXCEPTION),
], ids=["timeout", "actor-died", "actor-restarting"])
def test_a_call_that_failed_in_ray_is_what_a_kafka_client_sees_of_a_lost_connection(failure, expected):
    assert as_kafka_error(failure).error_code == expected
