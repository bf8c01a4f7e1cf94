"""The report's fast read of JmxTool dumps (``report_scan`` + ``jmxtool.cells``: int series, one
statistics pass, a chart pass that casts only the charted cells) gives exactly what the canonical
long table (``readers.load_dumps``, one row per cell with its entity strings) gives, on real
fixture files with malformed rows, on two files of the same broker and mixed with Prometheus.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kconfigs_analysis import readers, report_scan, transforms
from kconfigs_analysis.generate import GeneratorSpec, generate
from kconfigs_analysis.schemas import ENTITY_COLUMNS
from kconfigs_analysis.session import SessionOptions, spark_session

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dumps"
KEYS = ENTITY_COLUMNS + ["source"]


@pytest.fixture(scope="module")
def spark():
    with spark_session(SessionOptions(master="local[2]", shuffle_partitions=2)) as session:
        yield session


def _canonical_groups(spark, files) -> tuple[dict, list[tuple]]:
    dump = readers.load_dumps(spark, files)
    groups = [r.asDict() for r in transforms.group_stats(dump, KEYS).collect()]
    return transforms.input_summary(dump), sorted(report_scan.source_rows(groups), key=repr)


def _inputs(tmp_path: Path) -> list:
    """Both fixture brokers, a second copy of broker-1 (same source name) and a Prometheus scrape."""
    (tmp_path / "again").mkdir()
    shutil.copy(FIXTURES / "broker-1.jmx.csv", tmp_path / "again" / "broker-1.jmx.csv")
    paths = [
        str(FIXTURES / "broker-1.jmx.csv"),
        str(FIXTURES / "broker-2.jmx.csv"),
        str(tmp_path / "again"),
        str(FIXTURES / "confluent.prom"),
    ]
    return readers.classify_inputs(paths)


def test_scan_statistics_and_summary_equal_the_canonical_table(spark, tmp_path):
    files = _inputs(tmp_path)
    inputs = report_scan.open_inputs(spark, files)
    groups = report_scan.scan_stats(inputs)
    want_summary, want_rows = _canonical_groups(spark, files)
    summary = transforms.summary_of(groups)
    assert summary == want_summary
    assert summary["malformed_lines"] > 0 and summary["sources"] >= 2  # the fixtures have bad rows
    assert sorted(report_scan.source_rows(groups), key=repr) == want_rows
    bad_lines = {r["_line"] for r in readers.load_dumps(spark, files).filter("_bad").collect()}
    examples = report_scan.malformed_examples(inputs)
    assert examples and set(examples) <= bad_lines


def _chart_rows(points) -> list[tuple]:
    return sorted(tuple(p) for p in points)


def _opened(spark, files, reuse_scan: bool):
    """Inputs as the report opens them; with ``reuse_scan`` (small inputs) after the statistics pass."""
    inputs = report_scan.open_inputs(spark, files, reuse_scan=reuse_scan)
    if reuse_scan:
        report_scan.scan_stats(inputs)
        assert inputs.scanned
    return inputs


@pytest.mark.parametrize("reuse_scan", [False, True], ids=["own-pass", "reused-scan"])
def test_chart_points_equal_the_canonical_series_with_and_without_the_cell_check(spark, tmp_path, reuse_scan):
    generate(GeneratorSpec(samples=4000, out_dir=str(tmp_path), fmt="jmxtool", entities=5, brokers=2))
    files = readers.classify_inputs([str(tmp_path)])
    inputs = _opened(spark, files, reuse_scan)
    entities = sorted({d[:4] for d in inputs.dims.values() if d[0] is not None}, key=repr)[:3]
    samples = transforms.valid_samples(readers.load_dumps(spark, files))
    want = _chart_rows(transforms.chart_series(samples, spark, entities, 60_000).collect())
    assert want and _chart_rows(report_scan.chart_points(inputs, entities, 60_000)) == want
    assert _chart_rows(report_scan.chart_points(inputs, entities, 60_000, inputs_clean=True)) == want


@pytest.mark.parametrize("reuse_scan", [False, True], ids=["own-pass", "reused-scan"])
def test_chart_points_leave_out_malformed_lines(spark, tmp_path, reuse_scan):
    files = _inputs(tmp_path)  # malformed rows, a second file of one broker, a Prometheus scrape
    inputs = _opened(spark, files, reuse_scan)
    entities = sorted({d[:4] for d in inputs.dims.values() if d[0] is not None}, key=repr)
    entities += [("produce", "bob", "app-2", None)]  # charted from the Prometheus scrape
    samples = transforms.valid_samples(readers.load_dumps(spark, files))
    want = _chart_rows(transforms.chart_series(samples, spark, entities, 1000).collect())
    assert want and _chart_rows(report_scan.chart_points(inputs, entities, 1000)) == want
