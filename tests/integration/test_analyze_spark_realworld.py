"""Real-world forms of dumps on a real local Spark: JMX-quoted client-ids in Prometheus labels, text
attributes in JmxTool files, compressed files, cut last lines and cut timestamps, scrapes appended
without timestamps and one file per scrape, --timezone, the what-if's sample intervals and the
report's mean. (Dumps captured from a real broker: test_analyze_real_dumps.py.)
"""

from __future__ import annotations

import gzip
import json
import os

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import run_main
from kconfigs_analysis import metric_names, readers
from kconfigs_analysis.dumpfiles import ReadOptions
from kconfigs_analysis.schemas import CANONICAL_SCHEMA
from kconfigs_analysis.session import SessionOptions, spark_session

T0 = 1_714_557_600_000  # 2024-05-01 10:00:00 UTC
PRODUCE = "kafka.server:type=Produce,client-id={}:{}"


@pytest.fixture(scope="module")
def spark():
    with spark_session(SessionOptions(master="local[2]", shuffle_partitions=2)) as session:
        yield session


def _rows(spark, *paths, options: ReadOptions | None = None) -> list[dict]:
    files = readers.classify_inputs([str(p) for p in paths])
    return [r.asDict() for r in readers.load_dumps(spark, files, options).collect()]


def _good(rows: list[dict]) -> list[dict]:
    return [r for r in rows if not r["_bad"]]


def _jmx_quote(text: str) -> str:
    """javax.management.ObjectName.quote (what Kafka's JmxReporter applies to such a client-id)."""
    return '"' + "".join({"\\": "\\\\", '"': '\\"', "*": "\\*", "?": "\\?", "\n": "\\n"}.get(c, c) for c in text) + '"'


