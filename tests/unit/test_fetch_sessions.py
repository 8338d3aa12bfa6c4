"""Incremental fetch sessions (KIP-227): a leader's session cache driven through its fetch handler,
and the fetcher's session handler against it, as Kafka's FetchSessionTest does."""
from __future__ import annotations

from actors.core.errors import ErrorCode
from actors.core.messages.fetch import FetchPartition, FetchRequest, FetchResponse, ForgottenTopic, next_epoch
from actors.core.replica.fetch_session import FetchSessionCache
from actors.core.fetcher.fetch_session_handler import FetchSessionHandler
from tests.support.core_driver import CoreDriver, make_batch

PARTITIONS = 64


def _leader(partitions: int = PARTITIONS, config: dict | None = None) -> CoreDriver:
    driver = CoreDriver(broker_id=0, config=config)
    for partition in range(partitions):
        driver.become("t", partition, leader=0)
    return driver


def _asked(partition: int, offset: int, max_bytes: int = 1 << 20) -> FetchPartition:
    return FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes)


def _fetch(driver: CoreDriver, handler: FetchSessionHandler, offsets: dict[int, int]) -> tuple[FetchRequest, FetchResponse]:
    data = handler.build({("t", p): _asked(p, offset) for p, offset in offsets.items()})
    request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 24, topics=data.topics(),
                           session_id=data.session_id, session_epoch=data.session_epoch,
                           forgotten_topics_data=data.forgotten_topics())
    response = driver.ask("handle_fetch", request)
    return request, response


def _answered(response: FetchResponse) -> dict[int, object]:
    return {p.partition_index: p for topic in response.responses for p in topic.partitions}


def _named(request: FetchRequest) -> set[int]:
    return {p.partition for topic in request.topics for p in topic.partitions}


def test_a_full_fetch_opens_a_session_and_incremental_fetches_leave_idle_partitions_out():
    driver, handler = _leader(), FetchSessionHandler()
    offsets = dict.fromkeys(range(PARTITIONS), 0)
    request, response = _fetch(driver, handler, offsets)
    assert request.session_epoch == 0 and len(_answered(response)) == PARTITIONS and response.session_id > 0
    assert handler.handle_response(response) and handler.epoch == 1

    driver.produce("t", 7, make_batch([b"new"]))
    request, response = _fetch(driver, handler, offsets)
    assert request.session_id == response.session_id and request.session_epoch == 1
    assert _named(request) == set(), "an incremental fetch names no partition whose parameters did not change"
    assert set(_answered(response)) == {7}, "only the partition with new data is answered"
    assert handler.handle_response(response)

    offsets[7] = 1
    request, response = _fetch(driver, handler, offsets)
    assert _named(request) == {7} and _answered(response) == {}
    assert handler.handle_response(response) and handler.epoch == 3


def test_a_session_answers_a_partition_again_when_its_high_watermark_or_an_error_changes():
    driver = _leader(partitions=2, config={"min.insync.replicas": "1"})
    handler = FetchSessionHandler()
    offsets = {0: 0, 1: 0}
    assert handler.handle_response(_fetch(driver, handler, offsets)[1])
    driver.become("t", 1, leader=1, leader_epoch=1)  # no longer led here: an error for partition 1
    _, response = _fetch(driver, handler, offsets)
    assert set(_answered(response)) == {1}
    assert _answered(response)[1].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert handler.handle_response(response)
    _, response = _fetch(driver, handler, offsets)
    assert set(_answered(response)) == {1}, "an error is answered every time: the client must hear it"


def test_a_wrong_epoch_is_invalid_fetch_session_epoch_and_the_handler_falls_back_to_a_full_fetch():
    driver, handler = _leader(partitions=4), FetchSessionHandler()
    offsets = dict.fromkeys(range(4), 0)
    assert handler.handle_response(_fetch(driver, handler, offsets)[1])
    request, response = _fetch(driver, handler, offsets)
    duplicate = driver.ask("handle_fetch", request)  # the same request again: its epoch is spent
    assert duplicate.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH and duplicate.responses == ()
    assert not handler.handle_response(duplicate)
    request, response = _fetch(driver, handler, offsets)
    assert request.session_epoch == 0 and _named(request) == set(range(4)), "a full fetch closing the session"
    assert handler.handle_response(response) and response.session_id not in (0, request.session_id)


