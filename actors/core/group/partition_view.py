"""The group coordinator's view of which partitions exist, as its broker's metadata cache says.

Kafka's coordinator shares its broker's ``MetadataCache``; here the broker hands its coordinator a
copy whenever the set of partitions in its cache changes (``CoordinatorMetadataUpdate``), and the
coordinator asks for one when it starts or its broker restarts. Such copies can arrive late or out
of order, so each carries a version (broker epoch, the cache's partitions version) and an older
view never replaces a newer one. The deletions an update reports are still acted on when the view
it carries is stale, except for partitions the newer view holds: those were created again since.
Until the first view arrives no partition is known, as with a Kafka broker whose cache is empty.
"""
from __future__ import annotations

from actors.core.effects import CoordinatorMetadataUpdate

TopicPartition = tuple[str, int]


class PartitionView:
    def __init__(self) -> None:
        self.version: tuple[int, int] | None = None
        self.partitions: frozenset[TopicPartition] = frozenset()

    def apply(self, update: CoordinatorMetadataUpdate) -> tuple[TopicPartition, ...]:
        """Take ``update``'s view if it is newer; returns the deleted partitions to act on."""
        if self.version is None or update.version > self.version:
            self.version = update.version
            self.partitions = frozenset(update.partitions)
            return tuple(update.deleted_partitions)
        return tuple(tp for tp in update.deleted_partitions if tp not in self.partitions)

    def contains(self, topic_partition: TopicPartition) -> bool:
        return topic_partition in self.partitions
