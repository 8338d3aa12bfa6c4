"""Proves the placement choice (which placement-group strategy for how many usable Ray nodes)
table by table, without Ray: one broker per node when there are enough, a logged fallback when not."""
from __future__ import annotations

import pytest

from orchestration.admin.placement import (
    BUNDLE, BUNDLE_MEMORY_BYTES, PACK, SPREAD, STRICT_SPREAD, choose_placement, usable_node_count,
)


@pytest.mark.parametrize("brokers, usable_nodes, strategy, fallback", [
    (3, 3, STRICT_SPREAD, False),
    (3, 4, STRICT_SPREAD, False),
    (3, 100, STRICT_SPREAD, False),
    (1, 1, STRICT_SPREAD, False),
    (3, 2, SPREAD, True),
    (5, 4, SPREAD, True),
    (3, 1, PACK, True),
    (2, 1, PACK, True),
    (3, 0, PACK, True),
])
def test_strategy_for_nodes_and_brokers(brokers, usable_nodes, strategy, fallback):
    choice = choose_placement(brokers, usable_nodes)
    assert (choice.strategy, choice.fallback) == (strategy, fallback)
    assert (choice.brokers, choice.usable_nodes) == (brokers, usable_nodes)
    assert str(brokers) in choice.reason, choice.reason


def test_a_cluster_without_brokers_is_refused():
    with pytest.raises(ValueError):
        choose_placement(0, 3)


def _node(alive=True, **resources):
    return {"Alive": alive, "Resources": resources}


@pytest.mark.parametrize("nodes, usable", [
    ([], 0),
    ([_node(memory=8e9, CPU=2.0)], 1),
    # A worker node with no CPU holds a bundle: the bundle reserves memory only.
    ([_node(memory=8e9, CPU=2.0), _node(memory=8e9), _node(memory=8e9)], 3),
    ([_node(memory=8e9), _node(alive=False, memory=8e9)], 1),
    ([_node(memory=BUNDLE_MEMORY_BYTES - 1), _node(memory=BUNDLE_MEMORY_BYTES)], 1),
    ([_node(CPU=4.0)], 0),
])
def test_usable_nodes_are_alive_with_room_for_a_bundle(nodes, usable):
    assert usable_node_count(nodes) == usable


def test_a_bundle_reserves_no_cpu():
    # A fraction of a CPU per broker would keep whole-CPU tasks (a Spark executor) off a 2-core machine.
    assert "CPU" not in BUNDLE and all(amount > 0 for amount in BUNDLE.values())
