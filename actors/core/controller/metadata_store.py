"""The controller's durable state, behind a seam: the role ZooKeeper plays in Kafka 2.4.

Theory of operation. The controller keeps everything another controller would need to take over
in a key-value store: the cluster id, the controller epoch, the broker-epoch counter and registered
brokers, each topic's replica assignment and configuration, each partition's leader and ISR, and
the topics queued for deletion. Values are JSON. The production store is the Ray cluster's internal
key-value store (``actors/ray_metadata_store.py``); ``InMemoryMetadataStore`` serves tests and
simulation. Reads and writes are synchronous: a controller step that changed state has persisted
it before it sends any request that depends on it.

Claiming the controller epoch. Kafka 2.4 increments ``/controller_epoch`` with a conditional
ZooKeeper write, so two controllers can never both get the same epoch; the first controller gets
epoch 1. Ray's key-value store has no compare-and-set, but it can create a key only if it is
absent and say whether it was, so each epoch has its own claim key (``/controller_epochs/<n>``)
that exactly one claimant creates. A claimant starts one past the epoch the hint key
(``/controller_epoch``) names and, each time it finds the claim key taken, tries the next epoch,
so claimants that start together get distinct epochs, every epoch is won once, and the claimed
epochs are always 1..N with no gap. The hint is written after a win and may lag (a slower winner
may write an older epoch last) or be missing (its claimant died): it only shortens the walk.

Fencing. Every write checks that this controller's epoch is still the newest, that is, that the
claim key of the next epoch is absent; a controller that finds it taken (a zombie that woke up)
gets ``STALE_CONTROLLER_EPOCH`` and must resign. The check and the write are two steps; the window
is one store round trip, and brokers fence the zombie's requests by epoch regardless.
"""
from __future__ import annotations

import json
from typing import Any, Protocol

from actors.core.errors import ErrorCode, KafkaProtocolError

CONTROLLER_EPOCH_KEY = "/controller_epoch"  # a hint: an epoch already claimed, usually the newest
CONTROLLER_EPOCH_CLAIM_PREFIX = "/controller_epochs/"
# Kafka's KafkaController.InitialControllerEpoch: the epoch before the first controller's.
INITIAL_CONTROLLER_EPOCH = 0
# Claims a controller tries before it gives up: each lost one means another controller started at
# that very moment, so this many in a row means something other than a race is wrong.
CLAIM_ATTEMPTS_MAX = 1000
CLUSTER_ID_KEY = "/cluster/id"
BROKER_EPOCH_COUNTER_KEY = "/brokers/epoch_counter"
BROKER_PREFIX = "/brokers/ids/"
# Each broker's log directory id as last registered (KIP-858); kept while the broker is down.
BROKER_DIRECTORY_PREFIX = "/brokers/directories/"
# Dynamic broker configs (Kafka 2.4's /config/brokers/<id>; the cluster-wide ones under <default>).
BROKER_CONFIG_PREFIX = "/config/brokers/"
BROKER_CONFIG_DEFAULT = "<default>"
TOPIC_PREFIX = "/brokers/topics/"
PARTITION_STATE_PREFIX = "/brokers/partition_state/"
DELETE_TOPIC_PREFIX = "/admin/delete_topics/"
# One key per partition being reassigned, /admin/reassign_partitions/<topic>/<partition> (Kafka 2.4
# keeps the adding and removing replicas in the topic's znode; one key each is simpler here).
REASSIGNMENT_PREFIX = "/admin/reassign_partitions/"
# Producer-id blocks (Kafka's /latest_producer_id_block): block n is ids [n * size, (n + 1) * size),
# claimed once through its own key like a controller epoch; the hint names a claimed block.
PRODUCER_ID_BLOCK_KEY = "/latest_producer_id_block"
PRODUCER_ID_BLOCK_CLAIM_PREFIX = "/producer_id_blocks/"
PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdManager.PidBlockSize


def controller_epoch_claim_key(epoch: int) -> str:
    return f"{CONTROLLER_EPOCH_CLAIM_PREFIX}{epoch}"


class KeyValueStore(Protocol):
    def get(self, key: str) -> bytes | None: ...
    def put(self, key: str, value: bytes) -> None: ...
    def put_if_absent(self, key: str, value: bytes) -> bool:
        """Create ``key`` only if it does not exist, atomically; True if this call created it."""
    def delete(self, key: str) -> None: ...
    def keys(self, prefix: str) -> list[str]: ...


class InMemoryKeyValueStore:
    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        return self.data.get(key)

    def put(self, key: str, value: bytes) -> None:
        self.data[key] = bytes(value)

    def put_if_absent(self, key: str, value: bytes) -> bool:
        if key in self.data:
            return False
        self.data[key] = bytes(value)
        return True

    def delete(self, key: str) -> None:
        self.data.pop(key, None)

    def keys(self, prefix: str) -> list[str]:
        return sorted(key for key in self.data if key.startswith(prefix))


