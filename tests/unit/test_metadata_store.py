"""Proves the controller epoch is claimed as Kafka's is (the first controller gets 1, each later one
the next) and atomically: claimants that race on one in-memory store, their store operations
interleaved step by step in seeded orders, each win distinct epochs, and every epoch is won once."""
from __future__ import annotations

import random
import threading

import pytest

from actors.core.controller.metadata_store import (
    CONTROLLER_EPOCH_KEY, InMemoryKeyValueStore, MetadataStore, controller_epoch_claim_key,
)
from actors.core.errors import ErrorCode, KafkaProtocolError

TURN_TIMEOUT_S = 30  # a generous bound: each turn is one dictionary operation


# ------------------------------------------------------------------------ sequential claims
def test_the_first_controller_gets_epoch_1_and_each_later_one_the_next():
    kv = InMemoryKeyValueStore()
    assert [MetadataStore(kv).claim_controller_epoch() for _ in range(4)] == [1, 2, 3, 4]
    assert MetadataStore(kv).stored_controller_epoch() == 4


def test_an_empty_store_holds_no_controller_epoch():
    assert MetadataStore(InMemoryKeyValueStore()).stored_controller_epoch() == 0


@pytest.mark.parametrize("hint, expected", [
    pytest.param(None, 4, id="hint lost (claimant died before writing it)"),
    pytest.param(b"1", 4, id="hint behind (a slower winner wrote an older epoch last)"),
    pytest.param(b"3", 4, id="hint current"),
])
def test_a_claim_takes_the_next_free_epoch_whatever_the_hint_says(hint, expected):
    kv = InMemoryKeyValueStore()
    for _ in range(3):
        MetadataStore(kv).claim_controller_epoch()
    kv.delete(CONTROLLER_EPOCH_KEY)
    if hint is not None:
        kv.put(CONTROLLER_EPOCH_KEY, hint)
    assert MetadataStore(kv).stored_controller_epoch() == 3
    assert MetadataStore(kv).claim_controller_epoch() == expected


def test_a_superseded_controller_is_fenced_on_its_next_write():
    kv = InMemoryKeyValueStore()
    old, new = MetadataStore(kv), MetadataStore(kv)
    assert (old.claim_controller_epoch(), new.claim_controller_epoch()) == (1, 2)
    new.put_cluster_id("c")  # the current controller writes
    with pytest.raises(KafkaProtocolError) as raised:
        old.put_cluster_id("zombie")
    assert raised.value.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert new.cluster_id() == "c"


def test_a_store_that_claimed_no_epoch_cannot_write():
    kv = InMemoryKeyValueStore()
    MetadataStore(kv).claim_controller_epoch()
    with pytest.raises(KafkaProtocolError) as raised:
        MetadataStore(kv).put_cluster_id("reader")
    assert raised.value.error_code == ErrorCode.STALE_CONTROLLER_EPOCH


def test_put_if_absent_creates_once_and_never_overwrites():
    kv = InMemoryKeyValueStore()
    assert kv.put_if_absent("/k", b"first") is True
    assert kv.put_if_absent("/k", b"second") is False
    assert kv.get("/k") == b"first"


def test_each_claim_records_its_claimant():
    kv = InMemoryKeyValueStore()
    MetadataStore(kv, claimant="controller-a").claim_controller_epoch()
    assert b"controller-a" in kv.get(controller_epoch_claim_key(1))


# ------------------------------------------------------------------------------ the race
class Turnstile:
    """Lets one claimant thread run one store operation at a time, in an order a seeded random
    source picks among the claimants waiting at an operation: a deterministic interleaving."""

    def __init__(self, names: list[str], rng: random.Random) -> None:
        self._condition = threading.Condition()
        self._running = set(names)
        self._waiting: set[str] = set()
        self._turn: str | None = None
        self._rng = rng

    def operation(self, name: str, run):
        with self._condition:
            self._waiting.add(name)
            self._condition.notify_all()
            assert self._condition.wait_for(lambda: self._turn == name, TURN_TIMEOUT_S), \
                f"{name} waited {TURN_TIMEOUT_S} s for its turn"
            self._waiting.discard(name)
        try:
            return run()
        finally:
            with self._condition:
                self._turn = None
                self._condition.notify_all()

    def finished(self, name: str) -> None:
        with self._condition:
            self._running.discard(name)
            self._condition.notify_all()

    def schedule(self) -> None:
        """Hand out turns until every claimant finished."""
        with self._condition:
            while self._running:
                parked = self._condition.wait_for(
                    lambda: self._turn is None and self._running <= self._waiting, TURN_TIMEOUT_S)
                assert parked, f"claimants {sorted(self._running - self._waiting)} never reached a store operation"
                if self._running:
                    self._turn = self._rng.choice(sorted(self._waiting))
                    self._condition.notify_all()


class ClaimantView:
    """One claimant's client of the shared store: every operation waits for its turn."""

    def __init__(self, kv: InMemoryKeyValueStore, turnstile: Turnstile, name: str) -> None:
        self._kv, self._turnstile, self._name = kv, turnstile, name

    def get(self, key):
        return self._turnstile.operation(self._name, lambda: self._kv.get(key))

    def put(self, key, value):
        return self._turnstile.operation(self._name, lambda: self._kv.put(key, value))

    def put_if_absent(self, key, value):
        return self._turnstile.operation(self._name, lambda: self._kv.put_if_absent(key, value))

    def delete(self, key):
        return self._turnstile.operation(self._name, lambda: self._kv.delete(key))

    def keys(self, prefix):
        return self._turnstile.operation(self._name, lambda: self._kv.keys(prefix))


def race(seed: int, claimants: int, claims_each: int) -> dict[str, list[int]]:
    """Each claimant becomes controller ``claims_each`` times (a new store client each time, as a
    restarted controller has), all at once; returns the epochs each won."""
    kv = InMemoryKeyValueStore()
    names = [f"claimant-{i}" for i in range(claimants)]
    turnstile = Turnstile(names, random.Random(seed))
    won: dict[str, list[int]] = {name: [] for name in names}
    failures: list[BaseException] = []

    def claim_repeatedly(name: str) -> None:
        try:
            for _ in range(claims_each):
                won[name].append(MetadataStore(ClaimantView(kv, turnstile, name), claimant=name)
                                 .claim_controller_epoch())
        except BaseException as exc:  # reported by the test, not lost in the thread
            failures.append(exc)
        finally:
            turnstile.finished(name)

    threads = [threading.Thread(target=claim_repeatedly, args=(name,), daemon=True) for name in names]
    for thread in threads:
        thread.start()
    turnstile.schedule()
    for thread in threads:
        thread.join(TURN_TIMEOUT_S)
        assert not thread.is_alive(), f"{thread.name} did not finish"
    assert not failures, failures
    return won


@pytest.mark.parametrize("claimants, claims_each", [(2, 1), (2, 5), (3, 4)])
@pytest.mark.parametrize("seed", range(20))
def test_racing_claimants_win_each_epoch_exactly_once(seed, claimants, claims_each):
    won = race(seed, claimants, claims_each)
    every_win = sorted(epoch for epochs in won.values() for epoch in epochs)
    assert every_win == list(range(1, claimants * claims_each + 1)), \
        f"seed {seed}: epochs won per claimant {won}; each epoch must be won by exactly one claimant"
    for name, epochs in won.items():
        assert epochs == sorted(epochs), f"seed {seed}: {name}'s later claims must win later epochs: {epochs}"