def test_an_unknown_session_id_is_fetch_session_id_not_found():
    driver = _leader(partitions=1)
    response = driver.ask("handle_fetch", FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=(),
                                                       session_id=12345, session_epoch=1))
    assert response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND and response.responses == ()
    handler = FetchSessionHandler()
    handler.session_id, handler.epoch = 12345, 1
    assert not handler.handle_response(response)
    assert (handler.session_id, handler.epoch) == (0, 0)


def test_a_sessionless_fetch_is_answered_whole_and_opens_no_session():
    driver = _leader(partitions=3)
    request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=_full_topics(3))
    assert (request.session_id, request.session_epoch) == (0, -1)  # what librdkafka sends
    for _ in range(2):
        response = driver.ask("handle_fetch", request)
        assert response.session_id == 0 and len(_answered(response)) == 3
    assert len(driver.manager.fetch_sessions) == 0


def _full_topics(partitions: int):
    return FetchSessionHandler().build({("t", p): _asked(p, 0) for p in range(partitions)}).topics()


def test_forgotten_partitions_leave_the_session_and_an_emptied_session_closes():
    driver, handler = _leader(partitions=3), FetchSessionHandler()
    assert handler.handle_response(_fetch(driver, handler, {0: 0, 1: 0, 2: 0})[1])
    request, response = _fetch(driver, handler, {0: 0})
    assert request.forgotten_topics_data == (ForgottenTopic(topic="t", partitions=(1, 2)),)
    session = driver.manager.fetch_sessions.sessions[request.session_id]
    assert set(session.partitions) == {("t", 0)} and handler.handle_response(response)
    request, response = _fetch(driver, handler, {})
    assert response.session_id == 0 and request.session_id not in driver.manager.fetch_sessions.sessions
    assert handler.handle_response(response) and (handler.session_id, handler.epoch) == (0, 0)


def test_a_restarted_follower_starts_a_new_session_beside_its_old_one():
    driver = _leader(partitions=2)
    old = FetchSessionHandler()
    assert old.handle_response(_fetch(driver, old, {0: 0, 1: 0})[1])
    restarted = FetchSessionHandler()  # a new fetcher knows nothing of the old session
    request, response = _fetch(driver, restarted, {0: 0, 1: 0})
    assert (request.session_id, request.session_epoch) == (0, 0) and len(_answered(response)) == 2
    assert restarted.handle_response(response) and restarted.session_id != old.session_id
    assert len(driver.manager.fetch_sessions) == 2


def test_a_restarted_leader_knows_no_session_and_the_fetcher_starts_over():
    driver, handler = _leader(partitions=2), FetchSessionHandler()
    assert handler.handle_response(_fetch(driver, handler, {0: 0, 1: 0})[1])
    restarted = CoreDriver(broker_id=0, storage=driver.storage)
    for partition in range(2):
        restarted.become("t", partition, leader=0)
    _, response = _fetch(restarted, handler, {0: 0, 1: 0})
    assert response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert not handler.handle_response(response)
    request, response = _fetch(restarted, handler, {0: 0, 1: 0})
    assert request.session_epoch == 0 and handler.handle_response(response) and len(_answered(response)) == 2


def _full_request(partitions: int, *, replica_id: int = -1) -> FetchRequest:
    return FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=_full_topics(partitions),
                        replica_id=replica_id, session_epoch=0)


def _open(cache: FetchSessionCache, partitions: int, now_ms: int, *, replica_id: int = -1) -> int:
    request = _full_request(partitions, replica_id=replica_id)
    context = cache.new_context(request, now_ms)
    return context.respond(cache, FetchResponse(responses=()), now_ms).session_id


def test_the_cache_holds_at_most_its_slots_and_evicts_as_kafka_does():
    cache = FetchSessionCache(slots_max=2, eviction_ms=1000, seed=7)
    first, second = _open(cache, 3, now_ms=0), _open(cache, 1, now_ms=0)
    assert first and second and len(cache) == 2
    assert _open(cache, 5, now_ms=10) == 0, "no session is evictable within its grace period"
    follower = _open(cache, 1, now_ms=10, replica_id=1)
    assert follower and cache.evictions == 1 and first in cache.sessions and second not in cache.sessions, (
        "a follower's session evicts the consumer session with the fewest partitions")
    assert _open(cache, 2, now_ms=20) == 0, "a consumer cannot evict a follower, nor a larger session in grace"
    assert _open(cache, 2, now_ms=2000), "a session idle past the eviction time gives way"
    assert first not in cache.sessions and len(cache) == 2


