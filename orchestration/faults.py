"""Faults on purpose: the first primitives of raykafka's fault injection.

Each names a Kafka failure: a crashed process (``kill``, Ray restarting it or not), a process
restarted with its disk (``restart``) or without it (``lose_disk``), a planned stop
(``controlled_shutdown``), and a long stop-the-world pause (``pause``/``resume``: the actor holds
every request and timer, so it misses heartbeats and fetches while Ray still calls it alive).
Every fault is written to the history, when one is given, with its time, so a checker can relate
anomalies to faults. Network faults (delay, drop, partition) and whole-node removal are not here yet.
"""
from __future__ import annotations

import ray

from orchestration.cluster import Cluster
from orchestration.history import HistoryWriter


class Faults:
    def __init__(self, cluster: Cluster, history: HistoryWriter | None = None) -> None:
        self.cluster = cluster
        self.history = history

    def _record(self, name: str, target: str, **detail) -> None:
        if self.history is not None:
            self.history.fault(name, target, detail)

    def kill(self, role: str, broker_id: int | None = None, *, restart: bool = True) -> None:
        self._record("kill", f"{role}-{broker_id}" if broker_id is not None else role, restart=restart)
        self.cluster.kill(role, broker_id, restart=restart)

    def restart(self, broker_id: int) -> None:
        self._record("restart", f"broker-{broker_id}")
        self.cluster.restart_broker(broker_id)

    def lose_disk(self, broker_id: int) -> None:
        """Crash the broker and start it again with an empty log directory."""
        self._record("lose-disk", f"broker-{broker_id}")
        self.cluster.kill("broker", broker_id, restart=False)
        self.cluster.restart_broker(broker_id, wipe_disk=True)

    def controlled_shutdown(self, broker_id: int) -> str:
        self._record("controlled-shutdown", f"broker-{broker_id}")
        return self.cluster.controlled_shutdown(broker_id)

    def pause(self, role: str, broker_id: int | None = None) -> None:
        self._record("pause", f"{role}-{broker_id}" if broker_id is not None else role)
        ray.get(self._actor(role, broker_id).pause.remote(), timeout=30)

    def resume(self, role: str, broker_id: int | None = None) -> None:
        self._record("resume", f"{role}-{broker_id}" if broker_id is not None else role)
        ray.get(self._actor(role, broker_id).resume.remote(), timeout=30)

    def _actor(self, role: str, broker_id: int | None):
        if role == "broker":
            return self.cluster.broker(broker_id)
        if role == "controller":
            return self.cluster.controller()
        raise ValueError(f"pause/resume supports 'broker' and 'controller', not {role!r}")
