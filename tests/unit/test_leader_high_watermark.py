"""Which followers hold the leader's high watermark back, as in Kafka 2.4's Partition: the ISR, the
ISR proposed but not yet committed (KIP-497), and any replica caught up within
replica.lag.time.max.ms; and a leader that keeps leading under a new epoch keeps what it knows of
its followers. Driven step by step through the replica manager with a fake clock, no Ray."""
from __future__ import annotations

from actors.core.effects import Send
from actors.core.errors import ErrorCode
from actors.core.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse
from tests.support.core_driver import CoreDriver, make_batch, produce_result

LAG_TIME_MAX_MS = 1000


class Leader(CoreDriver):
    """Broker 0 leading t-0; ``proposals`` holds the AlterPartition requests sent to the controller."""

    def __init__(self, **config):
        self.proposals: list[AlterPartitionRequest] = []
        super().__init__(broker_id=0, config={"replica.lag.time.max.ms": str(LAG_TIME_MAX_MS), **config})

    def _apply(self, effects):
        self.proposals += [e.message for e in effects if isinstance(e, Send) and e.destination == "controller"]
        super()._apply(effects)

    @property
    def partition(self):
        return self.manager.partitions[("t", 0)]

    def refuse_proposals(self) -> None:
        """The controller refuses every pending proposal outright (it no longer is the controller)."""
        for proposal in self.proposals:
            self.manager.on_alter_partition_response(
                proposal, AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER), self.now_ms)
        self.proposals.clear()

    def lose_answers(self) -> None:
        """No answer comes to any pending proposal (a timeout, a lost connection): the controller
        may or may not have committed it."""
        for proposal in self.proposals:
            self.manager.on_alter_partition_response(proposal, ErrorCode.NETWORK_EXCEPTION, self.now_ms)
        self.proposals.clear()


# ------------------------------------------------------------- the same leader under a new epoch
def test_a_leader_reelected_under_a_new_epoch_keeps_its_followers_log_end_offsets():
    leader = Leader()
    leader.become("t", 0, leader=0, replicas=(0, 1, 2), isr=(0, 1, 2), leader_epoch=1)
    produce_id = leader.produce("t", 0, make_batch([b"a", b"b"]), acks=-1)
    leader.fetch("t", 0, 2, replica_id=1)  # broker 1 has both records
    # The controller bumps the epoch with this broker still leading (an ISR or assignment change).
    leader.become("t", 0, leader=0, replicas=(0, 1, 2), isr=(0, 1, 2), leader_epoch=2)
    assert leader.partition.remote_replicas[1].log_end_offset == 2
    leader.fetch("t", 0, 2, replica_id=2)  # the last one the HW waited for
    assert leader.partition.high_watermark == 2, "broker 1's acknowledgement was forgotten"
    assert produce_result(leader.answers[produce_id]).error_code == ErrorCode.NONE


def test_a_new_leader_learns_its_followers_log_end_offsets_afresh():
    leader = Leader()
    leader.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=1)
    leader.produce("t", 0, make_batch([b"a"]))
    leader.fetch("t", 0, 1, replica_id=1)
    leader.become("t", 0, leader=1, replicas=(0, 1), isr=(0, 1), leader_epoch=2)
    leader.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=3)
    assert leader.partition.remote_replicas[1].log_end_offset == -1


# ------------------------------------------------------------ caught-up replicas outside the ISR
def leader_with_caught_up_follower_outside_the_isr() -> Leader:
    """ISR (0,); broker 1 fetched at the log end just now, but its ISR expansion was refused."""
    leader = Leader()
    leader.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), leader_epoch=1)
    leader.produce("t", 0, make_batch([b"a"]))
    leader.fetch("t", 0, 1, replica_id=1)
    assert leader.partition.pending_isr == (0, 1) and len(leader.proposals) == 1
    leader.refuse_proposals()
    assert (leader.partition.isr, leader.partition.pending_isr) == ((0,), None)
    return leader


