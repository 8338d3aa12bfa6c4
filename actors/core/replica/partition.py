"""One partition replica on one broker: its log, its role, and the leader's view of its followers.

Theory of operation. A ``Partition`` is created when a LeaderAndIsr request names this broker as a
replica. ``make_leader`` and ``make_follower`` apply a newer leader epoch from the controller; an
epoch that is not newer is refused by the caller before it gets here. As leader the partition
appends produced batches (stamping offsets and its leader epoch), serves consumers up to the high
watermark and followers up to the log end offset, and moves the high watermark to the smallest log
end offset over the ISR. Each follower's fetch offset is that follower's acknowledgement: it
becomes the follower's log end offset here and may move the high watermark.

Which followers hold the high watermark back (Kafka 2.4's ``maybeIncrementLeaderHW``): every
member of the ISR, and every other replica caught up within ``replica.lag.time.max.ms``, so that a
follower catching up is not left behind a high watermark running ahead on the leader's log end
(it could then never join the ISR). A replica counts as caught up when its fetch reached the
leader's log end offset; on election the ISR members count as caught up now and the others as
never, so a replica that was out of the ISR does not stall a new leader.

ISR changes (KIP-497). The leader proposes an ISR change to the controller (AlterPartition,
checked against ``partition_epoch``) and keeps at most one proposal pending. Until the controller
commits it, the leader counts the *maximal* ISR, the union of the committed and the proposed one,
when it advances the high watermark: a follower being added must already be caught up, and a
follower being removed still holds the high watermark back, so an acks=all write is never
acknowledged on the strength of an ISR the controller has not accepted.

A leader re-elected under a new epoch (an ISR or assignment change that left it leading) keeps
what its followers have acknowledged; only a broker that was not leading learns their log end
offsets afresh (Kafka's ``isNewLeader``). StopReplica without delete leaves the replica with
neither role (``stop``) but with its log, high watermark and leader epoch, so a LeaderAndIsr not
newer than that epoch is still refused.

Invariants: ``log_start_offset <= high_watermark <= log_end_offset`` on the leader; the high
watermark never moves backwards while this replica leads one epoch.
"""
from __future__ import annotations

from dataclasses import dataclass

from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.compression import PRODUCER, CompressionCodecs, recompressed_for_topic
from actors.core.log.log import FetchDataInfo, Log, LogAppendInfo
from actors.core.log.record_batch import as_byte_view
from actors.core.messages._base import NO_EPOCH, NO_LEADER
from actors.core.messages.delete_records import HIGH_WATERMARK


NEVER_MS = -1  # a time that has not happened: a follower that never caught up


@dataclass(slots=True)
class RemoteReplica:
    """The leader's record of one follower, updated by that follower's fetches."""
    broker_id: int
    log_end_offset: int = -1  # unknown until the follower's first fetch
    # The latest time the follower's fetch offset reached the leader's log end offset (NEVER_MS: no
    # such time under this leader).
    last_caught_up_time_ms: int = NEVER_MS
    last_fetch_time_ms: int = 0
    last_fetch_leader_log_end_offset: int = -1
    # The high watermark in the last fetch answer sent to this follower: an upper bound on what it
    # knows (KIP-392). A parked fetch of this follower completes once the leader's is higher.
    last_sent_high_watermark: int = 0
    # The follower's log start offset from its latest fetch (-1: not known yet); DeleteRecords
    # waits for it (``low_watermark``).
    log_start_offset: int = -1

    def caught_up_within(self, now_ms: int, lag_time_max_ms: int) -> bool:
        return self.last_caught_up_time_ms != NEVER_MS and now_ms - self.last_caught_up_time_ms <= lag_time_max_ms