def _prom_label(value: str) -> str:
    """A label value as the text exposition format escapes it."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _jmx_csv(header_keys: list[str], rows: list[str]) -> str:
    return '"time",' + ",".join(f'"{k}"' for k in header_keys) + "\n" + "".join(r + "\n" for r in rows)


# ---- Prometheus labels quoted by JMX ----------------------------------------------------------------


def test_quoted_client_ids_are_unquoted_in_every_jmx_exporter_naming(spark, tmp_path):
    quoted = _prom_label(_jmx_quote("etl:nightly"))  # \"etl:nightly\"
    dump = tmp_path / "b1.prom"
    dump.write_text(
        f'kafka_server_Produce_byte_rate{{client_id="{quoted}"}} 10.0 {T0}\n'  # no rules (1.x and 0.20)
        f'kafka_server_produce_byte_rate{{client_id="{quoted}",user="u"}} 20.0 {T0}\n'  # lowercase rules
        f'kafka_server_quota_byte_rate{{clientId="{quoted}",resource="Fetch"}} 30.0 {T0}\n'  # example_configs
        f'kafka_server_quota_throttle_time{{clientId="{_prom_label(_jmx_quote("a*b"))}",resource="Fetch, '
        f'user=v"}} 5.0 {T0}\n'
        f'kafka_server_Produce_byte_rate{{client_id="\\"not quote()d\\"x"}} 1.0 {T0}\n'
    )  # unquote would reject it
    got = sorted(
        (r["kind"], r["user"] or "", r["client_id"], r["rate"] or r["throttle_ms"]) for r in _good(_rows(spark, dump))
    )
    assert got == [
        ("fetch", "", "etl:nightly", 30.0),
        ("fetch", "v", "a*b", 5.0),
        ("produce", "", '"not quote()d"x', 1.0),
        ("produce", "", "etl:nightly", 10.0),
        ("produce", "u", "etl:nightly", 20.0),
    ]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.text(alphabet=st.sampled_from('ab:,=*?"\\\n é'), min_size=1, max_size=12),
        min_size=20,
        max_size=30,
        unique=True,
    )
)
def test_spark_unquotes_exactly_as_objectname_unquote(spark, tmp_path, client_ids):
    dump = tmp_path / f"b-{abs(hash(tuple(client_ids)))}.prom"
    dump.write_text(
        "".join(
            f'kafka_server_Produce_byte_rate{{client_id="{_prom_label(_jmx_quote(c))}"}} {i}.0 {T0}\n'
            for i, c in enumerate(client_ids)
        )
    )
    got = {int(r["rate"]): r["client_id"] for r in _good(_rows(spark, dump))}
    assert got == dict(enumerate(client_ids))
    assert [metric_names.unquote_jmx(_jmx_quote(c)) for c in client_ids] == client_ids  # the Python twin agrees


# ---- JmxTool text attributes, and the "no quota metrics" message ------------------------------------


def test_jmxtool_text_attribute_columns_are_ignored_not_malformed(spark, tmp_path):
    keys = [
        "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec:Count",
        "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec:EventType",
        "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec:RateUnit",
        PRODUCE.format("app", "byte-rate"),
        PRODUCE.format("app", "throttle-time"),
    ]
    dump = tmp_path / "broker-1.jmx.csv"
    dump.write_text(
        _jmx_csv(
            keys, [f"{T0 + i * 1000},{i},bytes,SECONDS,{1000.0 * (i + 1)},{'NaN' if i else '100.0'}" for i in range(3)]
        )
    )
    rows = _rows(spark, dump)
    assert not any(r["_bad"] for r in rows) and sorted(r["rate"] for r in rows if r["rate"]) == [1000.0, 2000.0, 3000.0]
    code, out, err = run_main("analyze", "report", str(dump), "--format", "json", "--no-progress")
    assert code == 0, err
    document = json.loads(out)
    assert document["summary"]["malformed_lines"] == 0 and document["summary"]["ignored_columns"] == 3
    # the mean beside the percentiles; the mean throttle-time of throttled samples, not a sum of averages
    (app,) = document["entities"]
    assert app["mean"] == 2000.0 and app["throttle_ms_mean"] == 100.0 and "throttle_ms_total" not in app


def test_a_dump_whose_quota_lines_are_all_malformed_says_so_not_no_quota_metrics(spark, tmp_path):
    dump = tmp_path / "broker-1.jmx.csv"
    dump.write_text(_jmx_csv([PRODUCE.format("app", "byte-rate")], [f"{T0},oops", f"{T0 + 1000},bad"]))
    code, out, err = run_main("analyze", "report", str(dump), "--no-progress")
    assert (code, out) == (1, "") and err.startswith("No valid sample: all 2 line(s) with quota metrics are malformed")
    assert "No quota metrics" not in err and err.count("\n") == 1


# ---- compressed dumps ---------------------------------------------------------------------------------


def test_compressed_dumps_are_read_by_content_in_a_directory(spark, tmp_path):
    jmx = _jmx_csv([PRODUCE.format("app", "byte-rate")], [f"{T0},1000.0", f"{T0 + 1000},2000.0"])
    (tmp_path / "broker-1.jmx.csv.gz").write_bytes(gzip.compress(jmx.encode()))
    (tmp_path / "broker-2.jmx.csv.zst").write_bytes(zstandard.ZstdCompressor().compress(jmx.encode()))
    (tmp_path / "broker-3.prom").write_bytes(
        gzip.compress(f'kafka_server_Produce_byte_rate{{client_id="app"}} 5.0 {T0}\n'.encode())
    )
    rows = _rows(spark, tmp_path)
    assert not any(r["_bad"] for r in rows)
    assert sorted((r["source"], r["rate"]) for r in rows) == [
        ("broker-1", 1000.0),
        ("broker-1", 2000.0),
        ("broker-2", 1000.0),
        ("broker-2", 2000.0),
        ("broker-3", 5.0),
    ]


# ---- cut files and implausible timestamps -------------------------------------------------------------


def test_a_cut_last_line_and_a_cut_timestamp_are_malformed(spark, tmp_path):
    prom = tmp_path / "b1.prom"
    prom.write_text(
        f'kafka_server_Produce_byte_rate{{client_id="a"}} 1.0 {T0}\n'
        f'kafka_server_Produce_byte_rate{{client_id="a"}} 2.0 17145576\n'  # a timestamp in 1970
        f'kafka_server_Produce_byte_rate{{client_id="a"}} 3.0 {T0 + 1000}\n'
        f'kafka_server_Produce_byte_rate{{client_id="a"}} 4.0 {T0 + 2000}'[:-6]
    )  # cut, no newline
    cut_value = tmp_path / "b2.prom"
    cut_value.write_text(
        'kafka_server_Produce_byte_rate{client_id="b"} 1048576.0\nkafka_server_Produce_byte_rate{client_id="c"} 10'
    )
    jmx = tmp_path / "broker-1.jmx.csv"
    jmx.write_text(
        _jmx_csv([PRODUCE.format("app", "byte-rate")], [f"{T0},1000.0", f"{T0 + 1000},2000.0"]) + f"{T0 + 2000},30"
    )
    future = tmp_path / "broker-2.jmx.csv"
    future.write_text(_jmx_csv([PRODUCE.format("app", "byte-rate")], [f"{T0},1000.0", "99999999999999,5.0"]))
    os.utime(future, (T0 / 1000 + 60, T0 / 1000 + 60))
    rows = _rows(spark, prom, cut_value, jmx, future)
    bad = sorted(r["_line"] for r in rows if r["_bad"])
    assert bad == sorted(
        [
            'kafka_server_Produce_byte_rate{client_id="a"} 2.0 17145576',
            f'kafka_server_Produce_byte_rate{{client_id="a"}} 4.0 {T0 + 2000}'[:-6],
            'kafka_server_Produce_byte_rate{client_id="c"} 10',
            f"{T0 + 2000},30",
            "99999999999999,5.0",
        ]
    )
    assert sorted(r["rate"] for r in _good(rows)) == [1.0, 3.0, 1000.0, 1000.0, 2000.0, 1048576.0]


# ---- scrapes without timestamps -------------------------------------------------------------------------


def _scrape_text(value: float) -> str:
    return (
        "# HELP kafka_server_Produce_byte_rate Attribute exposed for management\n"
        "# TYPE kafka_server_Produce_byte_rate untyped\n"
        f'kafka_server_Produce_byte_rate{{client_id="app"}} {value}\n'
        f'kafka_server_Produce_throttle_time{{client_id="app"}} NaN\n'
    )


def test_scrapes_appended_without_timestamps_are_refused_without_an_interval_and_timed_with_one(spark, tmp_path):
    appended = tmp_path / "broker-1.prom"
    appended.write_text(
        "".join(_scrape_text(v) for v in (1.0, 2.0, 3.0)) + 'kafka_server_Fetch_byte_rate{client_id="late"} 9.0\n'
    )
    code, out, err = run_main("analyze", "report", str(appended), "--no-progress")
    assert (code, out) == (1, "") and err == (
        f"{appended}: 3 scrapes appended without timestamps (each series up to 3 times): "
        "give --scrape-interval SECONDS, the period they were taken at\n"
    )
    mtime_ms = int(os.path.getmtime(appended) * 1000)
    rows = _good(_rows(spark, appended, options=ReadOptions(scrape_interval_ms=15_000)))
    rates = sorted((r["ts_ms"], r["rate"]) for r in rows if r["rate"] is not None)
    # the last scrape at the file's time, each earlier one 15 s before; "late" appeared in the third
    assert rates == [(mtime_ms - 30_000, 1.0), (mtime_ms - 15_000, 2.0), (mtime_ms, 3.0), (mtime_ms, 9.0)]
    assert {r["source"] for r in rows} == {"broker-1"}


def test_one_file_per_scrape_named_by_its_time_is_one_source(spark, tmp_path):
    for i, value in enumerate((1.0, 2.0, 3.0)):
        (tmp_path / f"scrape-{T0 // 1000 + 30 * i}.prom").write_text(_scrape_text(value))
    rows = _good(_rows(spark, tmp_path))
    assert sorted((r["source"], r["ts_ms"], r["rate"]) for r in rows if r["rate"]) == [
        ("scrape", T0, 1.0),
        ("scrape", T0 + 30_000, 2.0),
        ("scrape", T0 + 60_000, 3.0),
    ]
    code, out, _ = run_main("analyze", "report", str(tmp_path), "--format", "json", "--no-progress")
    (app,) = [e for e in json.loads(out)["entities"] if e["kind"] == "produce"]
    assert code == 0 and app["samples"] == 3 and app["p50"] == 2.0  # one broker's series, not 3 brokers' maxima


def test_numbered_timestamp_less_scrapes_written_by_a_loop_are_refused_in_one_line(spark, tmp_path):
    for i, value in enumerate((1.0, 2.0, 3.0)):
        path = tmp_path / f"scrape-{i + 1}.prom"
        path.write_text(_scrape_text(value))
        os.utime(path, (T0 / 1000 + 15 * i, T0 / 1000 + 15 * i))
    code, out, err = run_main("analyze", "report", str(tmp_path), "--no-progress")
    assert (code, out) == (1, "") and err.startswith("3 files scrape-<n>.prom without timestamps, written every 15 s")
    assert err.count("\n") == 1


# ---- --timezone for --jmx-date-format ---------------------------------------------------------------------


def test_dated_jmxtool_times_are_read_in_the_given_or_the_machines_time_zone(spark, tmp_path, monkeypatch):
    dump = tmp_path / "broker-1.jmx.csv"
    dump.write_text(_jmx_csv([PRODUCE.format("app", "byte-rate")], ["2024-05-01 12:00:00,1000.0"]))
    paris = _rows(spark, dump, options=ReadOptions(jmx_date_format="yyyy-MM-dd HH:mm:ss", timezone="Europe/Paris"))
    assert [r["ts_ms"] for r in paris] == [T0]  # 12:00 in Paris (CEST) = 10:00 UTC
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    machine = _rows(spark, dump, options=ReadOptions(jmx_date_format="yyyy-MM-dd HH:mm:ss"))
    assert [r["ts_ms"] for r in machine] == [T0 - 7 * 3600_000]  # 12:00 in Tokyo = 03:00 UTC
    code, out, err = run_main(
        "analyze",
        "report",
        str(dump),
        "--jmx-date-format",
        "yyyy-MM-dd HH:mm:ss",
        "--timezone",
        "+02:00",
        "--format",
        "json",
        "--no-progress",
    )
    assert code == 0, err
    assert json.loads(out)["summary"]["first_ts_ms"] == T0


# ---- what-if intervals --------------------------------------------------------------------------------


def test_whatif_charges_each_sample_with_the_series_spacing_the_last_one_too(spark):
    from kconfigs_analysis import whatif

    # 1 s apart, then a 10-s hole (an expired sensor), then 1 s apart: 1000 B/s each
    times = [T0, T0 + 1000, T0 + 2000, T0 + 12_000, T0 + 13_000]
    samples = spark.createDataFrame(
        [(t, "b1", "produce", None, "app", None, 1000.0, 0.0, None) for t in times], CANONICAL_SCHEMA
    )
    rows = whatif.events_from_samples(samples).collect()
    events = sorted((e["time_ms"], e["value"]) for e in rows if e["counted"])
    # each sample is the second before it, as requests every 100 ms (traffic_model.SLOT_MS); the
    # first sample and the one after the hole cover one usual spacing, never 10 s or 60 s
    assert events == [(t - 1000 + k * 100, 100) for t in times for k in range(1, 11)]
    # before the first sample, the rest of its 11-s quota window at its rate, as warm-up
    warm_up = sorted((e["time_ms"], e["value"]) for e in rows if not e["counted"])
    assert warm_up == [(T0 - 11_000 + k * 100, 100) for k in range(1, 101)]
