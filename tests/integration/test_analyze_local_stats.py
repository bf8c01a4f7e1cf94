"""A tiny JmxTool input aggregated on the driver from its collected cells (cell_stats) gives
bit for bit what Spark's aggregation gives: statistics, summary and chart buckets, with the
values that tell summation orders and Java's double order apart (-0.0, NaN, Infinity, empty
cells, malformed lines), three brokers, and one broker's series split over two files; and does
so without starting a Spark job."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from kconfigs_analysis import readers, report_scan
from kconfigs_analysis.generate import GeneratorSpec, generate
from kconfigs_analysis.session import SessionOptions, sized_for, spark_session

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dumps"
ODD_VALUES = ["-0.0", "0", "0.0", "NaN", "Infinity", "", "1e-320", "123456789.123456789", "0.1", "0.2", "0.3"]


@pytest.fixture(scope="module")
def spark():
    with spark_session(SessionOptions(master="local[2]", small_input=True)) as session:
        yield session


def _odd_dump(directory: Path, seed: int) -> list[str]:
    """A generated 3-broker dump with a fifth of its cells replaced by odd values."""
    generate(GeneratorSpec(3000, str(directory), "jmxtool", entities=6, brokers=3, seed=seed))
    rng = random.Random(seed)
    paths = sorted(str(p) for p in directory.glob("*.jmx.csv"))
    for path in paths:
        lines = Path(path).read_text().splitlines()
        for n in range(1, len(lines)):
            cells = lines[n].split(",")
            lines[n] = ",".join([cells[0]] + [rng.choice(ODD_VALUES) if rng.random() < 0.2 else c for c in cells[1:]])
        lines.insert(len(lines) // 2, lines[-1].replace(lines[-1].split(",")[1], "oops", 1))  # a bad cell
        Path(path).write_text("\n".join(lines) + "\n")
    return paths


def _aggregates(spark, files: list, local: bool) -> tuple[list[str], list[str]]:
    with sized_for(spark, 1):
        inputs = report_scan.open_inputs(spark, files, reuse_scan=True, local_stats=local)
        assert inputs.local_stats is local
        groups = report_scan.scan_stats(inputs)
        entities = sorted({d[:4] for d in inputs.dims.values() if d[0] is not None}, key=repr)
        points = report_scan.chart_points(inputs, entities, 60_000)
    # repr tells -0.0 from 0.0 and keeps every bit of a double
    return sorted(repr(sorted(g.items())) for g in groups), [repr(sorted(p.asDict().items())) for p in points]


@pytest.mark.parametrize("seed", [3, 11])
def test_driver_aggregates_equal_sparks_on_odd_values_and_three_brokers(spark, tmp_path, seed):
    files = readers.classify_inputs(_odd_dump(tmp_path / "dump", seed))
    local = _aggregates(spark, files, local=True)
    assert local == _aggregates(spark, files, local=False)
    assert "inf" in " ".join(local[0]) and "'_bad', True" in " ".join(local[0])


def test_driver_aggregates_equal_sparks_on_real_fixtures_and_a_series_over_two_files(spark, tmp_path):
    (tmp_path / "again").mkdir()
    shutil.copy(FIXTURES / "broker-1.jmx.csv", tmp_path / "again" / "broker-1.jmx.csv")
    paths = [str(FIXTURES / "broker-1.jmx.csv"), str(FIXTURES / "broker-2.jmx.csv"), str(tmp_path / "again")]
    files = readers.classify_inputs(paths)
    assert _aggregates(spark, files, local=True) == _aggregates(spark, files, local=False)


def test_mixed_formats_and_long_files_stay_in_spark(spark, tmp_path):
    mixed = readers.classify_inputs([str(FIXTURES / "broker-1.jmx.csv"), str(FIXTURES / "confluent.prom")])
    assert not report_scan.open_inputs(spark, mixed, local_stats=True).local_stats
    long_file = tmp_path / "broker-9.jmx.csv"
    text = (FIXTURES / "broker-1.jmx.csv").read_text()
    long_file.write_text(text + (text.splitlines()[-1] + "\n") * 50_000)
    assert not report_scan.open_inputs(spark, readers.classify_inputs([str(long_file)]), local_stats=True).local_stats


def test_a_tiny_input_is_parsed_and_aggregated_without_a_spark_job(spark, tmp_path):
    # a cold JVM's first job costs most of a second: the small-run budget rests on there being none
    files = readers.classify_inputs([str(FIXTURES / "broker-1.jmx.csv"), str(FIXTURES / "broker-2.jmx.csv")])
    tracker = spark.sparkContext.statusTracker()
    before = tracker.getJobIdsForGroup()
    groups, points = _aggregates(spark, files, local=True)
    assert groups and points
    assert tracker.getJobIdsForGroup() == before
