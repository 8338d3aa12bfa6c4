"""What a fetch of many idle partitions costs, with fetch sessions (KIP-227) and without.

After a topic has been read to its end, a client actor fetches every partition again and again
at its log end (nothing new; ``max_wait_ms`` 0, so each fetch is answered at once), one request
per leader broker per round, as a consumer or a follower does while it waits for data. Without a
session every request names every partition and every answer carries every partition back; in a
session (the first, full fetch untimed) the requests name none and the answers are empty. It
reports, per round over all the partitions, the bytes of the requests and answers as Ray pickles
them and the time the round's calls took, both ways in the same run.
"""
from __future__ import annotations

import sys
import time

import ray
from ray import cloudpickle

cloudpickle.register_pickle_by_value(sys.modules[__name__])

ROUNDS = 200


@ray.remote(num_cpus=0)
class _IdleFetcher:
    def measure(self, namespace: str, broker_ids: list[int], topic: str, ends: dict[int, int], rounds: int) -> dict:
        from actors.core.messages.fetch import FetchPartition, FetchRequest
        from actors.core.fetcher.fetch_session_handler import FetchSessionHandler
        from orchestration.clients.broker_directory import BrokerDirectory
        directory = BrokerDirectory(namespace=namespace, bootstrap_broker_ids=broker_ids)
        by_leader: dict[int, dict] = {}
        for partition, end in sorted(ends.items()):
            leader, epoch = directory.leader_for(topic, partition)
            by_leader.setdefault(leader, {})[(topic, partition)] = FetchPartition(
                partition=partition, fetch_offset=end, partition_max_bytes=1 << 20, current_leader_epoch=epoch)
        brokers = {leader: directory.broker(leader) for leader in by_leader}

        def one_round(sessions: dict | None) -> tuple[int, float]:
            moved, seconds = 0, 0.0
            for leader, wanted in by_leader.items():
                if sessions is None:
                    fields = dict(topics=FetchSessionHandler().build(wanted).topics())  # sessionless: all, always
                else:
                    data = sessions[leader].build(wanted)
                    fields = dict(topics=data.topics(), session_id=data.session_id, session_epoch=data.session_epoch,
                                  forgotten_topics_data=data.forgotten_topics())
                request = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 24, **fields)
                started = time.perf_counter()
                response = ray.get(brokers[leader].handle.remote(request), timeout=60)
                seconds += time.perf_counter() - started
                if sessions is not None:
                    assert sessions[leader].handle_response(response), response.error_code
                moved += len(cloudpickle.dumps(request)) + len(cloudpickle.dumps(response))
            return moved, seconds

        figures = {}
        for mode in ("sessionless", "sessions"):
            sessions = {leader: FetchSessionHandler() for leader in by_leader} if mode == "sessions" else None
            one_round(sessions)  # set-up, and the session's full fetch: outside the timing
            total_bytes, total_seconds = 0, 0.0
            for _ in range(rounds):
                moved, seconds = one_round(sessions)
                total_bytes, total_seconds = total_bytes + moved, total_seconds + seconds
            figures[mode] = {"bytes_per_fetch": total_bytes / rounds, "ms_per_fetch": total_seconds / rounds * 1e3}
        return {"partitions": len(ends), "requests_per_fetch": len(by_leader), "rounds": rounds, **figures}


def idle_fetch(cluster, topic: str, rounds: int = ROUNDS) -> dict:
    """The cost of fetching every partition of ``topic`` at its end, with and without sessions."""
    ends = {p.partition: p.high_watermark for p in cluster.describe_topic(topic)}
    fetcher = _IdleFetcher.remote()
    try:
        return ray.get(fetcher.measure.remote(cluster.namespace, list(cluster.broker_ids), topic, ends, rounds),
                       timeout=600)
    finally:
        ray.kill(fetcher)


def describe(figures: dict) -> str:
    without, with_ = figures["sessionless"], figures["sessions"]
    return (f"  idle fetch of {figures['partitions']} partitions ({figures['requests_per_fetch']} requests): "
            f"without sessions {without['bytes_per_fetch']:,.0f} B {without['ms_per_fetch']:.2f} ms, "
            f"with sessions {with_['bytes_per_fetch']:,.0f} B {with_['ms_per_fetch']:.2f} ms")
