"""Replication on a broker: becoming a follower, serving a fetcher's local requests, and the
leader's side of the ISR (OffsetForLeaderEpoch answers, ISR expansion and shrinking).

Theory of operation.
- ``become_follower``: after LeaderAndIsr names another broker leader, the partition is handed to
  the fetcher for (leader, fetcher id) starting at the log end offset. Under the default
  ``leader-epoch`` truncation policy the fetcher first asks the leader where this replica's latest
  epoch ended (KIP-101/279); under the ``high-watermark`` policy (kept to reproduce the pre-KIP-101
  bugs) the log is truncated to the high watermark right here and fetching starts there.
- ``handle_follower_truncate`` / ``handle_follower_append``: the fetcher's requests on this
  broker's log; each names the leader epoch it works under and is refused if the partition has
  moved on. An append sets the follower's high watermark to min(leader HW, log end offset) and
  raises its log start offset to the leader's (no higher than that high watermark).
- ``handle_offset_for_leader_epoch``: a leader's answer to a follower's (or consumer's) question.
- ISR: every follower fetch may add that follower to the ISR; the expiration check (every half
  ``replica.lag.time.max.ms``) drops followers not caught up within ``replica.lag.time.max.ms``.
  Either proposes the change to the controller with AlterPartition, through the broker's
  AlterPartition manager (one request in flight, the changes proposed meanwhile batched into the
  next); ``on_alter_partition_response`` applies the committed ISR and sends what waited. A
  change refused because this leader is stale is dropped until the next LeaderAndIsr. A proposal
  whose request got no answer stays pending and is proposed again unchanged
  (``resend_unanswered_isr_proposals``) until the controller answers it.

The replica manager owns one ``Replication``, built from what it needs of the manager: the hosted
partitions, ``leader_partition``, the purgatories (an ISR or high-watermark change may complete a
delayed produce or fetch), the fetcher manager, the AlterPartition manager, and the broker epoch.
"""
from __future__ import annotations

from collections.abc import Callable

from actors.core import metrics
from actors.core.effects import Effect, LogEvent, Respond
from actors.core.errors import ErrorCode, KafkaProtocolError
from actors.core.log.record_batch import as_byte_view
from actors.core.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from actors.core.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, OffsetForLeaderPartitionResult,
    OffsetForLeaderTopicResult,
)
from actors.core.replica.alter_partition_manager import AlterPartitionManager, IsrChange
from actors.core.fetcher.follower_messages import (
    FollowerAppendRequest, FollowerAppendResponse, FollowerPartitionState, FollowerTruncateRequest,
    FollowerTruncateResponse, InitialFetchState,
)
from actors.core.replica.partition import Partition
from actors.core.replica.purgatory import DelayedOperations
from actors.core.fetcher.fetcher_manager import FetcherManager
from actors.core.fetcher.truncation import apply_follower_truncation


LEADER_EPOCH_POLICY = "leader-epoch"
HIGH_WATERMARK_POLICY = "high-watermark"
TRUNCATION_POLICIES = (LEADER_EPOCH_POLICY, HIGH_WATERMARK_POLICY)
# How long an AlterPartition that got no answer waits before it is sent again.
ALTER_PARTITION_RETRY_BACKOFF_MS = 100
TopicPartition = tuple[str, int]


def _state(partition: Partition, **extra) -> FollowerPartitionState:
    return FollowerPartitionState(topic=partition.topic, partition=partition.partition,
                                  log_end_offset=partition.log_end_offset,
                                  latest_epoch=partition.log.latest_epoch,
                                  high_watermark=partition.high_watermark,
                                  log_start_offset=partition.log_start_offset, **extra)


# The controller's refusals that say this leader is stale (deposed, or its topic gone). Kafka's
# ``Partition`` gives up on such a change and keeps it pending, so the leader proposes nothing more
# until the controller's LeaderAndIsr (or StopReplica), already on its way, resets the partition;
# proposing again would only be refused again. A pending change counts for the high watermark
# through the maximal ISR, which only holds it back.
_STALE_LEADER_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
                                  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


