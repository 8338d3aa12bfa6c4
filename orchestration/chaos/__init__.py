"""Chaos runs: faults on purpose, a record of what clients saw, and a verdict on it.

``faults`` is the fault injector (kills, restarts, lost disks, pauses, network partitions, node
loss); ``history`` is the JSON-lines record of every client operation, fault and sample;
``sampler`` samples the cluster's replication invariants into it during a run; ``checker`` judges
a history for lost writes and the other anomalies Jepsen's Kafka workload names. ``runner`` runs
one scenario (a cluster, a load, faults) end to end and writes its history, report and verdict;
``schedule`` reads fault schedule files (``schedules/``); ``scenarios`` and ``group_scenarios``
are the failover matrix by name (``raykafka chaos list``).
"""
