"""The controller's durable state, behind a seam: the role ZooKeeper plays in Kafka 2.4.

Theory of operation. The controller keeps everything another controller would need to take over
in a key-value store: the cluster id, the controller epoch, the broker-epoch counter and registered
brokers, each topic's replica assignment and configuration, each partition's leader and ISR, and
the topics queued for deletion. Values are JSON. The production store is the Ray cluster's internal
key-value store (``actors/ray_metadata_store.py``); ``InMemoryMetadataStore`` serves tests and
simulation. Reads and writes are synchronous: a controller step that changed state has persisted
it before it sends any request that depends on it.

Fencing. Every write checks that the stored controller epoch is still this controller's; a
controller that finds a newer one (a zombie that woke up) gets ``STALE_CONTROLLER_EPOCH`` and must
resign. Ray's key-value store has no compare-and-set, so the check and the write are two steps; the
window is one store round trip, and brokers fence the zombie's requests by epoch regardless.
"""
from __future__ import annotations

import json
from typing import Any, Protocol

from actors.core.errors import ErrorCode, KafkaProtocolError

CONTROLLER_EPOCH_KEY = "/controller_epoch"
CLUSTER_ID_KEY = "/cluster/id"
BROKER_EPOCH_COUNTER_KEY = "/brokers/epoch_counter"
BROKER_PREFIX = "/brokers/ids/"
TOPIC_PREFIX = "/brokers/topics/"
PARTITION_STATE_PREFIX = "/brokers/partition_state/"
DELETE_TOPIC_PREFIX = "/admin/delete_topics/"


class KeyValueStore(Protocol):
    def get(self, key: str) -> bytes | None: ...
    def put(self, key: str, value: bytes) -> None: ...
    def delete(self, key: str) -> None: ...
    def keys(self, prefix: str) -> list[str]: ...


class InMemoryKeyValueStore:
    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        return self.data.get(key)

    def put(self, key: str, value: bytes) -> None:
        self.data[key] = bytes(value)

    def delete(self, key: str) -> None:
        self.data.pop(key, None)

    def keys(self, prefix: str) -> list[str]:
        return sorted(key for key in self.data if key.startswith(prefix))


class MetadataStore:
    """Typed access to the controller's keys, fenced by controller epoch."""

    def __init__(self, kv: KeyValueStore) -> None:
        self.kv = kv
        self.controller_epoch = -1  # this controller's, once ``claim_controller_epoch`` ran

    # ------------------------------------------------------------------------------ raw JSON
    def _read(self, key: str) -> Any:
        raw = self.kv.get(key)
        return None if raw is None else json.loads(raw)

    def _write(self, key: str, value: Any) -> None:
        self.check_still_controller()
        self.kv.put(key, json.dumps(value, sort_keys=True).encode())

    def _delete(self, key: str) -> None:
        self.check_still_controller()
        self.kv.delete(key)

    # ------------------------------------------------------------------------------ epochs
    def stored_controller_epoch(self) -> int:
        value = self._read(CONTROLLER_EPOCH_KEY)
        return -1 if value is None else int(value)

    def claim_controller_epoch(self) -> int:
        """Become the controller: one more than any controller before (Kafka's /controller_epoch)."""
        self.controller_epoch = self.stored_controller_epoch() + 1
        self.kv.put(CONTROLLER_EPOCH_KEY, json.dumps(self.controller_epoch).encode())
        return self.controller_epoch

    def check_still_controller(self) -> None:
        stored = self.stored_controller_epoch()
        if stored != self.controller_epoch:
            raise KafkaProtocolError(ErrorCode.STALE_CONTROLLER_EPOCH,
                                     f"controller epoch {self.controller_epoch} superseded by {stored}")

    def next_broker_epoch(self) -> int:
        """A broker epoch larger than every one handed out before (Kafka uses the znode's czxid)."""
        epoch = int(self._read(BROKER_EPOCH_COUNTER_KEY) or 0) + 1
        self._write(BROKER_EPOCH_COUNTER_KEY, epoch)
        return epoch

    # ----------------------------------------------------------------------------- brokers
    def cluster_id(self) -> str | None:
        """The cluster id the first registered broker brought (Kafka's /cluster/id znode)."""
        return self._read(CLUSTER_ID_KEY)

    def put_cluster_id(self, cluster_id: str) -> None:
        self._write(CLUSTER_ID_KEY, cluster_id)

    def brokers(self) -> dict[int, dict]:
        return {int(key[len(BROKER_PREFIX):]): self._read(key) for key in self.kv.keys(BROKER_PREFIX)}

    def put_broker(self, broker_id: int, registration: dict) -> None:
        self._write(f"{BROKER_PREFIX}{broker_id}", registration)

    def delete_broker(self, broker_id: int) -> None:
        self._delete(f"{BROKER_PREFIX}{broker_id}")

    # ------------------------------------------------------------------------------ topics
    def topics(self) -> dict[str, dict]:
        return {key[len(TOPIC_PREFIX):]: self._read(key) for key in self.kv.keys(TOPIC_PREFIX)}

    def put_topic(self, name: str, assignment: dict[int, list[int]], config: dict[str, str]) -> None:
        self._write(f"{TOPIC_PREFIX}{name}", {"partitions": {str(p): r for p, r in assignment.items()},
                                              "config": config})

    def delete_topic(self, name: str) -> None:
        for key in self.kv.keys(f"{PARTITION_STATE_PREFIX}{name}/"):
            self._delete(key)
        self._delete(f"{TOPIC_PREFIX}{name}")
        self._delete(f"{DELETE_TOPIC_PREFIX}{name}")

    def partition_states(self) -> dict[tuple[str, int], dict]:
        states = {}
        for key in self.kv.keys(PARTITION_STATE_PREFIX):
            topic, _, partition = key[len(PARTITION_STATE_PREFIX):].rpartition("/")
            states[(topic, int(partition))] = self._read(key)
        return states

    def put_partition_state(self, topic: str, partition: int, state: dict) -> None:
        self._write(f"{PARTITION_STATE_PREFIX}{topic}/{partition}", state)

    def topics_to_delete(self) -> list[str]:
        return [key[len(DELETE_TOPIC_PREFIX):] for key in self.kv.keys(DELETE_TOPIC_PREFIX)]

    def mark_topic_for_deletion(self, name: str) -> None:
        self._write(f"{DELETE_TOPIC_PREFIX}{name}", True)
