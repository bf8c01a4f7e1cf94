"""``kconfigs analyze`` on a real local Spark: readers on fixture dumps in each real format, report
numbers against an independent plain-Python computation, what-if against ``kconfigs simulate``,
recommendations that ``kconfigs.quotafile`` reads back, errors, and the HTML report in Chromium.

One SparkSession serves the whole module (Spark start-up is slow on 2 cores); the CLI commands
run in-process and borrow it (``kconfigs_analysis.session`` reuses an active session).
"""

from __future__ import annotations

import collections
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import urllib.parse
from html import escape as html_escape
from pathlib import Path

import pytest

from harness.cli import run_main
from kconfigs_analysis.generate import GeneratorSpec, generate
from kconfigs_analysis.session import SessionOptions, spark_session

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dumps"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def spark():
    with spark_session(SessionOptions(master="local[2]", shuffle_partitions=2)) as session:
        yield session


def _rows(spark, *names: str) -> list[dict]:
    from kconfigs_analysis import readers

    files = readers.classify_inputs([str(FIXTURES / n) for n in names])
    return [r.asDict() for r in readers.load_dumps(spark, files).collect()]


# ---- readers on fixture files ----------------------------------------------------------------


def test_jmxtool_reader_decodes_users_java_numbers_quoted_ids_and_counts_bad_rows(spark):
    rows = _rows(spark, "broker-1.jmx.csv", "broker-2.jmx.csv")
    bad = [r for r in rows if r["_bad"]]
    assert len(bad) == 2 and bad[0]["_line"].startswith("1714557630000")  # short row; "oops" cell
    good = [r for r in rows if not r["_bad"]]
    bob = sorted(
        (r["ts_ms"], r["rate"])
        for r in good
        if r["client_id"] == "etl,nightly" and r["kind"] == "produce" and r["rate"] is not None
    )
    assert bob == [(1714557600000, 1.0e7), (1714557610000, 1.2e7), (1714557620000, 9.5e6)]
    alice = {r["user"] for r in good if r["kind"] == "fetch" and r["source"] == "broker-1"}
    assert alice == {"CN=alice,OU=eng"}
    nan_throttle = [
        r["throttle_ms"]
        for r in good
        if r["kind"] == "fetch" and r["source"] == "broker-1" and r["throttle_ms"] is not None
    ]
    assert nan_throttle == [0.0, 0.0, 0.0]  # NaN = not throttled
    dated = sorted(
        r["ts_ms"] for r in good if r["source"] == "broker-2" and r["kind"] == "fetch" and r["rate"] is not None
    )
    assert dated == [1714557600000, 1714557610000]  # --date-format "yyyy-MM-dd HH:mm:ss", UTC
    assert not any(r["kind"] is None for r in good)  # queue-size column ignored, not malformed


def test_prometheus_reader_handles_the_three_jmx_exporter_schemes(spark):
    rows = _rows(spark, "confluent.prom", "jmx-exporter-example.prom", "default-naming.prom")
    bad = [r["_line"] for r in rows if r["_bad"]]
    assert len(bad) == 2 and "not-a-number" in bad[0]
    good = [r for r in rows if not r["_bad"]]
    confluent = sorted(
        (r["ts_ms"], r["rate"]) for r in good if r["user"] == "CN=alice,OU=eng" and r["kind"] == "produce" and r["rate"]
    )
    assert confluent == [(1714557600000, 1048310.2), (1714557615000, 1049002.9)]
    assert {r["source"] for r in good if r["user"] == "bob"} == {"b1:7071"}
    quirk = [r for r in good if r["user"] == "carol" and r["kind"] == "produce"]
    assert [(r["client_id"], r["rate"]) for r in quirk] == [("app-9", 7000.0)]  # resource="Produce, user=carol"
    assert [r["ip"] for r in good if r["kind"] == "connection"] == ["10.0.0.8"]  # listener-level series dropped
    dave = {r["kind"]: r for r in good if r["user"] == "dave"}
    assert dave["fetch"]["throttle_ms"] == 7.0 and dave["controller_mutation"]["rate"] == 1.5
    assert dave["produce"]["ts_ms"] == int(os.path.getmtime(FIXTURES / "default-naming.prom") * 1000)


def test_usage_log_reader_turns_windows_into_rates_and_counts_malformed_lines(spark):
    rows = _rows(spark, "gateway-usage.jsonl")
    assert sum(r["_bad"] for r in rows) == 3
    good = {(r["kind"], r["ts_ms"]): r for r in rows if not r["_bad"]}
    assert (
        good[("produce", 1714557601000)]["rate"] == 3145728.0 and good[("produce", 1714557601000)]["throttle_ms"] == 250
    )
    # 50 ms of thread time in a 2 s window = 2.5 % of one thread
    assert good[("request", 1714557600000)]["rate"] == pytest.approx(2.5)
    assert good[("connection", 1714557600000)]["ip"] == "10.0.0.7"
    # a client's lines from two addresses in one window are one entity's usage (quotas ignore ips)
    merged = good[("produce", 1714557602000)]
    assert (merged["ip"], merged["rate"], merged["throttle_ms"]) == (None, 1500000.0, 20.0)


