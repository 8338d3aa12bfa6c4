"""Counts the messages an acks=all produce waits for, through the simulator's network (which carries
what Ray carries between the actors: one message per request and per answer), by following each
message back to the delivery that caused it; no timing is measured.

The chain today, for a follower whose fetch is parked at the leader when the produce arrives:
ProduceRequest (client -> leader), FetchResponse (leader -> fetcher: the parked fetch completes on
the append), FollowerAppendRequest and FollowerAppendResponse (fetcher <-> its own broker),
FetchRequest (fetcher -> leader: its fetch offset acknowledges the records and moves the high
watermark), ProduceResponse (leader -> client). The next Fetch cannot leave before the append is
answered: its fetch offset is the follower's acknowledgement (Kafka's follower fetches from its log
end offset), so a Fetch sent ahead from a predicted offset would let the leader count records the
follower may not hold, and an acknowledged write could then be lost in a failover.
"""
from __future__ import annotations

import pytest

from orchestration.simulation.simulation import Simulation

POLICIES = ("leader-epoch", "high-watermark")  # raykafka.truncation.policy: the count is the same under both


class CausalTrace:
    """Remembers, for every message sent, the message whose delivery sent it (None: a timer or the client)."""

    def __init__(self, sim: Simulation) -> None:
        self.cause: dict[int, int | None] = {}
        self.sent: dict[int, object] = {}
        self._delivering: int | None = None
        post, deliver = sim.network.post, sim._deliver

        def traced_post(**fields):
            message = post(**fields)
            if message is not None:
                self.cause[message.id], self.sent[message.id] = self._delivering, message
            return message

        def traced_deliver(message) -> None:
            self._delivering = message.id
            try:
                deliver(message)
            finally:
                self._delivering = None
        sim.network.post, sim._deliver = traced_post, traced_deliver

    def chain_to(self, type_name: str) -> list[str]:
        """The messages, first to last, that led to the first message of ``type_name``: "Type source -> destination"."""
        ends = [i for i, message in self.sent.items() if message.type_name == type_name]
        assert ends, f"no {type_name} was sent"
        chain, message_id = [], ends[0]
        while message_id is not None:
            message = self.sent[message_id]
            chain.append(f"{message.type_name} {message.source} -> {message.destination}")
            message_id = self.cause[message_id]
        return chain[::-1]

    def caused_by(self, root_type: str) -> list[str]:
        """Every message that the first ``root_type`` message led to, itself included, in sending order."""
        root = next(i for i, message in self.sent.items() if message.type_name == root_type)
        descendants = {root}
        for message_id in sorted(self.sent):
            if self.cause[message_id] in descendants:
                descendants.add(message_id)
        return [self.sent[i].type_name for i in sorted(descendants)]


def quiet_cluster(replication_factor: int, seed: int, policy: str = POLICIES[0]) -> Simulation:
    sim = Simulation(brokers=[0, 1, 2], seed=seed, config={"raykafka.truncation.policy": policy})
    replicas = [0, 1, 2][:replication_factor]
    assert sim.create_topic("t", assignment=[replicas],
                            config={"min.insync.replicas": str(replication_factor)}) == "NONE"
    sim.run_until(lambda: sorted(sim.isr("t")) == replicas, what="the full ISR")
    sim.run(1_000)  # every follower's fetch parked at the leader again
    return sim


@pytest.mark.parametrize("policy", POLICIES)
def test_an_acks_all_produce_waits_for_six_messages_through_one_follower(policy: str):
    for seed in (1, 2, 3):
        sim = quiet_cluster(replication_factor=3, seed=seed, policy=policy)
        trace = CausalTrace(sim)
        assert sim.produce("t", 0, ["a"], acks="all").status == "acked"
        chain = trace.chain_to("ProduceResponse")
        follower = chain[1].split(" -> ")[1]
        assert follower.startswith("fetcher:"), chain
        own_broker = f"broker:{follower.split(':')[1]}"
        assert chain == ["ProduceRequest client -> broker:0",
                         f"FetchResponse broker:0 -> {follower}",
                         f"FollowerAppendRequest {follower} -> {own_broker}",
                         f"FollowerAppendResponse {own_broker} -> {follower}",
                         f"FetchRequest {follower} -> broker:0",
                         "ProduceResponse broker:0 -> client"], (seed, chain)


@pytest.mark.parametrize("policy", POLICIES)
def test_with_two_followers_the_produce_sets_off_four_messages_per_follower(policy: str):
    sim = quiet_cluster(replication_factor=3, seed=1, policy=policy)
    trace = CausalTrace(sim)
    assert sim.produce("t", 0, ["a"], acks="all").status == "acked"
    caused = trace.caused_by("ProduceRequest")
    before_answer = caused[:caused.index("ProduceResponse") + 1]
    # Each follower: the leader's answer, the append and its answer, the next fetch.
    assert sorted(before_answer) == sorted(["ProduceRequest", "ProduceResponse"]
                                           + ["FetchResponse", "FollowerAppendRequest",
                                              "FollowerAppendResponse", "FetchRequest"] * 2), caused
