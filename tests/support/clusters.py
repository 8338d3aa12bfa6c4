"""A real raykafka cluster for an integration-test module, always shut down."""
from __future__ import annotations

import contextlib

from orchestration import Cluster


@contextlib.contextmanager
def running_cluster(tmp_path_factory, config: dict | None = None, brokers: int = 3):
    started = Cluster.start(brokers=brokers, log_dir=str(tmp_path_factory.mktemp("logs")), config=config)
    try:
        yield started
    finally:
        started.shutdown()
