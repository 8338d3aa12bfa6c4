"""IncrementalAlterConfigs and AlterConfigs on the controller: store a topic's new overrides and
tell every broker, or store a broker resource's dynamic keys (``actors/core/broker_configs.py``).

Theory of operation. A broker checked the request and forwarded it (see
``actors/core/broker/config_forwarding.py``). For each topic the controller merges the operations
into the stored overrides (AlterConfigs: the request's configs replace them all, as Kafka's
``AdminManager.alterConfigs``) and checks the result (``topic_configs.merge_alter_ops``); a topic it
does not know, or one queued for deletion, is ``UNKNOWN_TOPIC_OR_PARTITION``, a bad result
``INVALID_CONFIG``. Unless ``validate_only``, the merged overrides are written to the metadata
store with the topic (Kafka 2.4's ``/config/topics/<topic>``), then every live broker gets an
UpdateMetadata for the topic's partitions, which carries the overrides: that is Kafka's change
notification, and the brokers apply it to their live partitions and logs.

A change that turns ``unclean.leader.election.enable`` on is Kafka's
``UncleanLeaderElectionEnable`` event: the controller runs its offline-partition election at once,
so a topic with no eligible leader gets one without waiting for a broker to come back. The caller
passes that election in as ``elect_offline_partitions``.
"""
from __future__ import annotations

from collections.abc import Callable

from actors.core.broker_configs import RESOURCE_BROKER, merge_broker_alter_ops
from actors.core.config import KafkaConfig, effective_topic_config
from actors.core.controller.broker_requests import BrokerRequests
from actors.core.effects import Effect, LogEvent, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.messages.alter_configs import AlterConfigsRequest, AlterConfigsResponse
from actors.core.messages.incremental_alter_configs import (
    RESOURCE_TOPIC, AlterConfigsResourceResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
)
from actors.core.topic_configs import merge_alter_ops


def handle_incremental_alter_configs(requests: BrokerRequests, request_id: int,
                                     request: IncrementalAlterConfigsRequest | AlterConfigsRequest, *,
                                     controller_epoch: int, unclean_default: bool,
                                     elect_offline_partitions: Callable[[], list[Effect]],
                                     broker_overrides: dict[str, str] | None = None) -> list[Effect]:
    context = requests.context
    answers = []
    effects: list[Effect] = []
    unclean_turned_on = False
    requests.batch.new_batch()
    for resource in request.resources:
        name = resource.resource_name
        code, message = ErrorCode.NONE, None
        try:
            if resource.resource_type == RESOURCE_BROKER:
                effects += _alter_broker_configs(requests, request, resource, controller_epoch)
                answers.append(AlterConfigsResourceResponse(resource_type=resource.resource_type,
                                                            resource_name=name))
                continue
            if resource.resource_type != RESOURCE_TOPIC:
                raise KafkaProtocolError(ErrorCode.INVALID_REQUEST, "only topic and broker configs can be altered")
            if name not in context.topics or name in context.topics_to_delete:
                raise KafkaProtocolError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist")
            before = dict(context.topics[name].config)
            merged = merge_alter_ops({} if isinstance(request, AlterConfigsRequest) else before, resource.configs,
                                     broker_overrides)
        except KafkaProtocolError as exc:
            code, message = exc.error_code, exc.message or None
        else:
            if not request.validate_only and merged != before:
                context.set_topic_config(name, merged)
                requests.batch.add_update_metadata_request_for_brokers(
                    context.live_or_shutting_down_broker_ids,
                    [(name, p) for p in sorted(context.topics[name].assignment)])
                unclean_turned_on |= (_unclean(merged, unclean_default) and not _unclean(before, unclean_default))
                effects.append(LogEvent(level="info", message=f"[controller epoch {controller_epoch}] topic {name} "
                                                              f"config changed from {before} to {merged}"))
        answers.append(AlterConfigsResourceResponse(resource_type=resource.resource_type, resource_name=name,
                                                    error_code=code, error_message=message))
    effects += requests.flush()
    if unclean_turned_on:
        effects += elect_offline_partitions()
    effects.append(Respond(request_id=request_id, response=_response_type(request)(responses=tuple(answers))))
    return effects


def _alter_broker_configs(requests: BrokerRequests, request, resource, controller_epoch: int) -> list[Effect]:
    """A broker resource's dynamic keys merged and stored (``actors/core/broker_configs.py``); a bad
    one raises with Kafka's code before anything is stored."""
    store = requests.context.store
    name = resource.resource_name
    before = store.broker_configs().get(name, {})
    merged = merge_broker_alter_ops({} if isinstance(request, AlterConfigsRequest) else before, name, resource.configs)
    if request.validate_only or merged == before:
        return []
    store.put_broker_config(name, merged)
    return [LogEvent(level="info", message=f"[controller epoch {controller_epoch}] dynamic config of broker "
                                           f"{name or '<default>'} changed from {before} to {merged}")]


def _response_type(request) -> type:
    return AlterConfigsResponse if isinstance(request, AlterConfigsRequest) else IncrementalAlterConfigsResponse


def _unclean(config: dict[str, str], default: bool) -> bool:
    value = config.get("unclean.leader.election.enable")
    return default if value is None else str(value).strip().lower() == "true"


_SOURCE_NAMES = {"topic": "DYNAMIC_TOPIC_CONFIG", "broker": "STATIC_BROKER_CONFIG", "default": "DEFAULT_CONFIG"}


def describe_topic_config(context, name: str, config: KafkaConfig) -> dict | None:
    """Each key a topic may set, with its value and where it comes from (Kafka's DescribeConfigs
    sources): ``DYNAMIC_TOPIC_CONFIG`` for the topic's override, ``STATIC_BROKER_CONFIG`` for a
    broker key set in the configuration (``synonym`` names it), ``DEFAULT_CONFIG`` otherwise."""
    topic = context.topics.get(name)
    if topic is None or name in context.topics_to_delete:
        return None
    described = {}
    for key, entry in sorted(effective_topic_config(config.overrides(), topic.config).items()):
        described[key] = {"value": entry.value, "source": _SOURCE_NAMES[entry.source]}
        if entry.source == "broker":
            described[key]["synonym"] = entry.synonym
    for key in sorted(set(topic.config) - set(described)):  # the keys raykafka stores and reports only
        described[key] = {"value": topic.config[key], "source": _SOURCE_NAMES["topic"]}
    return dict(sorted(described.items()))


def refused(request: IncrementalAlterConfigsRequest | AlterConfigsRequest, code: ErrorCode):
    """The whole request answered with one code (``NOT_CONTROLLER`` from a controller that resigned)."""
    return _response_type(request)(responses=tuple(
        AlterConfigsResourceResponse(resource_type=r.resource_type, resource_name=r.resource_name, error_code=code)
        for r in request.resources))
