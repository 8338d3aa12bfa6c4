"""The run's summary, computed with Spark from the load and consume jobs' per-record DataFrames.

Throughput (records/s and MB/s) overall and per one-second window, publish latency (send to
acknowledgement) and end-to-end latency (send to first read, per subscription) at p50, p95, p99,
p99.9 and max with ``percentile_approx``, and the errors by Kafka error name. ``producer_line``
and ``consumer_lines`` print it as ``kafka-producer-perf-test`` and ``kafka-consumer-perf-test``
print theirs; ``save_summary`` writes it as JSON; ``orchestration.spark.plot`` draws it.
Times in the DataFrames are wall-clock seconds; windows count from ``zero`` (the load's start).
"""
from __future__ import annotations

import json
from pathlib import Path

from orchestration.spark.jobs import CONSUME_COLUMNS, LOAD_COLUMNS

QUANTILES = (0.5, 0.95, 0.99, 0.999)
MB = 1024 * 1024  # as Kafka's perf-test tools count a MB
MB_NOTE = "MB = 1024*1024 bytes, as kafka-producer-perf-test and kafka-consumer-perf-test count it"
# kafka-consumer-perf-test's columns, in its order; the load's lines add the subscription last.
CONSUMER_COLUMNS = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")


def load_schema():
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType
    kinds = {"producer": StringType(), "topic": StringType(), "value": StringType(), "bytes": LongType(),
             "send_time": DoubleType(), "ack_time": DoubleType(), "partition": IntegerType(),
             "offset": LongType(), "outcome": StringType(), "error": StringType()}
    return StructType([StructField(name, kinds[name]) for name in LOAD_COLUMNS])


def consume_schema():
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType
    kinds = {"subscription": StringType(), "consumer": StringType(), "topic": StringType(),
             "partition": IntegerType(), "offset": LongType(), "value": StringType(), "bytes": LongType(),
             "read_time": DoubleType(), "create_time": DoubleType(), "consumer_started": DoubleType()}
    return StructType([StructField(name, kinds[name]) for name in CONSUME_COLUMNS])


def _latency(frame, column: str) -> dict:
    from pyspark.sql import functions as F
    row = frame.agg(F.count(column).alias("n"), F.avg(column).alias("avg"), F.max(column).alias("max"),
                    F.percentile_approx(column, list(QUANTILES), 10000).alias("q")).first()
    if not row["n"]:
        return {"count": 0}
    quantiles = dict(zip(("p50", "p95", "p99", "p99.9"), row["q"]))
    return {"count": row["n"], "avg_ms": round(row["avg"], 3), "max_ms": round(row["max"], 3),
            **{k: round(v, 3) for k, v in quantiles.items()}}


