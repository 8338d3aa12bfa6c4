"""The pure parts of benchmarks/replication_round.py: sizes, the floor between measured sizes, and
what one raykafka point says per round."""
import pytest

from benchmarks.replication_round import bare_table, floor_at, parse_args, parse_size, raykafka_table, round_figures


def test_sizes_read_as_kafka_users_write_them():
    assert [parse_size(s) for s in ("1KiB", "64kib", "1MiB", "512", " 16MiB ")] == [
        1024, 65536, 1048576, 512, 16 * 1048576]
    for bad in ("", "1.5MiB", "MiB", "ten"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_the_floor_is_linear_between_measured_sizes_and_flat_beyond_them():
    measured = [(1024 * 1024, 6.0), (1024, 2.0), (4 * 1024 * 1024, 9.0)]
    assert floor_at(100, measured) == 2.0
    assert floor_at(1024, measured) == 2.0
    assert floor_at(1024 * 1024, measured) == 6.0
    assert floor_at(2.5 * 1024 * 1024, measured) == pytest.approx(7.5)
    assert floor_at(64 * 1024 * 1024, measured) == 9.0
    assert floor_at(5, []) is None


def test_a_point_charges_the_followers_copies_to_its_rounds():
    floor = [(1_000_000, 5.0), (4_000_000, 8.0)]
    figures = round_figures(bytes_written=50_000_000, followers=2, rounds=40, cpu_rf3_s=2.0, cpu_rf1_s=0.4,
                            seconds=0.5, floor=floor)
    # 100 MB copied in 40 rounds: 2.5 MB a round; 1.6 s of CPU added: 40 ms a round; floor 6.5 ms there.
    assert figures["mb_per_round"] == 2.5
    assert figures["replication_cpu_ms_per_round"] == 40.0
    assert figures["floor_cpu_ms_per_round"] == 6.5
    assert figures["ratio_to_floor"] == pytest.approx(40 / 6.5, abs=0.01)
    assert figures["rounds_per_s"] == 80.0


def test_a_point_without_rounds_says_so_instead_of_dividing_by_zero():
    figures = round_figures(bytes_written=1, followers=2, rounds=0, cpu_rf3_s=1.0, cpu_rf1_s=0.5, seconds=1.0,
                            floor=[(1, 1.0)])
    assert figures["rounds"] == 0 and figures["ratio_to_floor"] is None and figures["mb_per_round"] is None


def test_tables_print_every_row_and_a_dash_for_what_is_unknown():
    bare = bare_table([{"shape": "ray", "size_bytes": 1024, "rounds": 10, "ms_per_round": 2.0,
                        "cpu_ms_per_round": 2.5, "mb_per_s": 0.5}])
    assert len(bare) == 2 and "ray" in bare[1] and "1,024" in bare[1]
    point = {"partitions": 8, "rf3_mb_per_s": 150.0, "rounds": 0, "mb_per_round": None,
             "replication_cpu_ms_per_round": None, "floor_cpu_ms_per_round": None, "ratio_to_floor": None}
    rows = raykafka_table([point])
    assert len(rows) == 2 and rows[1].split()[0] == "8" and rows[1].rstrip().endswith("-")


def test_arguments_are_checked_before_any_ray_starts():
    args = parse_args(["--sizes", "1MiB,1KiB,1KiB", "--partitions", "1,8"])
    assert args.sizes == [1024, 1048576] and args.partitions == [1, 8]
    assert parse_args(["--no-raykafka"]).partitions == []
    assert parse_args([]).floor_shape == "sockets" and parse_args(["--shapes", "ray", "--floor-shape", "ray"])
    for bad in (["--shapes", "carrier-pigeon"], ["--sizes", "lots"], ["--shapes", "socket-append"],
                ["--shapes", "ray"], ["--floor-shape", "carrier-pigeon"],
                ["--partitions", "0"], ["--seconds", "0"]):
        with pytest.raises(SystemExit):
            parse_args(bad)
