"""The pure parts of benchmarks/replication_ab.py: what it compares, in what order, and how it sums up."""
import pytest

from benchmarks.replication_ab import comparison, format_table, parse_compare, round_order, summarize


def test_compare_names_a_key_and_two_or_more_distinct_values():
    assert parse_compare("raykafka.replica.high.watermark.linger.ms=0,50") == (
        "raykafka.replica.high.watermark.linger.ms", ["0", "50"])
    assert parse_compare(" k = 1, 2 ,3 ") == ("k", ["1", "2", "3"])
    for bad in ("k=1", "k=1,1", "=1,2", "k"):
        with pytest.raises(ValueError):
            parse_compare(bad)


def test_rounds_alternate_the_order_of_the_values():
    assert [round_order(["a", "b", "c"], r) for r in range(3)] == [["a", "b", "c"], ["c", "b", "a"], ["a", "b", "c"]]


def test_a_summary_has_the_median_and_the_spread_over_the_rounds():
    summary = summarize([10.0, 14.0, 12.0])
    assert (summary["median"], summary["min"], summary["max"]) == (12.0, 10.0, 14.0)
    assert summary["spread"] == pytest.approx(4 / 12)


def test_each_value_is_set_beside_the_first_one_per_client_and_partition_count():
    results = [{"client": "python", "partitions": 8, "value": v, "mb_per_s": rate, "cpu_s_per_gb": cpu}
               for v, rate, cpu in [("0", 20.0, 30.0), ("50", 30.0, 20.0), ("0", 22.0, 28.0), ("50", 26.0, 22.0)]]
    rows = comparison(results, ["0", "50"])
    assert [(r["value"], r["mb_per_s"]["median"], r["cpu_s_per_gb"]["median"]) for r in rows] == [
        ("0", 21.0, 29.0), ("50", 28.0, 21.0)]
    assert [r["ratio_to_first"] for r in rows] == pytest.approx([1.0, 28 / 21])
    lines = format_table("k", rows)
    assert len(lines) == 3 and "1.33" in lines[2]
