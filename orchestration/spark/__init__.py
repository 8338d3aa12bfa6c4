"""raykafka's data pipeline on Spark: PySpark on RayDP, on the same Ray cluster as the brokers.

``session`` starts Spark on Ray (RayDP) with what Java 17 needs; ``source`` and ``sink`` read and
write topics as DataFrames with the columns of Spark's own Kafka source and sink; ``workload``
parses OpenMessaging-Benchmark-style workload files; ``jobs`` runs the load and consume jobs;
``summary`` computes the throughput and latency summary with Spark; ``pipeline`` ties them into
``raykafka load run``. Modules are imported on use: ``workload`` needs neither Ray nor Spark.
"""
