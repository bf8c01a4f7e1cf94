"""Benchmark ``kconfigs analyze report`` on local[2] against DuckDB over the same JmxTool dumps.

For each size: generate a dump once (``analyze generate --format jmxtool --entities 500``, kept
under ``--workdir`` for reruns), then run, alternating and each in its own process, (1)
``kconfigs analyze report DUMP --quotas DUMP/quotas.toml --format json`` and (2) a DuckDB script
that computes the same statistics: per broker and series, exact nearest-rank p50/p95/p99 (rank
⌈q·n⌉), max and mean of the byte rate (NaN = no sample, as the report reads it), and the
throttle-time counts; then, as the report rolls them up, the worst broker's value per entity and
the throttled fraction over every broker. Wall time and peak RSS of the whole process tree
(Python + Spark's JVM) are recorded (bench_analyze.measure), and the largest relative difference
between the two tools' numbers per statistic.

    python benchmarks/bench_analyze_peer.py --sizes 1e6,1e7[,1e8] [--rounds 2] \
        [--workdir /work/bench-data] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import machine, write_section  # noqa: E402
from bench_analyze import _pandas_key, _spark_rows, max_relative_difference, measure, tree_rss_bytes  # noqa: E402,F401

ENTITIES = 500
BROKERS = 2
STATS = ("mean", "p50", "p95", "p99", "max", "throttled_fraction")

# The peer: one SQL query per file unpivots the wide rows; the statistics are exact (sorted list
# per group, value of rank ceil(q*n)), as the generator's truth and cell_stats define them.
DUCKDB_REPORT = r"""
import json, sys, glob
import duckdb
con = duckdb.connect()
con.execute("SET threads = 2")
con.execute("SET preserve_insertion_order = false")
con.execute("SET enable_progress_bar = false")
files = sorted(glob.glob(sys.argv[1] + "/*.jmx.csv"))
cells = " UNION ALL ".join(
    f'''SELECT '{path}' AS broker, key, value FROM (UNPIVOT (SELECT * FROM read_csv('{path}', header = true,
        auto_type_candidates = ['BIGINT', 'DOUBLE'], nullstr = '', sample_size = 20))
        ON COLUMNS(* EXCLUDE ("time")) INTO NAME key VALUE value)'''
    for path in files
)
rank = "list_sort(list(rate))[greatest(ceil({q} * count(rate)), 1)::BIGINT]"
rows = con.execute(f'''
WITH cells AS ({cells}),
per_key AS (
  SELECT broker, key,
    avg(rate) AS mean, {rank.format(q=0.5)} AS p50, {rank.format(q=0.95)} AS p95, {rank.format(q=0.99)} AS p99,
    max(rate) AS max, count(throttle) AS throttle_samples, count(throttle) FILTER (WHERE throttle > 0) AS throttled
  FROM (SELECT broker, key,
          CASE WHEN suffix(key, ':byte-rate') AND NOT isnan(value) THEN value END AS rate,
          CASE WHEN suffix(key, ':throttle-time') THEN CASE WHEN isnan(value) THEN 0.0 ELSE value END END AS throttle
        FROM cells)
  GROUP BY broker, key)
SELECT regexp_extract(key, '^(.*):[^:]*$', 1) AS entity, max(mean), max(p50), max(p95), max(p99), max(max),
       CASE WHEN sum(throttle_samples) > 0 THEN sum(throttled) / sum(throttle_samples) ELSE 0.0 END
FROM per_key WHERE suffix(key, ':byte-rate') OR suffix(key, ':throttle-time') GROUP BY entity
''').fetchall()
names = ("entity", "mean", "p50", "p95", "p99", "max", "throttled_fraction")
json.dump([dict(zip(names, row)) for row in rows], open(sys.argv[2], "w"))
print(len(rows))
"""


def _duckdb_rows(path: Path) -> dict:
    return {_pandas_key(r["entity"]): r for r in json.loads(path.read_text())}


def generate_dump(samples: int, out: Path) -> None:
    if (out / "truth.json").exists():
        return
    import shutil
    import subprocess

    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "kconfigs", "analyze", "generate", "--format", "jmxtool"]
    command += ["--samples", str(samples), "--entities", str(ENTITIES), "--brokers", str(BROKERS), "--out", str(out)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def run_size(samples: int, workdir: Path, rounds: int, timeout_s: float, commands: tuple[str, ...]) -> dict:
    out = workdir / f"jmx-{samples}"
    generate_dump(samples, out)
    size_bytes = sum(p.stat().st_size for p in out.glob("*.jmx.csv"))
    result = {"samples": samples, "bytes": size_bytes, "runs": {"duckdb": []}, "diff": {}}
    peer_json = workdir / f"duckdb-{samples}.json"
    for _ in range(rounds):
        for command in commands:
            result["runs"].setdefault(command, [])
            spark_json = workdir / f"kconfigs-{command}-{samples}.json"
            argv = [
                sys.executable,
                "-m",
                "kconfigs",
                "analyze",
                command,
                str(out),
                "--quotas",
                str(out / "quotas.toml"),
            ]
            argv += ["--master", "local[2]", "--format", "json", "--output", str(spark_json), "--no-progress"]
            result["runs"][command].append(measure(argv, timeout_s))
        result["runs"]["duckdb"].append(
            measure([sys.executable, "-c", DUCKDB_REPORT, str(out), str(peer_json)], timeout_s)
        )
    report_ok = any(r["status"] == 0 for r in result["runs"].get("report", []))
    if report_ok and any(r["status"] == 0 for r in result["runs"]["duckdb"]):
        spark_json = workdir / f"kconfigs-report-{samples}.json"
        result["diff"] = max_relative_difference(_spark_rows(spark_json), _duckdb_rows(peer_json), STATS)
    return result


def _best(runs: list[dict]) -> dict | None:
    ok = [r for r in runs if r["status"] == 0]
    return min(ok, key=lambda r: r["wall_s"]) if ok else None


def _runs_text(runs: list[dict]) -> str:
    return ", ".join(
        f"{r['wall_s']:.1f}" if r["status"] == 0 else ("killed" if r["status"] is None else "failed") for r in runs
    )


def render(results: list[dict], command: str, load_before: tuple, load_after: tuple) -> str:
    import duckdb
    import pyspark

    lines = [
        "## `kconfigs analyze` on Spark local[2] vs DuckDB (same dumps, same run, alternating)",
        "",
        f"Command: `{command}` on {machine()}, Python {platform.python_version()}, PySpark {pyspark.__version__}",
        f"local[2] (CLI defaults), DuckDB {duckdb.__version__} with 2 threads. Load average (1 min) {load_before[0]:.1f}",
        f"before / {load_after[0]:.1f} after (the machine is shared: compare tools within a row; each row's",
        "tools ran alternating). Input: `kconfigs analyze generate --format jmxtool --entities 500 --brokers 2`.",
        "Wall time includes process and JVM start; RSS is the whole process tree, sampled every 0.2 s.",
        "DuckDB computes exact nearest-rank percentiles per (broker, series) and the report's roll-up",
        "(worst broker; throttled fraction over all brokers); `whatif` and `recommend` are timed against",
        "the same DuckDB run (they compute more than it does).",
        "",
        "| samples | dump MB | tool | runs s | best s | peak RSS MB | best / DuckDB best |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        peer = _best(r["runs"]["duckdb"])
        for tool, runs in r["runs"].items():
            best = _best(runs)
            ratio = f"{best['wall_s'] / peer['wall_s']:.2f}" if best and peer else "–"
            peak = max(x["peak_rss"] for x in runs) / 2**20
            label = "DuckDB" if tool == "duckdb" else f"kconfigs analyze {tool}"
            best_s = f"{best['wall_s']:.1f}" if best else "–"
            lines.append(
                f"| {r['samples']:.0e} | {r['bytes'] / 2**20:,.0f} | {label} | {_runs_text(runs)} | {best_s} "
                f"| {peak:,.0f} | {ratio} |"
            )
    lines += [
        "",
        "Largest relative difference between `analyze report` and DuckDB's exact statistics, over all entities:",
        "",
        "| samples | " + " | ".join(STATS) + " |",
        "|---" * (len(STATS) + 1) + "|",
    ]
    for r in results:
        diff = r["diff"]
        if not diff:
            lines.append(f"| {r['samples']:.0e} | not compared (a run failed) |" + "|" * (len(STATS) - 1))
        elif "entities_differ" in diff:
            lines.append(f"| {r['samples']:.0e} | entity sets differ in {diff['entities_differ']} |")
        else:
            lines.append(f"| {r['samples']:.0e} | " + " | ".join(f"{diff[n]:.1e}" for n in STATS) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e6,1e7", help="comma-separated sample counts")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "bench-analyze-peer"))
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of each tool per size")
    parser.add_argument("--commands", default="report", help="kconfigs analyze commands to time (report,whatif,...)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    commands = tuple(c for c in args.commands.split(",") if c)
    results = []
    for size in args.sizes.split(","):
        result = run_size(int(float(size)), workdir, args.rounds, args.timeout, commands)
        results.append(result)
        brief = {
            t: [(round(r["wall_s"], 1), r["peak_rss"] >> 20, r["status"]) for r in rs]
            for t, rs in result["runs"].items()
        }
        print(result["samples"], brief, result["diff"], flush=True)
        for runs in result["runs"].values():
            for r in runs:
                if r["status"] != 0:
                    print(r["stderr"][-2000:], file=sys.stderr)
    text = render(
        results, "python benchmarks/bench_analyze_peer.py " + " ".join(sys.argv[1:]), load_before, os.getloadavg()
    )
    print(text)
    if args.write:
        write_section("analyze-peer", text)


if __name__ == "__main__":
    main()