def summarize(load, consume, zero: float) -> dict:
    """The summary as a dict (JSON-ready) from the two jobs' DataFrames."""
    from pyspark.sql import functions as F
    load = load.withColumn("latency_ms", (F.col("ack_time") - F.col("send_time")) * 1000)
    acked = load.filter(F.col("outcome") == "ok").cache()
    totals = load.agg(F.count("*").alias("sent"), F.min("send_time").alias("first_send")).first()
    acks = acked.agg(F.count("*").alias("n"), F.sum("bytes").alias("bytes"), F.max("ack_time").alias("last")).first()
    produce_s = max(1e-9, (acks["last"] or 0) - (totals["first_send"] or 0)) if acks["n"] else 0.0
    errors = {f"{r['outcome']}:{r['error']}": r["count"] for r in
              load.filter(F.col("outcome") != "ok").groupBy("outcome", "error").count().collect()}
    produce_windows = [
        {"second": r["second"], "records": r["records"], "mb": r["bytes"] / MB,
         "p50_ms": r["q"][0], "p99_ms": r["q"][1]}
        for r in acked.groupBy(F.floor(F.col("ack_time") - zero).alias("second")).agg(
            F.count("*").alias("records"), F.sum("bytes").alias("bytes"),
            F.percentile_approx("latency_ms", [0.5, 0.99], 1000).alias("q")).orderBy("second").collect()]
    first_reads = consume.groupBy("subscription", "topic", "partition", "offset", "value").agg(
        F.min("read_time").alias("read_time"), F.first("bytes").alias("bytes"),
        F.min("consumer_started").alias("consumer_started"))
    # As kafka-consumer-perf-test, a subscription's time runs from its first consumer's start
    # (joining the group included) to its last record.
    per_subscription = {r["subscription"]: {"records": r["records"], "bytes": r["bytes"],
                                            "seconds": round(max(1e-9, r["last"] - r["first"]), 3),
                                            "start_time": r["first"], "end_time": r["last"],
                                            "first_read_time": r["first_read"]}
                        for r in first_reads.groupBy("subscription").agg(
                            F.count("*").alias("records"), F.sum("bytes").alias("bytes"),
                            F.min("consumer_started").alias("first"), F.max("read_time").alias("last"),
                            F.min("read_time").alias("first_read")).collect()}
    consume_windows = [{"second": r["second"], "records": r["records"], "mb": r["bytes"] / MB}
                       for r in first_reads.groupBy(F.floor(F.col("read_time") - zero).alias("second")).agg(
                           F.count("*").alias("records"), F.sum("bytes").alias("bytes")).orderBy("second").collect()]
    end_to_end = first_reads.alias("c").join(acked.alias("a"), F.col("c.value") == F.col("a.value")).select(
        ((F.col("c.read_time") - F.col("a.send_time")) * 1000).alias("e2e_ms"))
    acknowledged_read = first_reads.join(acked.select("value"), "value", "left_semi").select("value").distinct().count()
    return {
        "produce": {"sent": totals["sent"], "acknowledged": acks["n"], "bytes": acks["bytes"] or 0,
                    "seconds": round(produce_s, 3),
                    "records_per_s": round(acks["n"] / produce_s, 1) if produce_s else 0.0,
                    "mb_per_s": round((acks["bytes"] or 0) / MB / produce_s, 3) if produce_s else 0.0,
                    "publish_latency": _latency(acked, "latency_ms"), "errors": errors, "windows": produce_windows},
        "consume": {"subscriptions": {name: {**s, "records_per_s": round(s["records"] / s["seconds"], 1),
                                             "mb_per_s": round(s["bytes"] / MB / s["seconds"], 3)}
                                      for name, s in per_subscription.items()},
                    "acknowledged_read": acknowledged_read,
                    "end_to_end_latency": _latency(end_to_end, "e2e_ms"), "windows": consume_windows},
    }


def producer_line(summary: dict) -> str:
    """As kafka-producer-perf-test ends: records, rate, MB/s, average and max latency, percentiles."""
    p = summary["produce"]
    latency = p["publish_latency"]
    if not latency.get("count"):
        return f"{p['sent']} records sent, none acknowledged."
    return (f"{p['acknowledged']} records sent, {p['records_per_s']:.1f} records/sec ({p['mb_per_s']:.2f} MB/sec), "
            f"{latency['avg_ms']:.2f} ms avg latency, {latency['max_ms']:.2f} ms max latency, "
            f"{latency['p50']:.0f} ms 50th, {latency['p95']:.0f} ms 95th, {latency['p99']:.0f} ms 99th, "
            f"{latency['p99.9']:.0f} ms 99.9th.")


def _perf_test_time(seconds: float) -> str:
    """kafka-consumer-perf-test's date format, yyyy-MM-dd HH:mm:ss:SSS, in local time."""
    import datetime
    moment = datetime.datetime.fromtimestamp(seconds)
    return moment.strftime("%Y-%m-%d %H:%M:%S:") + f"{moment.microsecond // 1000:03d}"


