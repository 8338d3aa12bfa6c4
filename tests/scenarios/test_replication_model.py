"""The replication round-trip model (orchestration/simulation/replication_model.py) counts what the
shipped drivers send for an acks=all batch: checked against counts worked out by hand for an idle
three-broker cluster (RF=3), and against the latencies and waits its parameters set.

By hand, one batch to one partition on an idle cluster: the ProduceRequest reaches the leader, which
appends and answers both followers' parked fetches with the records (2 FetchResponses); each
fetcher appends on its own broker (2 FollowerAppendRequests and their answers) and fetches again
from its new log end (2 FetchRequests); the second of those moves the high watermark, which answers
the produce (ProduceResponse) and both followers' fetches with the new high watermark (2 more
FetchResponses), which each follower appends (2 appends and answers) and fetches again (2
FetchRequests, parked): 18 messages. The critical path is ProduceRequest, FetchResponse,
FollowerAppendRequest, FollowerAppendResponse, FetchRequest, ProduceResponse: 6 hops. That is
Kafka's rule (``raykafka.replica.high.watermark.linger.ms=0``). With raykafka's default linger the
followers' fetches wait for records to carry the new high watermark: the round of 6 record-less
messages leaves the path of every batch that follows within the linger.
"""
from __future__ import annotations

import pytest

from orchestration.simulation.replication_model import ReplicationDesign, run_replication_model, summary

KAFKAS_RULE = 0  # raykafka.replica.high.watermark.linger.ms: answered at once, as Kafka does
CRITICAL_PATH = ("ProduceRequest(client>broker) > FetchResponse(broker>fetcher) > "
                 "FollowerAppendRequest(fetcher>broker) > FollowerAppendResponse(broker>fetcher) > "
                 "FetchRequest(fetcher>broker) > ProduceResponse(broker>client)")


@pytest.mark.parametrize("seed", [1, 2])
def test_one_batch_on_an_idle_cluster_costs_eighteen_messages_and_six_hops(seed: int):
    figures = run_replication_model(ReplicationDesign(partitions=1, batches=1, idle_between_batches=True, seed=seed,
                                                      high_watermark_linger_ms=KAFKAS_RULE))
    assert figures["acknowledged_batches"] == 1 and figures["errors"] == {}
    assert figures["messages"] == {"ProduceRequest request": 1, "ProduceResponse response": 1,
                                   "FetchResponse response": 4, "FollowerAppendRequest request": 4,
                                   "FollowerAppendResponse response": 4, "FetchRequest request": 4}
    assert figures["background_messages"] == {}
    assert figures["ack_chains"] == {CRITICAL_PATH: 1}
    assert figures["acks"] == [(6, pytest.approx(6 * 0.3))]
    # The records travel four times after the produce: to each follower, and from each fetcher to its broker.
    record_bytes = 1024
    assert figures["bytes"]["ProduceRequest request"] > record_bytes
    assert figures["bytes"]["FetchResponse response"] > 2 * record_bytes
    assert figures["bytes"]["FollowerAppendRequest request"] > 2 * record_bytes
    assert figures["bytes"]["FetchRequest request"] < record_bytes
    assert summary(figures)["messages_per_batch"] == 18


def test_the_latency_to_the_answer_adds_up_along_the_critical_path():
    """Four messages between brokers (0.5 ms each) and two between a fetcher and its own broker (0.1 ms)."""
    figures = run_replication_model(ReplicationDesign(partitions=1, batches=2, idle_between_batches=True,
                                                      message_latency_ms=0.5, local_latency_ms=0.1))
    assert figures["acks"] == [(6, pytest.approx(2.2)), (6, pytest.approx(2.2))]


def test_a_leader_carries_all_its_partitions_in_one_request_and_one_fetch_per_follower():
    """Eight partitions over three leaders: per leader one ProduceRequest and, per follower, the
    round of a single partition (2 FetchResponses, 2 appends, 2 FetchRequests); one follower of each
    leader learns the new high watermarks in two answers (the leader answers its parked fetch as the
    first partition's high watermark moves), one more round: 15 of each, not 8 times 12."""
    figures = run_replication_model(ReplicationDesign(partitions=8, batches=1, idle_between_batches=True,
                                                      high_watermark_linger_ms=KAFKAS_RULE))
    assert figures["acknowledged_batches"] == 8
    assert figures["messages"] == {"ProduceRequest request": 3, "ProduceResponse response": 3,
                                   "FetchResponse response": 15, "FollowerAppendRequest request": 15,
                                   "FollowerAppendResponse response": 15, "FetchRequest request": 15}
    assert figures["ack_chains"] == {CRITICAL_PATH: 3}


def test_back_to_back_a_batch_waits_behind_the_followers_high_watermark_round():
    """The next request leaves as the last is answered, while each follower's fetcher is still
    appending the new high watermark: its records go out on the fetch after that, two hops later."""
    figures = run_replication_model(ReplicationDesign(partitions=1, batches=3, high_watermark_linger_ms=KAFKAS_RULE))
    assert figures["acks"] == [(6, pytest.approx(1.8)), (8, pytest.approx(2.4)), (8, pytest.approx(2.4))]
    assert summary(figures)["messages_per_batch"] == 18


def test_with_the_high_watermark_linger_back_to_back_batches_carry_it_and_keep_six_hops():
    """raykafka's default: the next batch's records answer the followers' lingering fetches with the
    new high watermark beside them, so no batch waits behind a record-less round, and each costs
    10 messages, not 18."""
    figures = run_replication_model(ReplicationDesign(partitions=1, batches=3))
    assert figures["acks"] == [(6, pytest.approx(1.8))] * 3
    assert summary(figures)["messages_per_batch"] == 10


def test_with_the_high_watermark_linger_eight_partitions_cost_one_round_per_follower():
    figures = run_replication_model(ReplicationDesign(partitions=8, batches=1, idle_between_batches=True))
    assert figures["acknowledged_batches"] == 8
    assert figures["messages"] == {"ProduceRequest request": 3, "ProduceResponse response": 3,
                                   "FetchResponse response": 6, "FollowerAppendRequest request": 6,
                                   "FollowerAppendResponse response": 6, "FetchRequest request": 6}
    assert figures["ack_chains"] == {CRITICAL_PATH: 3}


def test_a_leader_that_never_answers_a_parked_fetch_early_puts_the_fetch_wait_on_the_path():
    figures = run_replication_model(ReplicationDesign(partitions=1, batches=1, idle_between_batches=True,
                                                      replica_fetch_wait_max_ms=50, replica_fetch_min_bytes=1 << 20))
    [(hops, ms)] = figures["acks"]
    # The records leave on the parked fetch's expiry, a timer: the path starts at that answer.
    assert hops == 5 and ms == pytest.approx(50 + 5 * 0.3)
    assert figures["messages"] == {"ProduceRequest request": 1}