def test_a_replica_caught_up_within_the_lag_time_holds_the_high_watermark_back_outside_the_isr():
    leader = leader_with_caught_up_follower_outside_the_isr()
    leader.produce("t", 0, make_batch([b"b"]))
    assert leader.partition.high_watermark == 1, "a follower catching up must not be left behind the HW"
    leader.advance(LAG_TIME_MAX_MS // 2)
    leader.fetch("t", 0, 2, replica_id=1)
    assert leader.partition.high_watermark == 2


def test_a_replica_not_caught_up_within_the_lag_time_no_longer_holds_the_high_watermark_back():
    leader = leader_with_caught_up_follower_outside_the_isr()
    produce_id = leader.produce("t", 0, make_batch([b"b"]), acks=-1)
    assert produce_id not in leader.answers
    leader.advance(LAG_TIME_MAX_MS + 1)  # broker 1 never fetches again
    # Kafka moves the HW on the next append; raykafka's ISR-expiration check does it too, so an
    # acks=all produce does not wait for another write.
    assert leader.partition.high_watermark == 2
    assert produce_result(leader.answers[produce_id]).error_code == ErrorCode.NONE


def test_a_caught_up_replica_whose_isr_expansion_is_pending_holds_the_high_watermark_back():
    leader = Leader()
    leader.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), leader_epoch=1)
    leader.produce("t", 0, make_batch([b"a"]))
    leader.fetch("t", 0, 1, replica_id=1)
    assert leader.partition.pending_isr == (0, 1)
    leader.advance(LAG_TIME_MAX_MS * 3)  # the pending member counts however long ago it caught up
    leader.produce("t", 0, make_batch([b"b"]))
    assert leader.partition.high_watermark == 1


def test_an_unanswered_isr_expansion_stays_pending_and_is_sent_again_until_the_controller_answers():
    leader = Leader()
    leader.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), leader_epoch=1)
    leader.produce("t", 0, make_batch([b"a"]))
    leader.fetch("t", 0, 1, replica_id=1)
    (proposal,) = leader.proposals
    leader.lose_answers()
    # The controller may hold ISR {0, 1} now and elect broker 1: broker 1 keeps holding the high
    # watermark back, however long it stays away, and nothing else is proposed in the meantime.
    assert leader.partition.pending_isr == (0, 1)
    produce_id = leader.produce("t", 0, make_batch([b"b"]), acks=-1)
    leader.advance(LAG_TIME_MAX_MS * 3)
    assert leader.partition.high_watermark == 1
    assert produce_id not in leader.answers
    assert leader.proposals, "the unanswered proposal was not sent again"
    assert set(leader.proposals) == {proposal}, "anything but the unanswered proposal itself was sent"


def test_an_unanswered_isr_proposal_is_dropped_when_the_partition_gets_a_new_leader_epoch():
    leader = Leader()
    leader.become("t", 0, leader=0, replicas=(0, 1), isr=(0,), leader_epoch=1)
    leader.produce("t", 0, make_batch([b"a"]))
    leader.fetch("t", 0, 1, replica_id=1)
    leader.lose_answers()
    leader.become("t", 0, leader=0, replicas=(0, 1), isr=(0, 1), leader_epoch=2)
    leader.advance(LAG_TIME_MAX_MS // 4)
    assert leader.partition.pending_isr is None and leader.proposals == []


def test_a_replica_outside_the_isr_at_election_does_not_hold_the_new_leaders_high_watermark_back():
    leader = Leader()
    leader.become("t", 0, leader=0, replicas=(0, 1, 2), isr=(0, 1), leader_epoch=1)
    leader.produce("t", 0, make_batch([b"a"]))
    leader.fetch("t", 0, 1, replica_id=1)
    assert leader.partition.high_watermark == 1, "broker 2 has not caught up since this leader was elected"