def consumer_lines(summary: dict) -> list[str]:
    """As kafka-consumer-perf-test prints: its header, then one line per subscription (the
    subscription's name added as a last column), then what its MB and rebalance time mean. Time
    runs from the subscription's first consumer's start to its last record; rebalance.time.ms is
    from that start to the first record read (Kafka's tool stops it at the assignment, before the
    first fetch), fetch.time.ms the rest."""
    lines = [CONSUMER_COLUMNS + ", subscription"]
    for name, s in sorted(summary["consume"]["subscriptions"].items()):
        mb, elapsed_ms = s["bytes"] / MB, s["seconds"] * 1000
        rebalance_ms = max(0, round((s["first_read_time"] - s["start_time"]) * 1000))
        fetch_s = max(1e-3, elapsed_ms - rebalance_ms) / 1000
        lines.append("%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f, %s" % (
            _perf_test_time(s["start_time"]), _perf_test_time(s["end_time"]), mb, mb / s["seconds"], s["records"],
            s["records"] / s["seconds"], rebalance_ms, round(fetch_s * 1000), mb / fetch_s, s["records"] / fetch_s, name))
    lines.append(f"({MB_NOTE}; rebalance.time.ms runs to the first record read)")
    e2e = summary["consume"]["end_to_end_latency"]
    if e2e.get("count"):
        lines.append(f"end-to-end latency: {e2e['p50']:.0f} ms 50th, {e2e['p95']:.0f} ms 95th, {e2e['p99']:.0f} ms "
                     f"99th, {e2e['p99.9']:.0f} ms 99.9th, {e2e['max_ms']:.0f} ms max")
    return lines


def save_summary(summary: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(summary, indent=2, default=float))


# ------------------------------------------------------------------------ the streaming workload
def check_stream_totals(acknowledged: list, input_rows: list, output_rows: list) -> dict:
    """The streaming workload's check (``orchestration.spark.streaming``). ``acknowledged`` and
    ``input_rows``: (partition, offset, key, value) of the records the producer saw acknowledged and
    of those in the input topic; ``output_rows``: (key, value) of the output topic, each value a
    running total ``{"count": n, "sum": s}``. Spark's state is exactly-once and its Kafka sink
    at-least-once, so each key's highest count and its sum must equal the input's exactly, no row
    may exceed them, and a row written twice (a retried micro-batch) is counted, not failed."""
    expected: dict[str, list[int]] = {}
    for _, _, key, value in input_rows:
        totals = expected.setdefault(key, [0, 0])
        totals[0] += 1
        totals[1] += int(value)
    in_topic = {(partition, offset): (key, value) for partition, offset, key, value in input_rows}
    lost = sorted((p, o) for p, o, key, value in acknowledged if in_topic.get((p, o)) != (key, value))
    final: dict[str, tuple[int, int]] = {}
    seen: dict[tuple[str, int, int], int] = {}
    impossible = []
    for key, value in output_rows:
        total = json.loads(value)
        row = (key, int(total["count"]), int(total["sum"]))
        seen[row] = seen.get(row, 0) + 1
        want = expected.get(key)
        if want is None or row[1] > want[0] or row[2] > want[1]:
            impossible.append(row)
        if key not in final or row[1] > final[key][0]:
            final[key] = row[1:]
    wrong = sorted(key for key in set(expected) | set(final) if tuple(expected.get(key, ())) != final.get(key))
    return {"acknowledged": len(acknowledged), "input_records": len(input_rows), "keys": len(expected),
            "output_records": len(output_rows), "repeated_output_records": sum(n - 1 for n in seen.values()),
            "lost": len(lost), "lost_offsets": lost[:20], "keys_with_wrong_totals": wrong,
            "impossible_output_records": impossible[:20],
            "passed": not lost and not wrong and not impossible}


def stream_lines(summary: dict) -> list[str]:
    check = summary["check"]
    return [f"input {summary['input_topic']}: {summary['sent']} sent, {check['acknowledged']} acknowledged, "
            f"{check['input_records']} in the topic; lost acknowledged records: {check['lost']}",
            f"output {summary['output_topic']}: {check['output_records']} running totals for {check['keys']} keys, "
            f"{check['repeated_output_records']} of them written again (Spark's Kafka sink is at-least-once); "
            f"query restarts from its checkpoint: {summary['restarts']}",
            f"check: {'PASS' if check['passed'] else 'FAIL'}: each key's final count and sum "
            + ("equal the input's exactly (Spark's state is exactly-once)" if not check["keys_with_wrong_totals"]
               else f"differ from the input's for {', '.join(check['keys_with_wrong_totals'])}")
            + (f"; {len(check['impossible_output_records'])} output totals exceed the input's"
               if check["impossible_output_records"] else "")]