def test_session_ids_are_positive_unique_and_differ_between_broker_processes():
    one, other = FetchSessionCache(slots_max=100, seed=1), FetchSessionCache(slots_max=100, seed=2)
    ids = [_open(one, 1, now_ms=0) for _ in range(100)]
    assert len(set(ids)) == 100 and min(ids) > 0
    assert _open(other, 1, now_ms=0) != ids[0]


def test_epochs_wrap_to_one_and_final_stays_final():
    assert [next_epoch(e) for e in (0, 1, 2**31 - 1, -1)] == [1, 2, 1, -1]


def test_a_parked_incremental_fetch_answers_only_what_arrived():
    driver, handler = _leader(partitions=8), FetchSessionHandler()
    offsets = dict.fromkeys(range(8), 0)
    assert handler.handle_response(_fetch(driver, handler, offsets)[1])
    data = handler.build({("t", p): _asked(p, 0) for p in range(8)})
    request_id = driver.call("handle_fetch", FetchRequest(
        max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, topics=data.topics(), session_id=data.session_id,
        session_epoch=data.session_epoch))
    assert request_id not in driver.answers, "nothing new: the incremental fetch waits"
    driver.produce("t", 5, make_batch([b"x"]))
    response = driver.answers[request_id]
    assert set(_answered(response)) == {5} and handler.handle_response(response)


def _fetcher_with(partitions: int):
    from actors.core.config import KafkaConfig
    from actors.core.effects import Send
    from actors.core.fetcher.fetcher import FetcherCore
    from actors.core.fetcher.follower_messages import InitialFetchState
    fetcher = FetcherCore(broker_id=2, leader_id=1, fetcher_id=0, config=KafkaConfig({}), now_ms=0)
    effects = fetcher.add_partitions([InitialFetchState(topic="t", partition=p, fetch_offset=0, current_leader_epoch=1)
                                      for p in range(partitions)], now_ms=0)
    return fetcher, [e.message for e in effects if isinstance(e, Send)]


def _sent(effects) -> list:
    from actors.core.effects import Send
    return [e.message for e in effects if isinstance(e, Send)]


def test_the_follower_fetcher_fetches_incrementally_and_falls_back_to_a_full_fetch_on_a_session_error():
    from actors.core.messages.fetch import FetchableTopicResponse, FetchPartitionData
    fetcher, (first,) = _fetcher_with(3)
    assert (first.session_id, first.session_epoch, _named(first)) == (0, 0, {0, 1, 2})
    full = FetchResponse(session_id=9, responses=(FetchableTopicResponse(topic="t", partitions=tuple(
        FetchPartitionData(partition_index=p) for p in range(3))),))
    (incremental,) = _sent(fetcher.on_leader_response(first, full, now_ms=1))
    assert (incremental.session_id, incremental.session_epoch, _named(incremental)) == (9, 1, set())
    refused = FetchResponse(responses=(), error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    (again,) = _sent(fetcher.on_leader_response(incremental, refused, now_ms=2))
    assert (again.session_id, again.session_epoch, _named(again)) == (0, 0, {0, 1, 2}), (
        "at once, in full, with no backoff")


def test_a_follower_fetch_that_timed_out_closes_its_session_with_the_next_full_fetch():
    from actors.core.messages.fetch import FetchableTopicResponse, FetchPartitionData
    fetcher, (first,) = _fetcher_with(2)
    full = FetchResponse(session_id=9, responses=(FetchableTopicResponse(topic="t", partitions=tuple(
        FetchPartitionData(partition_index=p) for p in range(2))),))
    (incremental,) = _sent(fetcher.on_leader_response(first, full, now_ms=1))
    assert incremental.session_epoch == 1
    fetcher.tick(now_ms=10**9)  # past the request timeout: the partitions back off
    (retry,) = _sent(fetcher.tick(now_ms=10**9 + 10**6))
    assert (retry.session_id, retry.session_epoch) == (9, 0), "a full fetch that closes session 9"