class Replication:
    def __init__(self, *, broker_id: int, partitions: dict[TopicPartition, Partition],
                 leader_partition: Callable[[TopicPartition], Partition], delayed: DelayedOperations,
                 fetcher_manager: FetcherManager, alter_partition_manager: AlterPartitionManager,
                 truncation_policy: str, broker_epoch: Callable[[], int]) -> None:
        """``broker_epoch`` gives the epoch the controller registered this broker with (-1 before),
        which every AlterPartition carries (Kafka's ``brokerEpochSupplier``)."""
        self.broker_id = broker_id
        self.partitions = partitions
        self.leader_partition = leader_partition
        self.delayed = delayed
        self.fetcher_manager = fetcher_manager
        self.alter_partition_manager = alter_partition_manager
        self.truncation_policy = truncation_policy
        self.broker_epoch = broker_epoch
        # Proposals whose AlterPartition got no answer: (leader epoch, when to send again) by partition.
        self.unanswered_isr_proposals: dict[TopicPartition, tuple[int, int]] = {}

    # ------------------------------------------------------------------------------ follower side
    def become_follower(self, partition: Partition) -> list[Effect]:
        effects: list[Effect] = []
        log = partition.log
        if self.truncation_policy == HIGH_WATERMARK_POLICY and log.log_end_offset > partition.high_watermark:
            # The pre-KIP-101 rule: everything above the follower's own high watermark is suspect.
            effects.append(LogEvent(level="info", message=(
                f"broker {self.broker_id} truncates {partition.topic}-{partition.partition} to its high "
                f"watermark {partition.high_watermark} (high-watermark policy; LEO was {log.log_end_offset})")))
            log.truncate_to(partition.high_watermark)
            # A high watermark inside a batch loses that whole batch: Kafka's Log lowers the high
            # watermark to the new log end offset (updateLogEndOffset), and so does this replica.
            partition.high_watermark = min(partition.high_watermark, partition.log_end_offset)
        return effects + self.fetcher_manager.add([(partition.leader_id, self.initial_fetch_state(partition))])

    def initial_fetch_state(self, partition: Partition) -> InitialFetchState:
        return InitialFetchState(
            topic=partition.topic, partition=partition.partition, current_leader_epoch=partition.leader_epoch,
            fetch_offset=partition.log.log_end_offset, latest_epoch=partition.log.latest_epoch,
            needs_truncation=self.truncation_policy == LEADER_EPOCH_POLICY,
            log_start_offset=partition.log_start_offset)

    def _follower_partition(self, topic: str, index: int, current_leader_epoch: int) -> Partition:
        partition = self.partitions.get((topic, index))
        if partition is None or partition.is_leader or partition.leader_id < 0:
            raise KafkaProtocolError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{topic}-{index} is not followed here")
        if current_leader_epoch != partition.leader_epoch:
            raise KafkaProtocolError(ErrorCode.FENCED_LEADER_EPOCH,
                                     f"{topic}-{index} is at leader epoch {partition.leader_epoch}")
        return partition

    def handle_follower_truncate(self, request_id: int, request: FollowerTruncateRequest,
                                 now_ms: int) -> list[Effect]:
        results, effects = [], []
        for asked in request.partitions:
            try:
                partition = self._follower_partition(asked.topic, asked.partition, asked.current_leader_epoch)
            except KafkaProtocolError as exc:
                results.append(FollowerPartitionState(topic=asked.topic, partition=asked.partition,
                                                      error_code=exc.error_code))
                continue
            before = partition.log_end_offset
            state = apply_follower_truncation(partition.log, asked, high_watermark=partition.high_watermark)
            partition.high_watermark = min(partition.high_watermark, partition.log_end_offset)
            if partition.log_end_offset < before:
                effects.append(LogEvent(level="info", message=(
                    f"broker {self.broker_id} truncated {asked.topic}-{asked.partition} from {before} to "
                    f"{partition.log_end_offset} ({asked.mode.value})")))
            results.append(state)
        effects.append(Respond(request_id=request_id, response=FollowerTruncateResponse(partitions=tuple(results))))
        return effects

    def handle_follower_append(self, request_id: int, request: FollowerAppendRequest,
                               now_ms: int) -> list[Effect]:
        results = []
        for asked in request.partitions:
            try:
                partition = self._follower_partition(asked.topic, asked.partition, asked.current_leader_epoch)
                if asked.fetch_offset != partition.log_end_offset:
                    # The fetch raced a truncation: the fetcher must resume from where the log ends now.
                    results.append(_state(partition, error_code=ErrorCode.OFFSET_OUT_OF_RANGE))
                    continue
                records = as_byte_view(asked.records)  # CORRUPT_MESSAGE unless bytes-like
                if len(records):
                    partition.log.append_as_follower(records)
                partition.update_follower_high_watermark(asked.leader_high_watermark)
                partition.update_follower_log_start_offset(asked.leader_log_start_offset)
            except KafkaProtocolError as exc:
                results.append(FollowerPartitionState(topic=asked.topic, partition=asked.partition,
                                                      error_code=exc.error_code))
                continue
            results.append(_state(partition))
        return [Respond(request_id=request_id, response=FollowerAppendResponse(partitions=tuple(results)))]

    # -------------------------------------------------------------------------------- leader side
    def handle_offset_for_leader_epoch(self, request_id: int,
                                       request: OffsetForLeaderEpochRequest, now_ms: int) -> list[Effect]:
        topics = []
        for topic in request.topics:
            answers = []
            for asked in topic.partitions:
                try:
                    partition = self.leader_partition((topic.topic, asked.partition))
                except KafkaProtocolError as exc:
                    answers.append(OffsetForLeaderPartitionResult(partition=asked.partition, error_code=exc.error_code))
                    continue
                fenced = partition.check_leader_epoch(asked.current_leader_epoch)
                if fenced != ErrorCode.NONE:
                    answers.append(OffsetForLeaderPartitionResult(partition=asked.partition, error_code=fenced))
                    continue
                epoch, end_offset = partition.log.end_offset_for_epoch(asked.leader_epoch)
                answers.append(OffsetForLeaderPartitionResult(partition=asked.partition, leader_epoch=epoch,
                                                              end_offset=end_offset))
            topics.append(OffsetForLeaderTopicResult(topic=topic.topic, partitions=tuple(answers)))
        return [Respond(request_id=request_id, response=OffsetForLeaderEpochResponse(topics=tuple(topics)))]

    def propose_isr_changes(self, proposals: dict[tuple[str, int], tuple[int, ...]]) -> list[Effect]:
        """Record each proposal as pending and hand them to the AlterPartition manager, which sends
        them in one request now, or with everything else proposed meanwhile once the request in
        flight is answered."""
        if not proposals:
            return []
        effects: list[Effect] = []
        changes = []
        for (topic, index), new_isr in sorted(proposals.items()):
            partition = self.partitions[(topic, index)]
            partition.propose_isr(new_isr)
            changes.append(IsrChange(topic_partition=(topic, index), leader_epoch=partition.leader_epoch,
                                     partition_epoch=partition.partition_epoch, new_isr=new_isr))
            effects.append(LogEvent(level="info", message=(
                f"broker {self.broker_id} proposes ISR {list(new_isr)} for {topic}-{index} "
                f"(was {list(partition.isr)})")))
        return effects + self.alter_partition_manager.submit(changes, self.partitions, self.broker_epoch())

    def resend_unanswered_isr_proposals(self, now_ms: int) -> list[Effect]:
        """Propose again, once their backoff has passed, the proposals whose AlterPartition got no
        answer and that are still pending under the leader epoch they were made in; they go through
        the AlterPartition manager, with whatever else is waiting."""
        due = [tp for tp, (_, resend_ms) in self.unanswered_isr_proposals.items() if resend_ms <= now_ms]
        changes = []
        for topic_partition in due:
            leader_epoch, _ = self.unanswered_isr_proposals.pop(topic_partition)
            partition = self.partitions.get(topic_partition)
            if (partition is not None and partition.is_leader and partition.pending_isr is not None
                    and partition.leader_epoch == leader_epoch):
                changes.append(IsrChange(topic_partition=topic_partition, leader_epoch=leader_epoch,
                                         partition_epoch=partition.partition_epoch, new_isr=partition.pending_isr))
        if not changes:
            return []
        return self.alter_partition_manager.submit(changes, self.partitions, self.broker_epoch())

    def maybe_expand_isrs(self, topic_partitions: list[tuple[str, int]],
                          replica_id: int) -> list[Effect]:
        """Kafka's ``maybeExpandIsr`` for every partition one follower fetch read, proposed together."""
        proposals = {}
        for topic_partition in topic_partitions:
            candidate = self.partitions[topic_partition].isr_expansion_candidate(replica_id)
            if candidate:
                proposals[topic_partition] = candidate
        return self.propose_isr_changes(proposals)

    def maybe_shrink_isrs(self, now_ms: int) -> list[Effect]:
        """Kafka's ISR-expiration task. It also recomputes every led partition's high watermark: a
        replica outside the ISR that stopped fetching holds it back only for
        ``replica.lag.time.max.ms``, and Kafka lets it go at the next append or follower fetch, which
        leaves an acks=all produce waiting when none comes."""
        proposals = {}
        effects: list[Effect] = []
        for topic_partition, partition in list(self.partitions.items()):
            if partition.maybe_increment_high_watermark(now_ms):
                effects.extend(self.delayed.try_complete(topic_partition, now_ms))
            candidate = partition.isr_shrink_candidate(now_ms)
            if candidate is not None:
                proposals[topic_partition] = candidate
        return effects + self.propose_isr_changes(proposals)

    def on_alter_partition_response(self, request: AlterPartitionRequest, response,
                                    now_ms: int) -> list[Effect]:
        """Apply the controller's answer, then send the changes that waited for it."""
        self.alter_partition_manager.on_answer(request)
        effects = self._apply_alter_partition_response(request, response, now_ms)
        return effects + self.alter_partition_manager.send_unsent(self.partitions, self.broker_epoch())

    def _apply_alter_partition_response(self, request: AlterPartitionRequest, response,
                                        now_ms: int) -> list[Effect]:
        effects: list[Effect] = []
        asked = {(t.topic_name, p.partition_index): p for t in request.topics for p in t.partitions}

        def still_proposed(partition: Partition) -> bool:
            # A refusal concerns the proposal it answers, not one made since under a new leadership.
            proposal = asked[partition.topic_partition]
            return partition.leader_epoch == proposal.leader_epoch and partition.pending_isr == tuple(proposal.new_isr)

        if isinstance(response, ErrorCode):
            return self._on_alter_partition_unanswered(request, now_ms)
        if response.error_code != ErrorCode.NONE:
            # The controller refused the whole request, committing nothing: forget the proposals and
            # propose again from the current state later.
            for topic_partition in asked:
                partition = self.partitions.get(topic_partition)
                if partition is not None and still_proposed(partition):
                    partition.on_isr_refused()
            return effects
        assert isinstance(response, AlterPartitionResponse)
        for topic in response.topics:
            for answer in topic.partitions:
                topic_partition = (topic.topic_name, answer.partition_index)
                partition = self.partitions.get(topic_partition)
                if partition is None or not partition.is_leader or topic_partition not in asked:
                    continue
                if answer.error_code != ErrorCode.NONE:
                    if not still_proposed(partition):
                        continue
                    stale = answer.error_code in _STALE_LEADER_ERRORS
                    if not stale:
                        partition.on_isr_refused()
                    effects.append(LogEvent(level="info", message=(
                        f"controller refused the ISR change for {topic_partition[0]}-{topic_partition[1]}: "
                        f"{ErrorCode(answer.error_code).name}"
                        + ("; dropped until the controller's next LeaderAndIsr" if stale else ""))))
                    continue
                isr_size_before = len(partition.isr)
                if partition.on_isr_committed(leader_epoch=answer.leader_epoch, isr=tuple(answer.isr),
                                              partition_epoch=answer.partition_epoch, now_ms=now_ms):
                    effects.extend(self.delayed.try_complete(topic_partition, now_ms))
                effects.extend(metrics.isr_change(self.broker_id, isr_size_before, len(partition.isr)))
        return effects

    def _on_alter_partition_unanswered(self, request: AlterPartitionRequest,
                                       now_ms: int) -> list[Effect]:
        """No answer came (a timeout, an unreachable controller): the controller may have committed
        any of the proposals. Each stays pending and is sent again unchanged after a backoff, as
        Kafka's AlterIsrManager keeps an item until the controller answers it; a copy of a committed
        change is answered with the committed state. Forgetting the proposal instead could leave this
        leader on an ISR the controller no longer holds: a smaller one lets the high watermark pass a
        replica the controller may elect, and a different proposal made next at the old partition
        epoch is refused for good, so the controller's ISR is never completed again."""
        for topic in request.topics:
            for asked in topic.partitions:
                topic_partition = (topic.topic_name, asked.partition_index)
                partition = self.partitions.get(topic_partition)
                if (partition is not None and partition.is_leader and partition.leader_epoch == asked.leader_epoch
                        and partition.pending_isr == tuple(asked.new_isr)):
                    self.unanswered_isr_proposals[topic_partition] = (
                        asked.leader_epoch, now_ms + ALTER_PARTITION_RETRY_BACKOFF_MS)
        return []