class MetadataStore:
    """Typed access to the controller's keys, fenced by controller epoch."""

    def __init__(self, kv: KeyValueStore, claimant: str = "") -> None:
        self.kv = kv
        self.claimant = claimant  # who this controller is, recorded with its epoch's claim
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH  # this controller's once it claimed one (>= 1)

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
    def _epoch_hint(self) -> int:
        value = self._read(CONTROLLER_EPOCH_KEY)
        return INITIAL_CONTROLLER_EPOCH if value is None else int(value)

    def _epoch_claimed(self, epoch: int) -> bool:
        return self.kv.get(controller_epoch_claim_key(epoch)) is not None

    def stored_controller_epoch(self) -> int:
        """The newest claimed controller epoch (0 before the first controller)."""
        epoch = self._epoch_hint()
        for _ in range(CLAIM_ATTEMPTS_MAX):
            if not self._epoch_claimed(epoch + 1):
                return epoch
            epoch += 1
        raise KafkaProtocolError(ErrorCode.NOT_CONTROLLER, f"more than {CLAIM_ATTEMPTS_MAX} epochs past the hint")

    def claim_controller_epoch(self) -> int:
        """Become the controller with the lowest epoch no one has claimed (Kafka's /controller_epoch)."""
        epoch = self._epoch_hint()
        claim = json.dumps({"claimant": self.claimant}).encode()
        for _ in range(CLAIM_ATTEMPTS_MAX):
            epoch += 1
            if self.kv.put_if_absent(controller_epoch_claim_key(epoch), claim):
                self.controller_epoch = epoch
                self.kv.put(CONTROLLER_EPOCH_KEY, json.dumps(epoch).encode())
                return epoch
        raise KafkaProtocolError(ErrorCode.NOT_CONTROLLER,
                                 f"lost {CLAIM_ATTEMPTS_MAX} controller epoch claims in a row, up to {epoch}")

    def check_still_controller(self) -> None:
        """Raise ``STALE_CONTROLLER_EPOCH`` unless this store claimed the newest epoch."""
        if self.controller_epoch <= INITIAL_CONTROLLER_EPOCH:
            raise KafkaProtocolError(ErrorCode.STALE_CONTROLLER_EPOCH, "this store claimed no controller epoch")
        if self._epoch_claimed(self.controller_epoch + 1):
            raise KafkaProtocolError(ErrorCode.STALE_CONTROLLER_EPOCH,
                                     f"controller epoch {self.controller_epoch} superseded by "
                                     f"{self.stored_controller_epoch()}")

    def claim_producer_id_block(self) -> int:
        """The first id of a block of PRODUCER_ID_BLOCK_SIZE producer ids no one else ever gets.

        Fenced like every controller write; the claim itself is a create-if-absent, so even a
        zombie controller that slipped past the fence can only claim a block of its own."""
        self.check_still_controller()
        hint = self._read(PRODUCER_ID_BLOCK_KEY)
        block = -1 if hint is None else int(hint)
        claim = json.dumps({"controller_epoch": self.controller_epoch}).encode()
        for _ in range(CLAIM_ATTEMPTS_MAX):
            block += 1
            if self.kv.put_if_absent(f"{PRODUCER_ID_BLOCK_CLAIM_PREFIX}{block}", claim):
                self.kv.put(PRODUCER_ID_BLOCK_KEY, json.dumps(block).encode())
                return block * PRODUCER_ID_BLOCK_SIZE
        raise KafkaProtocolError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                 f"lost {CLAIM_ATTEMPTS_MAX} producer-id block claims in a row, up to {block}")

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

    def broker_directory(self, broker_id: int) -> str | None:
        return self._read(f"{BROKER_DIRECTORY_PREFIX}{broker_id}")

    def put_broker_directory(self, broker_id: int, directory_id: str) -> None:
        self._write(f"{BROKER_DIRECTORY_PREFIX}{broker_id}", directory_id)

    def broker_configs(self) -> dict[str, dict[str, str]]:
        """Broker resource name (a broker id, or "" for every broker) -> its dynamic keys."""
        configs = {}
        for key in self.kv.keys(BROKER_CONFIG_PREFIX):
            entity = key[len(BROKER_CONFIG_PREFIX):]
            configs["" if entity == BROKER_CONFIG_DEFAULT else entity] = dict(self._read(key) or {})
        return configs

    def put_broker_config(self, name: str, config: dict[str, str]) -> None:
        key = f"{BROKER_CONFIG_PREFIX}{name or BROKER_CONFIG_DEFAULT}"
        if config:
            self._write(key, config)
        else:
            self._delete(key)

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
        for key in self.kv.keys(f"{REASSIGNMENT_PREFIX}{name}/"):
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

    # ------------------------------------------------------------------------ reassignments
    def partition_reassignments(self) -> dict[tuple[str, int], dict]:
        found = {}
        for key in self.kv.keys(REASSIGNMENT_PREFIX):
            topic, _, partition = key[len(REASSIGNMENT_PREFIX):].rpartition("/")
            found[(topic, int(partition))] = self._read(key)
        return found

    def put_partition_reassignment(self, topic: str, partition: int, record: dict) -> None:
        self._write(f"{REASSIGNMENT_PREFIX}{topic}/{partition}", record)

    def delete_partition_reassignment(self, topic: str, partition: int) -> None:
        self._delete(f"{REASSIGNMENT_PREFIX}{topic}/{partition}")
