"""Producer ids for idempotent producers (KIP-98, KIP-730): the controller hands each broker blocks
of ids claimed in its store, no two blocks ever overlap (across controller failovers and competing
controllers too), a fenced broker gets none, and a broker answers InitProducerId from its block,
parking requests while the next block is on its way and asking for it ahead of need."""
from __future__ import annotations

from actors.core.controller.metadata_store import PRODUCER_ID_BLOCK_SIZE, InMemoryKeyValueStore, MetadataStore
from actors.core.effects import Respond, Send
from actors.core.errors import ErrorCode
from actors.core.messages.allocate_producer_ids import AllocateProducerIdsRequest, AllocateProducerIdsResponse
from actors.core.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from actors.core.broker.producer_id_manager import PARKED_REQUESTS_MAX, ProducerIdManager
from tests.support.controller_driver import ControllerDriver


def allocate(driver: ControllerDriver, broker_id: int, broker_epoch: int | None = None) -> AllocateProducerIdsResponse:
    epoch = driver.broker_epochs[broker_id] if broker_epoch is None else broker_epoch
    return driver.ask("handle_allocate_producer_ids", AllocateProducerIdsRequest(broker_id=broker_id,
                                                                                 broker_epoch=epoch))


def test_the_controller_hands_out_disjoint_blocks_across_failovers():
    driver = ControllerDriver()
    driver.register_brokers(1, 2)
    blocks = [allocate(driver, 1), allocate(driver, 2), allocate(driver, 1)]
    successor = ControllerDriver(kv=driver.kv)  # a new controller over the same store
    successor.register_brokers(1)
    blocks.append(allocate(successor, 1))
    assert all(b.error_code == ErrorCode.NONE and b.producer_id_len == PRODUCER_ID_BLOCK_SIZE for b in blocks)
    starts = [b.producer_id_start for b in blocks]
    assert starts == [0, 1000, 2000, 3000]
    # The old controller was fenced by the new epoch: it gives out nothing.
    assert allocate(driver, 1).error_code == ErrorCode.NOT_CONTROLLER


def test_two_stores_claiming_at_once_never_get_the_same_block():
    kv = InMemoryKeyValueStore()
    first, second = MetadataStore(kv), MetadataStore(kv)
    first.claim_controller_epoch()
    second.controller_epoch = first.controller_epoch  # as if both passed the fence in the same instant
    a = first.claim_producer_id_block()
    # The second read the hint before the first wrote it: it walks past the block already taken.
    kv.delete("/latest_producer_id_block")
    b = second.claim_producer_id_block()
    assert (a, b) == (0, PRODUCER_ID_BLOCK_SIZE)


def test_a_broker_with_a_stale_epoch_gets_no_ids():
    driver = ControllerDriver()
    driver.register_brokers(1)
    response = allocate(driver, 1, broker_epoch=driver.broker_epochs[1] + 7)
    assert response.error_code == ErrorCode.STALE_BROKER_EPOCH and response.producer_id_len == 0
    assert allocate(driver, 9, broker_epoch=1).error_code == ErrorCode.STALE_BROKER_EPOCH


# -- the broker's side -------------------------------------------------------------------------

def answers(effects) -> dict[int, InitProducerIdResponse]:
    return {e.request_id: e.response for e in effects if isinstance(e, Respond)}


def sends(effects) -> list[AllocateProducerIdsRequest]:
    return [e.message for e in effects if isinstance(e, Send)]


def block(start: int, length: int = 10) -> AllocateProducerIdsResponse:
    return AllocateProducerIdsResponse(producer_id_start=start, producer_id_len=length)


def test_requests_wait_for_the_first_block_then_get_distinct_ids_in_order():
    manager = ProducerIdManager(broker_id=1)
    first = manager.handle_init_producer_id(1, InitProducerIdRequest(), broker_epoch=5)
    second = manager.handle_init_producer_id(2, InitProducerIdRequest(), broker_epoch=5)
    assert answers(first + second) == {}
    assert sends(first) == [AllocateProducerIdsRequest(broker_id=1, broker_epoch=5)] and sends(second) == []
    released = answers(manager.on_allocate_response(block(4000)))
    assert [(r.producer_id, r.producer_epoch, r.error_code) for r in released.values()] == [
        (4000, 0, ErrorCode.NONE), (4001, 0, ErrorCode.NONE)]
    assert answers(manager.handle_init_producer_id(3, InitProducerIdRequest(), broker_epoch=5))[3].producer_id == 4002


def test_the_next_block_is_asked_for_at_ninety_percent_and_used_when_the_first_runs_out():
    manager = ProducerIdManager(broker_id=1)
    manager.handle_init_producer_id(0, InitProducerIdRequest(), broker_epoch=5)
    manager.on_allocate_response(block(0))
    asked = []
    for request_id in range(1, 10):
        asked += sends(manager.handle_init_producer_id(request_id, InitProducerIdRequest(), broker_epoch=5))
    assert len(asked) == 1, "one prefetch once 9 of 10 ids are used"
    manager.on_allocate_response(block(7000))
    ids = [answers(manager.handle_init_producer_id(r, InitProducerIdRequest(), broker_epoch=5))[r].producer_id
           for r in (10, 11)]
    assert ids == [7000, 7001]


def test_an_unreachable_controller_or_an_unregistered_broker_gets_a_retriable_error():
    manager = ProducerIdManager(broker_id=1)
    unregistered = manager.handle_init_producer_id(1, InitProducerIdRequest(), broker_epoch=-1)
    assert sends(unregistered) == [] and answers(unregistered)[1].error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    manager.handle_init_producer_id(2, InitProducerIdRequest(), broker_epoch=5)
    failed = answers(manager.on_allocate_response(ErrorCode.NETWORK_EXCEPTION))
    assert failed[2].error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    refused = manager.handle_init_producer_id(3, InitProducerIdRequest(), broker_epoch=5)
    assert len(sends(refused)) == 1, "the next request asks again"
    assert answers(manager.on_allocate_response(AllocateProducerIdsResponse(
        error_code=ErrorCode.NOT_CONTROLLER)))[3].error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_a_transactional_request_is_refused_and_the_parked_queue_is_bounded():
    manager = ProducerIdManager(broker_id=1)
    refused = answers(manager.handle_init_producer_id(1, InitProducerIdRequest(transactional_id="tx"), broker_epoch=5))
    # The code librdkafka makes fatal and KafkaJS does not retry: init_transactions() fails at once.
    assert refused[1].error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert "does not support transactions" in refused[1].error_message
    for request_id in range(PARKED_REQUESTS_MAX):
        manager.handle_init_producer_id(100 + request_id, InitProducerIdRequest(), broker_epoch=5)
    overflow = answers(manager.handle_init_producer_id(7, InitProducerIdRequest(), broker_epoch=5))
    assert overflow[7].error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
