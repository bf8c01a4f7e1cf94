"""``kconfigs analyze`` where operators' data lives: small-run overhead, the Prometheus source, a cluster.

1. Small runs: a report over a 4,000-sample JmxTool dump vs a bare Spark session start (the same
   session options), ``--repeat`` pairs run back to back, with the class-data archive of
   ``kconfigs analyze prepare`` (made first, in the work directory) on both sides, then without
   it on both sides; medians and the median of the pairs' differences.
2. Prometheus: a real ``prometheus`` serving a TSDB backfilled with ``promtool tsdb create-blocks-from
   openmetrics`` (``--series`` quota series, one sample a second for ``--hours``); samples/s read
   through query_range by kconfigs' reader (kconfigs_analysis.prometheus_api, chunked), no Spark.
3. A standalone cluster (master + 2 one-core workers from PySpark's jars, executors without
   kconfigs) vs local[2] on a ``--cluster-samples`` JmxTool dump, one run each.

    python benchmarks/bench_analyze_sources.py [--workdir /tmp/bench-sources] [--write]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _results import machine, write_section  # noqa: E402

PY = sys.executable


def _timed(argv: list[str], env: dict | None = None) -> float:
    started = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=3600)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {result.stderr[-2000:]}")
    return time.monotonic() - started


def _generate(out: Path, samples: int, entities: int) -> Path:
    if not (out / "truth.json").exists():
        _timed(
            [
                PY,
                "-m",
                "kconfigs",
                "analyze",
                "generate",
                "--samples",
                str(samples),
                "--entities",
                str(entities),
                "--out",
                str(out),
            ]
        )
    return out


def _home_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_")}
    return {**env, "KCONFIGS_HOME": str(home)}


def _pairs(dump: Path, env: dict, repeat: int) -> list[tuple[float, float, float]]:
    """(bare s, report s, 1-min load) per pair, each pair run back to back."""
    bare = [
        PY,
        "-c",
        "from kconfigs_analysis.session import SessionOptions, spark_session\n"
        "with spark_session(SessionOptions(master='local[2]', small_input=True)):\n    pass\n",
    ]
    report = [
        PY,
        "-m",
        "kconfigs",
        "analyze",
        "report",
        str(dump),
        "--master",
        "local[2]",
        "--format",
        "json",
        "--quiet",
    ]
    pairs = []
    for _ in range(repeat):
        load = os.getloadavg()[0]
        pairs.append((_timed(bare, env), _timed(report, env), load))
    return pairs


def _pairs_row(label: str, pairs: list[tuple[float, float, float]]) -> str:
    b = statistics.median(p[0] for p in pairs)
    r = statistics.median(p[1] for p in pairs)
    over = statistics.median(p[1] - p[0] for p in pairs)
    return f"| {label} | {r:.1f} | {b:.1f} | {over:+.1f} |\n"


def small_runs(work: Path, repeat: int) -> str:
    """Pairs (bare session, report) with the class-data archive of ``analyze prepare`` on both
    sides, then pairs without it (an empty kconfigs home) on both sides."""
    dump = _generate(work / "small", 4000, 10)
    prepared, empty = work / "home-prepared", work / "home-empty"
    prepare_s = _timed([PY, "-m", "kconfigs", "analyze", "prepare", "--quiet"], _home_env(prepared))
    with_archive = _pairs(dump, _home_env(prepared), repeat)
    without = _pairs(dump, _home_env(empty), repeat)

    def runs(pairs):
        return "; ".join(f"{b:.1f} / {r:.1f} (load {load:.1f})" for b, r, load in pairs)

    return (
        "| run (4,000 samples, 2 files, local[2]) | report s (median) | bare session start+stop s (median) "
        "| overhead s (median of pairs) |\n|---|---|---|---|\n"
        + _pairs_row("small report, archive of `analyze prepare` on both sides", with_archive)
        + _pairs_row("small report, no archive on either side", without)
        + f"\n`kconfigs analyze prepare` took {prepare_s:.1f} s. Pairs, bare / report s: with the archive "
        f"{runs(with_archive)}; without {runs(without)}.\n"
    )


def _openmetrics(path: Path, series: int, start_s: int, seconds: int) -> int:
    with path.open("w") as out:
        out.write("# TYPE kafka_server_produce_byte_rate gauge\n")
        for n in range(series):
            labels = f'client_id="app-{n}",user="user-{n % 10}",instance="broker-{n % 3}:7071",job="kafka"'
            for t in range(start_s, start_s + seconds):
                out.write(f"kafka_server_produce_byte_rate{{{labels}}} {1000 + (t * 7 + n) % 5000} {t}\n")
        out.write("# EOF\n")
    return series * seconds


def prometheus_source(work: Path, series: int, hours: float) -> str:
    from harness.prometheus import PrometheusServer
    from kconfigs_analysis.prometheus_api import PrometheusQuery, fetch_to_file
    from kconfigs_analysis.prometheus_time import chunks

    seconds = int(hours * 3600)
    end_s = int(time.time()) - 600
    start_s = end_s - seconds
    server = PrometheusServer(work / "prom", {})
    source = work / "prom" / "backfill.om"
    written = _openmetrics(source, series, start_s, seconds)
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(server.storage)],
        check=True,
        capture_output=True,
        timeout=3600,
    )
    server.start()
    try:
        query = PrometheusQuery(server.url, start_s, end_s - 1, step_s=1.0, timeout_s=120)
        with tempfile.TemporaryDirectory() as scratch:
            started = time.monotonic()
            fetched = fetch_to_file(query, scratch)
            elapsed = time.monotonic() - started
    finally:
        server.stop()
    return (
        "| source | samples read | seconds | samples/s |\n|---|---|---|---|\n"
        f"| query_range from a local Prometheus ({series} series × {seconds:,} s at step 1 s, "
        f"{len(chunks(start_s, end_s - 1, 1.0))} queries) "
        f"| {fetched.samples:,} samples (backfilled {written:,}) | {elapsed:.1f} s | {fetched.samples / elapsed:,.0f} samples/s |\n"
    )


def cluster_vs_local(work: Path, samples: int) -> str:
    from harness.spark_cluster import StandaloneCluster, executor_python

    dump = _generate(work / f"dump-{samples}", samples, 500)
    report = [PY, "-m", "kconfigs", "analyze", "report", str(dump), "--format", "json", "--quiet"]
    local_s = _timed(report + ["--master", "local[2]"])
    cluster = StandaloneCluster(work / "cluster", memory="1500m").start()
    try:
        env = {**os.environ, "PYSPARK_PYTHON": executor_python(work / "executor-venv"), "SPARK_LOCAL_IP": "127.0.0.1"}
        cluster_s = _timed(report + ["--master", cluster.master_url], env)
    finally:
        cluster.stop()
    return (
        "| run | local[2] s | standalone (2 workers × 1 core) s | cluster/local |\n|---|---|---|---|\n"
        f"| report on {samples:.0e} samples (JmxTool, 500 entities × 2 kinds × 2 brokers) | {local_s:.1f} "
        f"| {cluster_s:.1f} | {cluster_s / local_s:.2f} |\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", default="/tmp/bench-analyze-sources")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--series", type=int, default=100)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--cluster-samples", type=float, default=1e7)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    rows = [
        small_runs(work, args.repeat),
        prometheus_source(work, args.series, args.hours),
        cluster_vs_local(work, int(args.cluster_samples)),
    ]
    body = (
        f"## `kconfigs analyze`: small runs, Prometheus source, standalone cluster\n\n"
        f"Command: `python benchmarks/bench_analyze_sources.py {' '.join(sys.argv[1:])}` on {machine()} "
        f"(shared with other jobs), Python {platform.python_version()}. Load average (1 min) "
        f"{load_before:.1f} before / {os.getloadavg()[0]:.1f} after.\n\n" + "\n".join(rows)
    )
    print(body)
    if args.write:
        write_section("analyze-sources", body)


if __name__ == "__main__":
    main()