class Partition:
    def __init__(self, *, topic: str, partition: int, local_broker_id: int, log: Log,
                 high_watermark: int, min_insync_replicas: int, replica_lag_time_max_ms: int,
                 codecs: CompressionCodecs | None = None) -> None:
        self.topic = topic
        self.codecs = codecs  # for a topic whose compression.type is not the producer's
        self.partition = partition
        self.local_broker_id = local_broker_id
        self.log = log
        self.min_insync_replicas = min_insync_replicas
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        # A checkpointed high watermark can lag the log but never lead it.
        self.high_watermark = max(log.log_start_offset, min(high_watermark, log.log_end_offset))
        self.leader_id = NO_LEADER
        self.leader_epoch = NO_EPOCH
        self.leader_epoch_start_offset = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.pending_isr: tuple[int, ...] | None = None  # proposed to the controller, not yet committed
        self.remote_replicas: dict[int, RemoteReplica] = {}

    @property
    def topic_partition(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    # ----------------------------------------------------------------------------- role changes
    def make_leader(self, *, leader_epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...],
                    partition_epoch: int, controller_epoch: int, now_ms: int) -> None:
        assert leader_epoch > self.leader_epoch, "caller must refuse a leader epoch that is not newer"
        is_new_leader = not self.is_leader
        self._set_assignment(leader=self.local_broker_id, leader_epoch=leader_epoch, isr=isr,
                             replicas=replicas, partition_epoch=partition_epoch,
                             controller_epoch=controller_epoch)
        log_end_offset = self.log.log_end_offset
        self.leader_epoch_start_offset = log_end_offset
        # The leader epoch cache marks where this epoch's records begin (KIP-101).
        self.log.leader_epoch_cache.assign(leader_epoch, log_end_offset)
        # A new leader's followers prove their progress again; a leader staying on under a new
        # epoch keeps what they have acknowledged (Kafka resets it only when isNewLeader).
        known = {} if is_new_leader else self.remote_replicas
        self.remote_replicas = {broker_id: known.get(broker_id) or RemoteReplica(broker_id)
                                for broker_id in replicas if broker_id != self.local_broker_id}
        for remote in self.remote_replicas.values():
            # Kafka's resetLastCaughtUpTime: ISR members are caught up now, the others never.
            remote.last_caught_up_time_ms = now_ms if remote.broker_id in self.isr else NEVER_MS
            remote.last_fetch_leader_log_end_offset = log_end_offset
            remote.last_fetch_time_ms = now_ms
        self.maybe_increment_high_watermark(now_ms)

    def make_follower(self, *, leader: int, leader_epoch: int, isr: tuple[int, ...],
                      replicas: tuple[int, ...], partition_epoch: int, controller_epoch: int) -> None:
        assert leader_epoch > self.leader_epoch, "caller must refuse a leader epoch that is not newer"
        self._set_assignment(leader=leader, leader_epoch=leader_epoch, isr=isr, replicas=replicas,
                             partition_epoch=partition_epoch, controller_epoch=controller_epoch)
        self.leader_epoch_start_offset = -1
        self.remote_replicas = {}

    def stop(self) -> None:
        """StopReplica without delete: neither lead nor follow until the next LeaderAndIsr, which
        must still be newer than ``leader_epoch``; the log and the high watermark stay."""
        self.leader_id = NO_LEADER
        self.leader_epoch_start_offset = -1
        self.pending_isr = None
        self.remote_replicas = {}

    def _set_assignment(self, *, leader: int, leader_epoch: int, isr: tuple[int, ...],
                        replicas: tuple[int, ...], partition_epoch: int, controller_epoch: int) -> None:
        self.leader_id = leader
        self.leader_epoch = leader_epoch
        self.isr = tuple(isr)
        self.replicas = tuple(replicas)
        self.partition_epoch = partition_epoch
        self.controller_epoch = controller_epoch
        self.pending_isr = None

    # ------------------------------------------------------------------------------ leader side
    def check_leader_epoch(self, current_leader_epoch: int) -> ErrorCode:
        """Kafka's fencing of data requests by the client's view of the leader epoch."""
        if current_leader_epoch == NO_EPOCH:
            return ErrorCode.NONE
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.NONE

    def append_records_to_leader(self, records, *, required_acks: int, now_ms: int) -> LogAppendInfo:
        if not self.is_leader:
            raise KafkaProtocolError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                     f"broker {self.local_broker_id} does not lead {self.topic}-{self.partition}")
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise KafkaProtocolError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"ISR {list(self.isr)} is smaller than min.insync.replicas={self.min_insync_replicas}")
        config = self.log.config
        if config.compression_type != PRODUCER:
            records = recompressed_for_topic(as_byte_view(records), config.compression_type, self.codecs,
                                             max_message_bytes=config.max_message_bytes)
        info = self.log.append_as_leader(records, self.leader_epoch)
        self.maybe_increment_high_watermark(now_ms)
        return info

    def read_records(self, *, fetch_offset: int, max_bytes: int, from_follower: bool,
                     min_one_batch: bool) -> FetchDataInfo:
        """Read whole batches: up to the log end for followers, the high watermark for consumers."""
        max_offset = None if from_follower else self.high_watermark
        return self.log.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch)

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, now_ms: int, *,
                                    sent_high_watermark: int, log_start_offset: int = -1) -> bool:
        """Record a follower's fetch offset as its log end offset, and the high watermark its answer
        carries; True when the HW moved."""
        remote = self.remote_replicas.get(replica_id)
        if remote is None:
            return False
        leader_end_offset = self.log.log_end_offset
        if fetch_offset > leader_end_offset or fetch_offset < 0:
            return False  # the read answered OFFSET_OUT_OF_RANGE; this is no acknowledgement
        if fetch_offset == leader_end_offset:
            remote.last_caught_up_time_ms = max(remote.last_caught_up_time_ms, now_ms)
        elif fetch_offset >= remote.last_fetch_leader_log_end_offset >= 0:
            # Caught up to where the leader was at the follower's previous fetch (Kafka's rule).
            remote.last_caught_up_time_ms = max(remote.last_caught_up_time_ms, remote.last_fetch_time_ms)
        remote.log_end_offset = fetch_offset
        remote.log_start_offset = log_start_offset
        remote.last_fetch_leader_log_end_offset = leader_end_offset
        remote.last_fetch_time_ms = now_ms
        remote.last_sent_high_watermark = sent_high_watermark
        return self.maybe_increment_high_watermark(now_ms)

    def follower_needs_high_watermark(self, replica_id: int) -> bool:
        """Whether ``replica_id`` was last sent a lower high watermark than the current one."""
        remote = self.remote_replicas.get(replica_id)
        return self.is_leader and remote is not None and remote.last_sent_high_watermark < self.high_watermark

    def record_sent_high_watermark(self, replica_id: int, high_watermark: int) -> None:
        remote = self.remote_replicas.get(replica_id)
        if remote is not None:
            remote.last_sent_high_watermark = high_watermark

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    def maybe_increment_high_watermark(self, now_ms: int) -> bool:
        """Move the HW to the smallest log end offset over the maximal ISR and the replicas caught
        up within ``replica.lag.time.max.ms``; True when it moved."""
        if not self.is_leader:
            return False
        maximal_isr = self.maximal_isr
        end_offsets = [self.log.log_end_offset]
        for broker_id in maximal_isr:
            if broker_id != self.local_broker_id and broker_id not in self.remote_replicas:
                end_offsets.append(-1)  # an ISR member this leader has no record of: wait for it
        for remote in self.remote_replicas.values():
            if remote.broker_id in maximal_isr or remote.caught_up_within(now_ms, self.replica_lag_time_max_ms):
                end_offsets.append(remote.log_end_offset)
        candidate = min(end_offsets)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            assert self.high_watermark <= self.log.log_end_offset
            return True
        return False

    # ---------------------------------------------------------------------------- DeleteRecords
    @property
    def low_watermark(self) -> int:
        """Kafka's ``lowWatermarkIfLeader``: the smallest log start offset over this leader and the
        followers in the (maximal) ISR, each as its latest fetch said (-1 while one has not said).
        Kafka 2.4 takes every live replica; a replica outside the ISR would hold DeleteRecords
        until its timeout for a deletion that replica will learn of when it catches up."""
        low_watermark = self.log.log_start_offset
        isr = self.maximal_isr
        for remote in self.remote_replicas.values():
            if remote.broker_id in isr:
                low_watermark = min(low_watermark, remote.log_start_offset)
        return low_watermark

    def delete_records_on_leader(self, offset: int) -> int:
        """Kafka's ``deleteRecordsOnLeader``: move the log start offset up to ``offset`` (-1: the high
        watermark), never above the high watermark (OFFSET_OUT_OF_RANGE), on a log whose
        cleanup.policy includes delete (POLICY_VIOLATION); returns the offset asked for."""
        if not self.is_leader:
            raise KafkaProtocolError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                     f"broker {self.local_broker_id} does not lead {self.topic}-{self.partition}")
        if not self.log.config.delete:
            raise KafkaProtocolError(ErrorCode.POLICY_VIOLATION, f"Records of partition {self.topic}-"
                                     f"{self.partition} can not be deleted due to the configured policy")
        requested = self.high_watermark if offset == HIGH_WATERMARK else offset
        if requested < 0 or requested > self.high_watermark:
            raise KafkaProtocolError(ErrorCode.OFFSET_OUT_OF_RANGE, (
                f"Cannot increment the log start offset to {requested} of partition {self.topic}-"
                f"{self.partition} since it is {'negative' if requested < 0 else 'larger than the high watermark'}"
                f" {self.high_watermark}"))
        self.log.maybe_increment_log_start_offset(requested)
        return requested

    # ------------------------------------------------------------------------------- ISR changes
    def isr_expansion_candidate(self, replica_id: int) -> tuple[int, ...] | None:
        """The ISR with ``replica_id`` added, if it has caught up (Kafka's ``maybeExpandIsr``):
        it has reached the high watermark and the start of this leader's epoch."""
        if not self.is_leader or self.pending_isr is not None or replica_id in self.isr:
            return None
        remote = self.remote_replicas.get(replica_id)
        if remote is None or replica_id not in self.replicas:
            return None
        if remote.log_end_offset >= self.high_watermark and remote.log_end_offset >= self.leader_epoch_start_offset:
            return self.isr + (replica_id,)
        return None

    def isr_shrink_candidate(self, now_ms: int) -> tuple[int, ...] | None:
        """The ISR without followers not caught up within ``replica.lag.time.max.ms``."""
        if not self.is_leader or self.pending_isr is not None:
            return None
        lagging = [r for r in self.isr if r != self.local_broker_id
                   and not self.remote_replicas[r].caught_up_within(now_ms, self.replica_lag_time_max_ms)]
        if not lagging:
            return None
        return tuple(r for r in self.isr if r not in lagging)

    def propose_isr(self, new_isr: tuple[int, ...]) -> None:
        assert self.is_leader and self.pending_isr is None and self.local_broker_id in new_isr
        self.pending_isr = new_isr

    def on_isr_committed(self, *, leader_epoch: int, isr: tuple[int, ...], partition_epoch: int,
                         now_ms: int) -> bool:
        """The controller accepted an ISR; True when the high watermark moved."""
        if leader_epoch != self.leader_epoch:
            return False  # an answer for an earlier leadership; its proposal died with it
        if partition_epoch <= self.partition_epoch:
            self.pending_isr = None  # already superseded: propose again from the current state
            return False
        self.isr = tuple(isr)
        self.partition_epoch = partition_epoch
        self.pending_isr = None
        return self.maybe_increment_high_watermark(now_ms)

    def on_isr_refused(self) -> None:
        """The controller refused the proposal (a newer partition state exists): propose again later."""
        self.pending_isr = None

    # ------------------------------------------------------------------------------ follower side
    def update_follower_high_watermark(self, leader_high_watermark: int) -> None:
        """A follower's HW is min(leader's HW from the fetch response, its own log end offset)."""
        assert not self.is_leader
        self.high_watermark = max(self.log.log_start_offset,
                                  min(leader_high_watermark, self.log.log_end_offset))

    def update_follower_log_start_offset(self, leader_log_start_offset: int) -> bool:
        """Kafka's follower raises its log start offset to the leader's from each fetch answer
        (segments wholly below it are deleted at once); never past its own high watermark, which
        an answer carrying fewer records than the leader holds below its start may leave lower:
        the next fetch then falls below the leader's start and the follower restarts its log
        there. True when the start moved."""
        assert not self.is_leader
        if leader_log_start_offset < 0:
            return False  # a leader that sent none
        return self.log.maybe_increment_log_start_offset(min(leader_log_start_offset, self.high_watermark))