def test_usage_log_windows_left_out_are_idle_for_at_most_a_sensor_lifetime(spark, tmp_path):
    """docs/usage-log.md: the gateway omits idle windows. Between an entity's lines each missing
    window is a sample of rate 0 (not throttled), for at most an hour after a line (a broker's
    quota sensor expires after 1 h without recordings); nothing after an entity's last line."""
    t0 = 1714557600000
    rows = [r for r in _rows(spark, "gateway-usage-idle.jsonl") if not r["_bad"]]
    series = collections.defaultdict(dict)
    for r in rows:
        assert r["ts_ms"] not in series[(r["kind"], r["user"])], r  # one sample per window
        series[(r["kind"], r["user"])][r["ts_ms"]] = (r["rate"], r["throttle_ms"])
    produce = series[("produce", "bob")]
    assert [produce[t0 + i * 1000] for i in range(5)] == [
        (4000.0, 100.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (1000.0, 0.0),
        (0.0, 0.0),
    ]
    last_line = t0 + 3000 + 7_200_000
    idle_after_second_line = [t for t in produce if t0 + 3000 < t < last_line]
    assert idle_after_second_line == list(range(t0 + 4000, t0 + 3000 + 3_600_001, 1000))  # 3,600 windows: one hour
    assert produce[last_line] == (500.0, 0.0) and max(produce) == last_line
    # a 2 s window steps by 2 s; entities and kinds are filled on their own
    assert sorted(series[("request", "bob")]) == [t0, t0 + 2000, t0 + 4000, t0 + 6000]
    assert series[("request", "bob")][t0 + 2000] == (0.0, 0.0)
    assert sorted(series[("fetch", "carol")]) == [t0 + 1000, t0 + 2000]

    out = tmp_path / "report.json"
    code, _, err = run_main(
        "analyze",
        "report",
        str(FIXTURES / "gateway-usage-idle.jsonl"),
        "--format",
        "json",
        "--output",
        str(out),
        "--no-progress",
    )
    assert code == 0, err
    bob = next(e for e in json.loads(out.read_text())["entities"] if e["kind"] == "produce")
    # 3,605 windows, 3 of them busy: the median window is idle; 1 of 3,605 was throttled
    assert (bob["p50"], bob["max"]) == (0.0, 4000.0)
    assert bob["throttled_fraction"] == pytest.approx(1 / 3605)

    # the what-if replays requests: an idle window is none (a broker records nothing then)
    proposed = tmp_path / "proposed.toml"
    proposed.write_text('[[quota]]\nentity = { user = "bob", client-id = "etl" }\nproducer_byte_rate = 300\n')
    code, _, err = run_main(
        "analyze",
        "whatif",
        str(FIXTURES / "gateway-usage-idle.jsonl"),
        "--proposed",
        str(proposed),
        "--format",
        "json",
        "--output",
        str(tmp_path / "whatif.json"),
        "--no-progress",
    )
    assert code == 0, err
    replayed = {
        r["kind"]: r for r in json.loads((tmp_path / "whatif.json").read_text())["entities"] if r["user"] == "bob"
    }
    # three busy windows, each charged as requests over its second (traffic_model): 4000 B, then
    # 5000 B within the 10 s minimum window, over 300 B/s; the sensor has expired by the third
    produce = replayed["produce"]
    assert (produce["samples"], produce["throttled_samples"]) == (3, 2)
    assert produce["throttled_events"] >= 2 and produce["demand_rate"] == pytest.approx((4000 + 1000 + 500) / 3)


# ---- report numbers against plain Python -----------------------------------------------------


def _plain_python_stats(directory: Path) -> dict:
    """Independent of spark_analysis: Kafka system-test header split, float(), nearest rank."""
    series = collections.defaultdict(lambda: {"rate": [], "throttle": []})
    for path in sorted(directory.glob("broker-*.jmx.csv")):
        lines = path.read_text().splitlines()
        keys = lines[0].strip()[1:-1].split('","')[1:]
        for line in lines[1:]:
            for key, cell in zip(keys, line.split(",")[1:]):
                object_name, attribute = key.rsplit(":", 1)
                tags = dict(p.split("=", 1) for p in object_name.split(":", 1)[1].split(","))
                entity = (
                    tags["type"].lower(),
                    urllib.parse.unquote(tags["user"]) if "user" in tags else None,
                    tags.get("client-id"),
                )
                bucket = series[(entity, path.name)]["rate" if attribute == "byte-rate" else "throttle"]
                bucket.append(float(cell))
    stats = {}
    for (entity, _broker), values in series.items():
        rates = sorted(values["rate"])
        ranks = {f"p{round(p * 100)}": rates[math.ceil(p * len(rates)) - 1] for p in (0.5, 0.95, 0.99)}
        throttled = sum(1 for t in values["throttle"] if not math.isnan(t) and t > 0)
        entry = stats.setdefault(entity, {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0, "n": 0, "throttled": 0})
        for name, value in {**ranks, "max": rates[-1]}.items():
            entry[name] = max(entry[name], value)
        entry["n"] += len(values["throttle"])
        entry["throttled"] += throttled
    return stats


def _quota_lookup(quota_file: Path) -> dict:
    from kconfigs.quotafile import parse_quota_text

    table = {}
    for item in parse_quota_text(quota_file.read_text()):
        entity = item.entity.to_json()
        if set(entity) == {"user", "client-id"}:
            for key, value in item.quotas.items():
                table[
                    (
                        {"producer_byte_rate": "produce", "consumer_byte_rate": "fetch"}[key],
                        entity["user"],
                        entity["client-id"],
                    )
                ] = value
    return table


def test_report_numbers_match_an_independent_plain_python_computation(spark, tmp_path):
    generate(GeneratorSpec(samples=6000, out_dir=str(tmp_path), fmt="jmxtool", entities=6, brokers=2))
    out = tmp_path / "report.json"
    code, _, err = run_main(
        "analyze",
        "report",
        str(tmp_path),
        "--quotas",
        str(tmp_path / "quotas.toml"),
        "--format",
        "json",
        "--output",
        str(out),
        "--no-progress",
    )
    assert code == 0, err
    document = json.loads(out.read_text())
    expected, quotas = _plain_python_stats(tmp_path), _quota_lookup(tmp_path / "quotas.toml")
    assert len(document["entities"]) == len(expected) == 12
    for row in document["entities"]:
        want = expected[(row["kind"], row["user"], row["client_id"])]
        for name in ("p50", "p95", "p99", "max"):
            assert row[name] == pytest.approx(want[name], rel=1e-12), (row, name)
        assert row["throttled_fraction"] == pytest.approx(want["throttled"] / want["n"])
        quota = quotas.get((row["kind"], row["user"], row["client_id"]))  # level 1 or unlimited
        assert row["quota"] == quota
        assert row["util_p99_pct"] == (None if quota is None else pytest.approx(want["p99"] / quota * 100))
    idle = {json.dumps(i["entity"], sort_keys=True) for i in document["idle_quotas"]}
    assert idle == {'{"user": "retired-team"}', '{"client-id": "old-batch"}'}


def test_strict_fails_on_malformed_lines_and_a_dump_without_quota_metrics_is_one_line(spark, tmp_path):
    code, out, err = run_main("analyze", "report", str(FIXTURES / "gateway-usage.jsonl"), "--strict", "--no-progress")
    assert code == 1 and out == "" and err.startswith("3 malformed line(s) (--strict)") and err.count("\n") == 1
    jvm_only = tmp_path / "jvm.prom"
    jvm_only.write_text('# TYPE jvm_threads gauge\njvm_threads{area="x"} 12 1714557600000\n')
    code, out, err = run_main("analyze", "report", str(jvm_only), "--no-progress")
    assert code == 1 and err.startswith("No quota metrics in the input") and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (("report", ""), "A DUMP argument is empty: give a file, a directory or a glob"),
        (("report", "{dump}", "--quotas", ""), "--quotas is empty: give a value or leave it out"),
        (("report", "{dump}", "--html="), "--html is empty: give a value or leave it out"),
        (("report", "{dump}", "--format", "json", "--output", ""), "--output is empty: give a value or leave it out"),
        (("recommend", "{dump}", "--write", ""), "--write is empty: give a value"),
        (("whatif", "{dump}", "--proposed", ""), "--proposed is empty: give a value"),
        (("whatif", "{dump}", "--proposed", "q.toml", "--output="), "--output is empty: give a value or leave it out"),
        (("generate", "--out", ""), "--out is empty: give a value"),
        (
            ("report", "--prometheus-url", "http://127.0.0.1:1", "--since", ""),
            "--since is empty: give a value or leave it out",
        ),
        (
            ("report", "--prometheus-url", "http://127.0.0.1:1", "--step="),
            "--step is empty: give a value or leave it out",
        ),
    ],
)
def test_an_empty_path_is_one_line_before_spark_starts(tmp_path, monkeypatch, argv, message):
    """An unset shell variable: an empty --quotas read the store's quotas instead, an empty --html
    wrote no report, and both said nothing."""
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{dump}", str(FIXTURES / "gateway-usage.jsonl")) for a in argv]
    code, out, err = run_main("analyze", *argv, "--quiet") if argv[0] != "generate" else run_main("analyze", *argv)
    assert (code, out, err) == (1, "", message + "\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "variable", ["KCONFIGS_PROMETHEUS_URL", "KCONFIGS_PROMETHEUS_USER", "KCONFIGS_PROMETHEUS_TOKEN"]
)
def test_an_empty_prometheus_variable_is_one_line_not_unset(tmp_path, monkeypatch, variable):
    """click takes an empty variable as unset: with dumps given, an empty URL analysed the dumps
    alone, and an empty token queried without one."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, "")
    code, out, err = run_main("analyze", "report", str(FIXTURES / "gateway-usage.jsonl"), "--quiet")
    assert (code, out, err) == (1, "", f"{variable} is empty: give a value or leave it out\n")


@pytest.mark.parametrize(
    "argv, flag, victim",
    [
        (("report", "{dump}", "--format", "csv", "--output", "{dump}"), "--output", "dump"),
        (("report", "{dir}/*.jsonl", "--html", "{dump}"), "--html", "dump"),
        (("report", "{dump}", "--quotas", "{quotas}", "--html", "{quotas}"), "--html", "quotas"),
        (("recommend", "{dump}", "--quotas", "{quotas}", "--write", "{quotas}"), "--write", "quotas"),
        (
            ("whatif", "{dump}", "--proposed", "{quotas}", "--format", "json", "--output", "{quotas}"),
            "--output",
            "quotas",
        ),
    ],
)
def test_an_output_that_is_one_of_the_inputs_is_refused_before_spark_starts(tmp_path, argv, flag, victim):
    """recommend --quotas quotas.toml --write quotas.toml replaced the operator's quota file with
    the recommendations alone; --output onto the dump replaced the data that was read."""
    files = {"dump": tmp_path / "usage.jsonl", "quotas": tmp_path / "quotas.toml"}
    files["dump"].write_bytes((FIXTURES / "gateway-usage.jsonl").read_bytes())
    files["quotas"].write_text('[[quota]]\nentity = { user = "alice" }\nproducer_byte_rate = 1024\n')
    before = {name: path.read_bytes() for name, path in files.items()}
    names = {"{dump}": str(files["dump"]), "{quotas}": str(files["quotas"]), "{dir}": str(tmp_path)}
    argv = [names.get(a, a).replace("{dir}", str(tmp_path)) for a in argv]
    code, out, err = run_main("analyze", *argv, "--quiet")
    assert (code, out, err) == (
        1,
        "",
        f"{flag} {files[victim]} is one of the inputs: writing it would replace what was read\n",
    )
    assert {name: path.read_bytes() for name, path in files.items()} == before


@pytest.mark.parametrize(
    "form",
    ["directory", "glob", "symlinked output", "symlinked directory", "./ spelling", "jmxtool in a directory"],
)
@pytest.mark.parametrize("command", ["report-json", "report-html", "whatif"])
def test_no_output_replaces_a_dump_file_whatever_form_the_input_took(tmp_path, monkeypatch, form, command):
    """``report small --output small/broker-1.jmx.csv`` ran to the end and replaced the dump: only
    inputs named one by one were protected, not the files of a directory or glob."""
    monkeypatch.chdir(tmp_path)
    dump = tmp_path / "small"
    generate(GeneratorSpec(samples=200, out_dir=str(dump), fmt="jmxtool", entities=2))
    victim = dump / "broker-1.jmx.csv"
    (tmp_path / "link").symlink_to(victim)
    (tmp_path / "linked-dir").symlink_to(dump, target_is_directory=True)
    given, output = {
        "directory": (str(dump), str(victim)),
        "glob": (f"{dump}/*.csv", str(victim)),
        "symlinked output": (str(dump), str(tmp_path / "link")),
        "symlinked directory": (str(tmp_path / "linked-dir"), str(victim)),
        "./ spelling": ("small", "./small/../small/broker-1.jmx.csv"),
        "jmxtool in a directory": (str(dump), str(dump / "broker-2.jmx.csv")),
    }[form]
    before = {p.name: p.read_bytes() for p in dump.iterdir()}
    argv, flag = {
        "report-json": (["report", given, "--format", "json", "--output", output], "--output"),
        "report-html": (["report", given, "--html", output], "--html"),
        "whatif": (
            ["whatif", given, "--proposed", str(dump / "quotas.toml"), "--format", "csv", "--output", output],
            "--output",
        ),
    }[command]
    code, out, err = run_main("analyze", *argv, "--quiet")
    assert (code, out, err) == (
        1,
        "",
        f"{flag} {output} is one of the inputs: writing it would replace what was read\n",
    )
    assert {p.name: p.read_bytes() for p in dump.iterdir()} == before


def _run_seconds(argv: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    import time

    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "kconfigs", *argv], capture_output=True, text=True, cwd=cwd, timeout=60
    )
    return time.monotonic() - started, result


@pytest.mark.parametrize(
    "case",
    ["quota file as the dump", "notes", "jmxtool as prometheus", "parquet to stdout", "empty file", "yaml quota file"],
)
def test_wrong_input_fails_within_two_seconds_naming_what_the_file_looks_like(tmp_path, case):
    """A quota file given as the dump failed after 41 s ("all 66 lines malformed"), notes.txt
    after 20 s, JmxTool with --input-format prometheus after 41 s, parquet without --output
    after the whole run."""
    quotas = tmp_path / "q.toml"
    quotas.write_text('[[quota]]\nentity = { user = "alice" }\nproducer_byte_rate = 1048576\n')
    (tmp_path / "q.yaml").write_text("quota:\n- entity: {user: alice}\n  producer_byte_rate: 1048576\n")
    (tmp_path / "notes.txt").write_text("remember to ask the platform team about alice\nand bob\n")
    (tmp_path / "empty.csv").write_text("")
    jmx = str(FIXTURES / "broker-1.jmx.csv")
    argv, message = {
        "quota file as the dump": (
            ["report", str(quotas)],
            f"{quotas} is a quota file, not a metric dump: give it with --quotas (whatif: --proposed)",
        ),
        "yaml quota file": (
            ["whatif", str(tmp_path / "q.yaml"), "--proposed", str(quotas)],
            f"{tmp_path / 'q.yaml'} is a quota file, not a metric dump: give it with --quotas (whatif: --proposed)",
        ),
        "notes": (
            ["report", str(tmp_path / "notes.txt")],
            f"{tmp_path / 'notes.txt'} is not a metric dump "
            "(first line 'remember to ask the platform team about alice'): "
            "give JmxTool, Prometheus or gateway usage-log files, or --input-format jmxtool|prometheus|usage-log",
        ),
        "empty file": (
            ["report", str(tmp_path / "empty.csv")],
            f"{tmp_path / 'empty.csv'} is not a metric dump (it is empty): give JmxTool, Prometheus or gateway "
            "usage-log files, or --input-format jmxtool|prometheus|usage-log",
        ),
        "jmxtool as prometheus": (
            ["report", jmx, "--input-format", "prometheus"],
            f"{jmx} looks like JmxTool, not Prometheus: use --input-format jmxtool, or leave --input-format out",
        ),
        "parquet to stdout": (
            ["report", jmx, "--format", "parquet"],
            "--format parquet needs --output PATH (parquet is not written to a terminal or pipe)",
        ),
    }[case]
    seconds, result = _run_seconds(["analyze", *argv], tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", message + "\n")
    assert seconds < 2.0, seconds
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.csv", "notes.txt", "q.toml", "q.yaml"]


def test_two_quota_sources_on_one_command_line_are_refused(tmp_path):
    """--quotas q.toml --zookeeper ... used the file and ignored --zookeeper without a word."""
    quotas = tmp_path / "q.toml"
    quotas.write_text('[[quota]]\nentity = { user = "alice" }\nproducer_byte_rate = 1048576\n')
    dump = str(FIXTURES / "gateway-usage.jsonl")
    for extra, named in (
        (["--zookeeper", "127.0.0.1:1"], "--zookeeper"),
        (["--store", str(tmp_path / "s.db")], "--store"),
    ):
        code, out, err = run_main("analyze", "report", dump, "--quotas", str(quotas), *extra, "-q")
        assert (code, out, err) == (1, "", f"--quotas and {named} both name the quotas in force: give one of them\n")


USAGE_LOG_WINDOW = (
    "usage-log samples: one logged window each (1 s by default), not Kafka's 11 s quota window: "
    "a client Kafka holds to its quota over 11 s can read above it in single windows"
)


def test_every_report_names_its_quota_source(spark, tmp_path, monkeypatch):
    """Without --quotas a report quietly used default_profile's store; now the text, JSON and HTML
    say which quotas were in force: a file, a store (and which option named it), or none."""
    from kconfigs.model import QuotaEntity
    from kconfigs.stores.sqlite import SqliteStore

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("KCONFIGS_STORE", raising=False)
    dump = str(FIXTURES / "gateway-usage.jsonl")
    quotas = tmp_path / "q.yaml"  # YAML: the one quota-file loader reads every format
    quotas.write_text("quota:\n- entity: {user: alice}\n  producer_byte_rate: 1048576\n")
    store = SqliteStore(tmp_path / "s.db")
    try:
        store.alter(QuotaEntity(user="alice"), lambda c: {"producer_byte_rate": "2048"})
    finally:
        store.close()
    cases = [
        ([], {"kind": "none"}, "Quotas in force: none"),
        (["--quotas", str(quotas)], {"kind": "file", "name": str(quotas)}, f"Quotas in force: file {quotas}"),
        (
            ["--store", str(tmp_path / "s.db")],
            {"kind": "store", "name": f"{tmp_path / 's.db'} (--store)"},
            f"Quotas in force: store {tmp_path / 's.db'} (--store)",
        ),
    ]
    for extra, source, line in cases:
        html = tmp_path / "r.html"
        code, out, err = run_main("analyze", "report", dump, *extra, "--format", "json", "--html", str(html), "-q")
        assert code == 0, err
        document = json.loads(out)
        assert {k: document["quota_source"][k] for k in source} == source
        assert line in html.read_text()
        # a usage log's rates are per logged window, and the report says so beside the quotas
        assert (
            document["rate_windows"] == [USAGE_LOG_WINDOW]
            and html_escape(f"Rates: {USAGE_LOG_WINDOW}") in html.read_text()
        )
        code, out, err = run_main("analyze", "report", dump, *extra, "-q")
        assert code == 0 and line in out and "not Kafka's 11 s quota window" in out, out


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--headroom", "30"],
            "--headroom 30 would recommend 31 × the percentile: headroom is a fraction (0.3 = 30 %), at most 5",
        ),
        (
            ["--floor", "produce=lots"],
            "--floor produce=lots: give KIND=VALUE with KIND one of produce, fetch, request, controller_mutation, "
            "connection and VALUE a number >= 0",
        ),
        (
            ["--floor", "bytes=1"],
            "--floor bytes=1: give KIND=VALUE with KIND one of produce, fetch, request, controller_mutation, "
            "connection and VALUE a number >= 0",
        ),
    ],
)
def test_recommend_refuses_a_percent_headroom_and_a_bad_floor_before_spark_starts(tmp_path, extra, message):
    """--headroom 30 (meant as 30 %) silently gave quotas 31 × the percentile."""
    plan = tmp_path / "plan.toml"
    code, out, err = run_main(
        "analyze", "recommend", str(FIXTURES / "gateway-usage.jsonl"), "--write", str(plan), *extra
    )
    assert (code, out, err) == (1, "", message + "\n")
    assert not plan.exists()


def test_recommend_floors_are_settable(spark, tmp_path):
    plan = tmp_path / "plan.toml"
    code, out, err = run_main(
        "analyze",
        "recommend",
        str(FIXTURES / "gateway-usage.jsonl"),
        "--write",
        str(plan),
        "--floor",
        "produce=8000000",
        "-q",
    )
    assert code == 0, err
    from kconfigs.quotafile import parse_quota_text

    produce = [
        d.quotas["producer_byte_rate"] for d in parse_quota_text(plan.read_text()) if "producer_byte_rate" in d.quotas
    ]
    assert produce and min(produce) >= 8_000_000
    assert "floor 8000000" in out and "Plan: " in out


def test_recommend_does_not_replace_a_quota_file_it_did_not_write_unless_told(tmp_path):
    """--write onto an existing quota file (the operator's own, or a typo for a new name)
    replaced it with the recommendations without a word."""
    dump = tmp_path / "usage.jsonl"
    dump.write_bytes((FIXTURES / "gateway-usage.jsonl").read_bytes())
    own = tmp_path / "quotas.toml"
    own.write_text(
        '# reviewed by the platform team\n[[quota]]\nentity = { user = "alice" }\nproducer_byte_rate = 1024\n'
    )
    before = own.read_bytes()
    code, out, err = run_main("analyze", "recommend", str(dump), "--write", str(own), "--quiet")
    assert (code, out, err) == (
        1,
        "",
        f"--write {own}: the file exists and was not written by kconfigs analyze recommend: nothing changed; "
        "re-run with --yes to replace it, or name a new file\n",
    )
    assert own.read_bytes() == before


def test_generate_refuses_a_directory_that_is_not_empty(tmp_path):
    """It replaced a quotas.toml there (the operator's own, in a config repository) without asking."""
    (tmp_path / "quotas.toml").write_text("# the operator's quotas\n")
    code, out, err = run_main("analyze", "generate", "--samples", "100", "--out", str(tmp_path))
    assert (code, out) == (1, "")
    assert err == (
        f"--out {tmp_path} is not empty: generate writes quotas.toml, truth.json and dump files there; "
        "give a new or empty directory\n"
    )
    assert (tmp_path / "quotas.toml").read_text() == "# the operator's quotas\n" and len(list(tmp_path.iterdir())) == 1
    assert run_main("analyze", "generate", "--samples", "100", "--out", str(tmp_path / "new"))[0] == 0


def test_bad_input_path_is_one_line_before_spark_starts():
    code, out, err = run_main("analyze", "report", "/nonexistent/dump.csv", "--quiet")
    assert (code, out, err) == (1, "", "Input path not found: /nonexistent/dump.csv\n")


def test_missing_java_is_one_line():
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.path.dirname(sys.executable)
    result = subprocess.run(
        [sys.executable, "-m", "kconfigs", "analyze", "report", str(FIXTURES / "confluent.prom"), "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "Java not found: Spark needs Java 17+ (install it or set JAVA_HOME)\n"


# ---- recommendations and what-if -------------------------------------------------------------


def test_recommend_writes_a_quota_file_kconfigs_reads_with_throttled_entities_stepped_up(spark, tmp_path):
    from kconfigs.quotafile import parse_quota_text

    generate(GeneratorSpec(samples=4000, out_dir=str(tmp_path), fmt="usage-log", entities=4))
    target = tmp_path / "recommended.toml"
    recommend = ("analyze", "recommend", str(tmp_path), "--quotas", str(tmp_path / "quotas.toml"), "--write")
    code, _, err = run_main(
        *recommend, str(target), "--format", "json", "--output", str(tmp_path / "r.json"), "--no-progress"
    )
    assert code == 0 and f"Wrote 10 quota(s) to {target}: 8 recommended, 2 kept as in force" in err
    # a re-run replaces its own earlier file without asking; another file only with --yes
    own = tmp_path / "operator.toml"
    own.write_text("# the operator's quotas\n")
    first = target.read_text()
    for path, extra in ((target, ()), (own, ("--yes",))):
        code, _, err = run_main(*recommend, str(path), *extra, "-q")
        assert code == 0, err
    assert own.read_text() == target.read_text() == first
    recommended = {(d.entity.user, d.entity.client_id): d.quotas for d in parse_quota_text(target.read_text())}
    truth = json.loads((tmp_path / "truth.json").read_text())["entities_truth"]
    for row in truth:
        value = recommended[(row["user"], row["client_id"])][
            {"produce": "producer_byte_rate", "fetch": "consumer_byte_rate"}[row["kind"]]
        ]
        assert isinstance(value, int) and value >= max(row["p99"] * 1.25 - 1, 1048576)  # -1: the log holds whole bytes
        if row["quota"] and row["throttled_fraction"] > 0.01:
            assert value >= row["quota"] * 1.5  # censored demand: stepped up from the current quota


def _quota_file(path: Path, quotas: dict[tuple, float]) -> Path:
    """A quota file of (kind, user, client_id) -> value, one user+client entity per table."""
    keys = {"produce": "producer_byte_rate", "fetch": "consumer_byte_rate"}
    by_entity: dict[tuple, list[str]] = {}
    for (kind, user, client), value in quotas.items():
        by_entity.setdefault((user, client), []).append(f"{keys[kind]} = {math.ceil(value)}")
    tables = [
        f"[[quota]]\nentity = {{ user = {json.dumps(user)}, client-id = {json.dumps(client)} }}\n" + "\n".join(lines)
        for (user, client), lines in by_entity.items()
    ]
    path.write_text("\n\n".join(tables) + "\n")
    return path


def _whatif_rows(dump: Path, proposed: Path, *extra: str) -> dict[tuple, dict]:
    out = dump.parent / f"{proposed.stem}.json"
    code, _, err = run_main(
        "analyze",
        "whatif",
        str(dump),
        "--proposed",
        str(proposed),
        *extra,
        "--format",
        "json",
        "--output",
        str(out),
        "-q",
    )
    assert code == 0, err
    return {(r["kind"], r["user"], r["client_id"]): r for r in json.loads(out.read_text())["entities"]}


@pytest.fixture(scope="module")
def known_dump(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A generated JmxTool dump and its truth (each entity's demand per sample). One broker: the
    generator splits an entity's demand over the brokers, and the tight quotas should bite."""
    out = tmp_path_factory.mktemp("known") / "dump"
    # 1,000 polls per entity and kind: a throttled poll's minute of throttle-time is 7 polls, under 1 point
    generate(GeneratorSpec(samples=8000, out_dir=str(out), fmt="jmxtool", entities=4, brokers=1))
    truth = [r for r in json.loads((out / "truth.json").read_text())["entities_truth"] if r["quota"]]
    return out, truth


def test_whatif_of_the_quotas_in_force_reproduces_the_observed_throttling(spark, known_dump):
    """Replaying the quotas in force gives each entity the share of samples the broker throttled,
    within 2 points. Charging each 10-s sample as one request at its start put two requests in
    Kafka's 11-s window: 49.5 % of events throttled where the dump said 1 %; counting a sample
    throttled for its own interval only missed the minute a broker's throttle-time remembers."""
    dump, truth = known_dump
    rows = _whatif_rows(dump, dump / "quotas.toml", "--quotas", str(dump / "quotas.toml"))
    assert {t["throttled_fraction"] > 0.3 for t in truth} == {True, False}  # both heavy and light throttling
    replayed = {(t["kind"], t["user"]): rows[(t["kind"], t["user"], t["client_id"])] for t in truth}
    assert {k: r["proposed_quota"] for k, r in replayed.items()} == {(t["kind"], t["user"]): t["quota"] for t in truth}
    off = {
        (t["kind"], t["user"]): (
            round(replayed[(t["kind"], t["user"])]["throttled_fraction"], 3),
            t["throttled_fraction"],
        )
        for t in truth
    }
    assert all(abs(got - want) <= 0.02 for got, want in off.values()), off
    assert all(r["current_throttled_fraction"] == r["throttled_fraction"] for r in replayed.values())


def test_whatif_at_the_highest_demand_throttles_nothing_and_passes_the_demand(spark, known_dump, tmp_path):
    """A proposed quota at an entity's highest demand (on any broker) throttles 0 % and lets the
    whole demand through; one under its lowest demand holds it to the quota."""
    dump, truth = known_dump
    at_max = _quota_file(
        tmp_path / "at-max.toml", {(t["kind"], t["user"], t["client_id"]): t["demand_max"] for t in truth}
    )
    below = {(t["kind"], t["user"], t["client_id"]): t["demand_min"] / 2 for t in truth}
    rows_at_max = _whatif_rows(dump, at_max)
    rows_below = _whatif_rows(dump, _quota_file(tmp_path / "below.toml", below))
    for t in truth:
        key = (t["kind"], t["user"], t["client_id"])
        assert rows_at_max[key]["throttled_fraction"] == 0 and rows_at_max[key]["throttled_events"] == 0
        assert rows_at_max[key]["predicted_rate"] == pytest.approx(t["demand_mean_total"], rel=0.05)
        assert rows_at_max[key]["demand_rate"] == pytest.approx(t["demand_mean_total"], rel=0.05)
        assert rows_below[key]["predicted_rate"] == pytest.approx(math.ceil(below[key]), rel=0.05)  # min(demand, quota)
        assert rows_below[key]["throttled_fraction"] > 0.95


# Named entities only: kconfigs simulate's quota-file reader (commands/resolve.py) takes
# "<default>" for defaults while kconfigs.quotafile takes { default = true }.
PROPOSED = """
[[quota]]
entity = { user = "user-0003" }
producer_byte_rate = 300000

[[quota]]
entity = { client-id = "app-0001" }
consumer_byte_rate = 200000

[[quota]]
entity = { user = "user-0002", client-id = "app-0002" }
producer_byte_rate = 100000
request_percentage = 5.0

[[quota]]
entity = { ip = "10.0.0.1" }
connection_creation_rate = 10
"""


def _trace_with_requests_and_connections(directory: Path) -> Path:
    generate(GeneratorSpec(samples=3000, out_dir=str(directory), fmt="trace", entities=4, interval_ms=1000))
    trace = directory / "trace.csv"
    start = 1_714_557_600_000
    with trace.open("a") as handle:
        for i in range(300):  # 300 connections in 1.5 s; a burst of 10/s × (11 - 1) s = 100 passes (§5)
            handle.write(f"{start + i * 5},,,10.0.0.1,connection,\n")
        for i in range(40):  # 40 ms of thread time every 100 ms = 40 % of a thread, quota 5 %;
            # after the produce/fetch events (simulate wants each client's times in order)
            handle.write(f"{start + 400_000 + i * 100},user-0002,app-0002,,request,40000000\n")
    return trace


def _simulate_totals(path: Path) -> dict:
    totals = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    with path.open() as handle:
        for row in csv.DictReader(handle):
            key = (row["kind"], row["user"] or None, row["client_id"] or None, row["ip"] or None)
            total, throttle_ms = totals[key], int(row["throttle_ms"])
            total[0] += 1
            total[1] += throttle_ms > 0
            total[2] += throttle_ms
            total[3] = max(total[3], throttle_ms)
            total[4] += row["accepted"] == "false"
    return dict(totals)


def test_whatif_in_spark_equals_kconfigs_simulate_on_the_same_trace(spark, tmp_path):
    trace = _trace_with_requests_and_connections(tmp_path)
    proposed = tmp_path / "proposed.toml"
    proposed.write_text(PROPOSED)
    code, _, err = run_main(
        "simulate", "--trace", str(trace), "--quotas", str(proposed), "--out", str(tmp_path / "sim.csv")
    )
    assert code == 0, err
    code, _, err = run_main(
        "analyze",
        "whatif",
        str(trace),
        "--proposed",
        str(proposed),
        "--format",
        "json",
        "--output",
        str(tmp_path / "whatif.json"),
        "--no-progress",
    )
    assert code == 0, err
    expected = _simulate_totals(tmp_path / "sim.csv")
    rows = json.loads((tmp_path / "whatif.json").read_text())["entities"]
    got = {
        (r["kind"], r["user"], r["client_id"], r["ip"]): [
            r["events"],
            r["throttled_events"],
            r["throttle_ms_total"],
            r["throttle_ms_max"],
            r["dropped"],
        ]
        for r in rows
    }
    assert got == expected
    assert got[("connection", None, None, "10.0.0.1")][4] > 0 and got[("request", "user-0002", "app-0002", None)][1] > 0


# ---- outputs: machine formats, quiet Spark, HTML in Chromium ---------------------------------


def test_csv_and_parquet_outputs_carry_the_entity_rows(spark, tmp_path):
    import pandas as pd

    code, out, _ = run_main("analyze", "report", str(FIXTURES / "confluent.prom"), "--format", "csv", "--no-progress")
    assert code == 0 and out.splitlines()[0].startswith("kind,user,client_id,ip,samples,mean,p50,p95,p99,max")
    parquet = tmp_path / "rows.parquet"
    code, _, err = run_main(
        "analyze",
        "report",
        str(FIXTURES / "confluent.prom"),
        "--format",
        "parquet",
        "--output",
        str(parquet),
        "--no-progress",
    )
    frame = pd.read_parquet(parquet)
    assert code == 0 and len(frame) == len(out.splitlines()) - 1 and set(frame["kind"]) == {"produce", "request"}


def test_a_separate_process_runs_spark_quietly():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kconfigs",
            "analyze",
            "report",
            str(FIXTURES / "confluent.prom"),
            "--master",
            "local[1]",
            "--format",
            "json",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no log4j, no JVM notes, no pandas warnings
    assert json.loads(result.stdout)["summary"]["rate_samples"] == 6


def test_html_report_opens_in_headless_chromium_with_its_charts(spark, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium must be installed (.ci/setup-test-env installs it)"
    generate(GeneratorSpec(samples=20000, out_dir=str(tmp_path), fmt="jmxtool", entities=10))
    html = tmp_path / "report.html"
    code, _, err = run_main(
        "analyze",
        "report",
        str(tmp_path),
        "--quotas",
        str(tmp_path / "quotas.toml"),
        "--html",
        str(html),
        "--format",
        "json",
        "--output",
        str(tmp_path / "r.json"),
        "--no-progress",
    )
    assert code == 0, err
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1400,2400",
    ]
    png = tmp_path / "report.png"
    shot = subprocess.run([chromium, *flags, f"--screenshot={png}", html.as_uri()], capture_output=True, timeout=120)
    dom = subprocess.run([chromium, *flags, "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 60_000  # a blank page is a few KB; charts and tables are not
    assert dom.stdout.count('class="chart line-chart"') == 6
    assert dom.stdout.count('class="quota-line"') >= 1 and 'class="chart heat-map"' in dom.stdout
    assert dom.stdout.count('class="heat-cell"') > 100
    assert 'class="heat-scale"' in dom.stdout and "…" not in dom.stdout  # a colour scale; no label cut short
    assert _rendering_faults(chromium, flags, html) == []
    if os.environ.get("KCONFIGS_KEEP_SCREENSHOT"):
        shutil.copy(png, os.environ["KCONFIGS_KEEP_SCREENSHOT"])


#: run in Chromium on a copy of the report: every chart text inside its SVG box, axes dated,
#: each quota label clear of its own line (the report itself stays script-free)
_LAYOUT_PROBE = """<script>
const faults = [];
for (const svg of document.querySelectorAll("svg.chart")) {
  const box = svg.viewBox.baseVal;
  for (const text of svg.querySelectorAll("text")) {
    const b = text.getBBox();
    if (b.x < -0.5 || b.y < -0.5 || b.x + b.width > box.width + 0.5 || b.y + b.height > box.height + 0.5)
      faults.push("clipped: " + text.textContent);
  }
  for (const text of svg.querySelectorAll("text.x-label"))
    if (!/^\\d{4}-\\d{2}-\\d{2} /.test(text.textContent)) faults.push("undated: " + text.textContent);
  const line = svg.querySelector(".quota-line"), label = svg.querySelector(".quota-label");
  if (line && label) {
    const y = Number(line.getAttribute("y1")), b = label.getBBox();
    if (b.y < y + 1 && b.y + b.height > y - 1) faults.push("quota label over its line: " + label.textContent);
  }
}
document.body.setAttribute("data-faults", JSON.stringify(faults));
</script>"""


def _rendering_faults(chromium: str, flags: list[str], html: Path) -> list[str]:
    probe = html.with_name("probe.html")
    probe.write_text(html.read_text().replace("</body>", _LAYOUT_PROBE + "</body>"))
    dom = subprocess.run([chromium, *flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    marker = 'data-faults="'
    assert marker in dom.stdout, dom.stderr[-500:]
    return json.loads(dom.stdout.split(marker, 1)[1].split('"', 1)[0].replace("&quot;", '"'))


def test_quotas_come_from_a_kconfigs_store(spark, tmp_path):
    store = str(tmp_path / "quotas.db")
    assert run_main("init", "--store", store)[0] == 0
    code, _, err = run_main(
        "alter", "--store", store, "--user", "alice", "--client-id", "app-1", "--set", "producer_byte_rate=2097152"
    )
    assert code == 0, err
    code, out, err = run_main(
        "analyze",
        "report",
        str(FIXTURES / "gateway-usage.jsonl"),
        "--store",
        store,
        "--format",
        "json",
        "--no-progress",
    )
    assert code == 0, err
    rows = {(r["kind"], r["user"]): r for r in json.loads(out)["entities"]}
    produce = rows[("produce", "alice")]
    assert produce["quota"] == 2097152 and produce["quota_level"] == "1 user+client"
    assert produce["util_p99_pct"] == pytest.approx(3145728 / 2097152 * 100)
    assert rows[("request", "alice")]["quota"] is None
