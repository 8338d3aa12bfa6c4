"""Kafka 2.4's StickyAssignor: a balanced assignment that moves as few partitions as it can.

Theory of operation. Each member tells the leader what it owned, in its subscription's
``user_data`` (Kafka's sticky layout below, written by ``encode_user_data`` after every
rebalance) or, failing that, in the subscription's ``owned_partitions`` (KIP-429). From those
claims the assignor builds the current assignment, as Kafka's ``prepopulateCurrentAssignments``:
when several members claim a partition, the claim with the highest generation wins and the
runner-up is remembered as the partition's *previous owner*; two claims from the same generation
keep the first member in sorted order. Then:

1. Claims on partitions that no longer exist or that the member no longer subscribes to are
   dropped; claims of members that left vanish with them.
2. Every unowned partition goes to the eligible member with the fewest partitions (ties: the
   smallest member id), partitions with the fewest eligible members first.
3. Reassignment moves one partition at a time, always off the most loaded member that can give
   one: to the partition's previous owner if that member holds at least two fewer, else to the
   least loaded eligible member if it holds at least two fewer, until no such move exists. Each
   move lowers the sum of squared assignment sizes, so the loop ends; with identical subscriptions
   it ends with sizes differing by at most one (Kafka's balance), and since members at or below
   their share never give anything up, nothing moved that balance did not require (stickiness).

Kafka's own algorithm ends with the same conditions (its ``performReassignments`` also moves only
to members with at least two fewer partitions). Its exact choice of which partition moves depends
on HashMap order; ours is deterministic: members and partitions in sorted order.

User data layout (Kafka's ``STICKY_ASSIGNOR_USER_DATA_V1``, no version prefix):
``previous_assignment array<(topic string, partitions array<int32>)>``, ``generation int32``.
Version 0 lacks ``generation``; a reader tries version 1 and falls back to version 0, and
ignores user data that parses as neither, as Kafka does.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from actors.core.group.consumer_protocol import (
    Subscription, read_topic_partitions, write_topic_partitions,
)
from actors.core.group.wire import Reader, SchemaError, Writer

TopicPartition = tuple[str, int]

DEFAULT_GENERATION = -1  # Kafka's AbstractStickyAssignor.DEFAULT_GENERATION: no generation known


@dataclass(frozen=True, slots=True)
class MemberData:
    partitions: tuple[TopicPartition, ...]
    generation: int = DEFAULT_GENERATION


def encode_user_data(partitions: Iterable[TopicPartition], generation: int = DEFAULT_GENERATION) -> bytes:
    """What a member sends as ``user_data``: the partitions it owns and the generation it got them in."""
    writer = Writer()
    write_topic_partitions(writer, partitions)
    return writer.int32(generation).build()


def decode_user_data(data: bytes | None) -> MemberData:
    if not data:
        return MemberData(())
    try:
        reader = Reader(data)
        partitions = read_topic_partitions(reader)
        return MemberData(partitions, reader.int32())
    except SchemaError:
        pass
    try:
        return MemberData(read_topic_partitions(Reader(data)))  # version 0
    except SchemaError:
        return MemberData((), DEFAULT_GENERATION)


def member_data(subscription: Subscription) -> MemberData:
    """The member's claim: its sticky user data, or else its owned partitions (generation unknown)."""
    if subscription.user_data:
        return decode_user_data(subscription.user_data)
    return MemberData(subscription.owned_partitions)


def _claims(subscriptions: Mapping[str, Subscription]) -> tuple[dict[TopicPartition, str], dict[TopicPartition, str]]:
    """(current owner, previous owner) per claimed partition, by generation (see the module doc)."""
    by_generation: dict[TopicPartition, dict[int, str]] = {}
    for member in sorted(subscriptions):
        data = member_data(subscriptions[member])
        for partition in data.partitions:
            claimants = by_generation.setdefault(partition, {})
            claimants.setdefault(data.generation, member)  # same generation twice: first one wins
    current: dict[TopicPartition, str] = {}
    previous: dict[TopicPartition, str] = {}
    for partition, claimants in by_generation.items():
        ranked = sorted(claimants, reverse=True)
        current[partition] = claimants[ranked[0]]
        if len(ranked) > 1:
            previous[partition] = claimants[ranked[1]]
    return current, previous


