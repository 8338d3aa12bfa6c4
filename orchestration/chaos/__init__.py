"""Chaos runs: a scenario (a cluster, a load, faults) run end to end and judged by the checker.

``runner`` runs one scenario and writes its history, report and verdict; ``schedule`` reads fault
schedule files; ``scenarios`` is the failover matrix by name (``raykafka chaos list``).
"""
