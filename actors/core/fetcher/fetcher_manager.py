"""The broker's replica fetcher manager: which fetcher thread follows which partition.

Theory of operation. As Kafka's ``AbstractFetcherManager``, it groups this broker's follower
partitions by (leader broker, fetcher id), where the fetcher id is
``abs(31 * topic.hashCode() + partition) % num.replica.fetchers``, one fetcher (actor) per group.
``add`` moves a partition to the fetcher for its current leader (taking it from the old one if the
leader changed) with the state to start from; ``remove`` takes partitions away. Outputs are
``AddPartitionsToFetcher`` / ``RemovePartitionsFromFetcher`` effects for the shell, which owns the
fetcher actors; a group left empty is stopped. ``partitions_of`` lets the shell re-add a fetcher's
partitions to a replacement when a fetcher actor dies.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from actors.core.effects import AddPartitionsToFetcher, Effect, RemovePartitionsFromFetcher
from actors.core.java_hash import fetcher_id_for
from actors.core.fetcher.follower_messages import InitialFetchState

TopicPartition = tuple[str, int]
FetcherKey = tuple[int, int]  # (leader broker id, fetcher id)


class FetcherManager:
    def __init__(self, num_fetchers: int) -> None:
        assert num_fetchers >= 1
        self.num_fetchers = num_fetchers
        self.assignments: dict[TopicPartition, FetcherKey] = {}

    def key_for(self, topic_partition: TopicPartition, leader_id: int) -> FetcherKey:
        return leader_id, fetcher_id_for(topic_partition[0], topic_partition[1], self.num_fetchers)

    def add(self, states: Iterable[tuple[int, InitialFetchState]]) -> list[Effect]:
        """(leader id, initial state) per partition: follow that leader from that state."""
        effects: list[Effect] = []
        moved_away = [(tp, key) for leader_id, state in states
                      for tp in [(state.topic, state.partition)]
                      for key in [self.assignments.get(tp)] if key is not None and key[0] != leader_id]
        effects += self._remove_from([tp for tp, _ in moved_away])
        added: dict[FetcherKey, list[InitialFetchState]] = defaultdict(list)
        for leader_id, state in states:
            topic_partition = (state.topic, state.partition)
            key = self.key_for(topic_partition, leader_id)
            self.assignments[topic_partition] = key
            added[key].append(state)
        for (leader_id, fetcher_id), partition_states in sorted(added.items()):
            effects.append(AddPartitionsToFetcher(leader_id=leader_id, fetcher_id=fetcher_id,
                                                  partitions=tuple(partition_states)))
        return effects

    def remove(self, topic_partitions: Iterable[TopicPartition]) -> list[Effect]:
        return self._remove_from([tp for tp in topic_partitions if tp in self.assignments])

    def _remove_from(self, topic_partitions: list[TopicPartition]) -> list[Effect]:
        removed: dict[FetcherKey, list[TopicPartition]] = defaultdict(list)
        for topic_partition in topic_partitions:
            removed[self.assignments.pop(topic_partition)].append(topic_partition)
        still_used = set(self.assignments.values())
        return [RemovePartitionsFromFetcher(leader_id=key[0], fetcher_id=key[1], partitions=tuple(sorted(tps)),
                                            stop_fetcher=key not in still_used)
                for key, tps in sorted(removed.items())]

    def partitions_of(self, key: FetcherKey) -> list[TopicPartition]:
        return sorted(tp for tp, assigned in self.assignments.items() if assigned == key)