class _Balancer:
    """The mutable state of one assignment run: who owns what, and who may own what."""

    def __init__(self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]) -> None:
        self.members = sorted(subscriptions)
        self.eligible: dict[TopicPartition, list[str]] = {}
        for member in self.members:
            for topic in subscriptions[member].topics:
                for index in range(partitions_per_topic.get(topic, 0)):
                    self.eligible.setdefault((topic, index), []).append(member)
        self.assignment: dict[str, set[TopicPartition]] = {member: set() for member in self.members}
        self.owner: dict[TopicPartition, str] = {}
        # Partitions with the fewest eligible members first: they have the least freedom.
        self.partition_order = sorted(self.eligible, key=lambda p: (len(self.eligible[p]), p))
        self.partition_rank = {partition: rank for rank, partition in enumerate(self.partition_order)}

    def give(self, partition: TopicPartition, member: str) -> None:
        previous = self.owner.get(partition)
        if previous is not None:
            self.assignment[previous].discard(partition)
        self.owner[partition] = member
        self.assignment[member].add(partition)

    def least_loaded(self, partition: TopicPartition) -> str:
        return min(self.eligible[partition], key=lambda member: (len(self.assignment[member]), member))

    def keep_valid_claims(self, current: Mapping[TopicPartition, str]) -> None:
        for partition, member in sorted(current.items()):
            if member in self.eligible.get(partition, ()):
                self.give(partition, member)

    def assign_unowned(self) -> None:
        for partition in self.partition_order:
            if partition not in self.owner:
                self.give(partition, self.least_loaded(partition))

    def rebalance(self, previous: Mapping[TopicPartition, str]) -> None:
        # Each move lowers sum(len^2) by at least 2, so this many moves always suffice.
        moves_max = sum(len(owned) ** 2 for owned in self.assignment.values()) + 1
        for _ in range(moves_max):
            if not self._move_one(previous):
                return
        raise AssertionError("sticky reassignment did not converge")

    def _move_one(self, previous: Mapping[TopicPartition, str]) -> bool:
        """Move one partition off the most loaded member that has one to give; False if none has.

        Taking from the most loaded first is what keeps the others' partitions where they are:
        a member at or below its share never gives anything up.
        """
        for owner in sorted(self.members, key=lambda member: (-len(self.assignment[member]), member)):
            load = len(self.assignment[owner])
            best: tuple[int, TopicPartition, str] | None = None
            for partition in sorted(self.assignment[owner], key=self.partition_rank.__getitem__):
                former = previous.get(partition)
                if former is not None and former != owner and former in self.eligible[partition] \
                        and load > len(self.assignment[former]) + 1:
                    self.give(partition, former)  # back to the member that had it before
                    return True
                target = self.least_loaded(partition)
                target_load = len(self.assignment[target])
                if load > target_load + 1 and (best is None or target_load < best[0]):
                    best = (target_load, partition, target)
            if best is not None:
                self.give(best[1], best[2])
                return True
        return False


def sticky_assign(partitions_per_topic: Mapping[str, int],
                  subscriptions: Mapping[str, Subscription]) -> dict[str, list[TopicPartition]]:
    """member id -> its partitions, sorted; every existing subscribed partition goes to exactly one member."""
    balancer = _Balancer(partitions_per_topic, subscriptions)
    current, previous = _claims(subscriptions)
    balancer.keep_valid_claims(current)
    balancer.assign_unowned()
    balancer.rebalance(previous)
    return {member: sorted(owned) for member, owned in balancer.assignment.items()}
