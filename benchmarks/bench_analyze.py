"""Benchmark ``kconfigs analyze report`` on local[2] against a single-process pandas run.

For each size: generate a JmxTool dump (``analyze generate``), then run, each in its own process,
(1) ``kconfigs analyze report DIR --master local[2] --format json`` and (2) a pandas script that
computes the same per-entity numbers (per-broker nearest-rank p50/p95/p99, max, throttled
fraction; worst broker). Wall time and peak RSS of the whole process tree (Python + JVM,
sampled from /proc every 0.2 s) are recorded; a pandas run that fails (e.g. out of memory) or
exceeds its time limit is reported as such.

Spark's and pandas' report numbers are compared (largest relative difference per statistic);
pandas is not run above ``--pandas-max`` (its memory grows linearly: 7.2 GB at 1e7).

    python benchmarks/bench_analyze.py --sizes 1e6,1e7,1e8 [--workdir /tmp/bench-analyze] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import machine, write_section  # noqa: E402

ENTITIES = 500
BROKERS = 2
DRIVER_MEMORY = "2g"  # the CLI default

PANDAS_REPORT = r"""
import math, sys, glob, urllib.parse
import numpy as np, pandas as pd
frames = []
for path in sorted(glob.glob(sys.argv[1] + "/broker-*.jmx.csv")):
    with open(path) as handle:
        keys = handle.readline().strip()[1:-1].split('","')
    frame = pd.read_csv(path, skiprows=1, header=None, names=keys, na_values=["NaN"], engine="c")
    long = frame.melt(id_vars=["time"], var_name="key", value_name="value")
    long["key"] = long["key"].astype("category")
    long["broker"] = path
    frames.append(long)
data = pd.concat(frames, ignore_index=True)
parts = data["key"].cat.categories.to_series().str.rsplit(":", n=1, expand=True)
attribute = data["key"].cat.codes.map(dict(enumerate(parts[1])))
entity = data["key"].cat.codes.map(dict(enumerate(parts[0])))
data["entity"], data["attribute"] = entity.values, attribute.values
rates = data[data["attribute"] == "byte-rate"]
def nearest_rank(values, p):
    ordered = np.sort(values.to_numpy())
    return ordered[max(math.ceil(p * len(ordered)) - 1, 0)]
per_broker = rates.groupby(["entity", "broker"])["value"].agg(
    p50=lambda v: nearest_rank(v, .5), p95=lambda v: nearest_rank(v, .95), p99=lambda v: nearest_rank(v, .99), max="max")
worst = per_broker.groupby("entity").max()
throttle = data[data["attribute"] == "throttle-time"]
throttled = (throttle["value"].fillna(0) > 0).groupby(throttle["entity"]).mean()
result = worst.join(throttled.rename("throttled_fraction"))
result.reset_index().to_json(sys.argv[2], orient="records")
print(len(result))
"""
STATS = ("p50", "p95", "p99", "max", "throttled_fraction")


def tree_rss_bytes(root_pid: int) -> int:
    """Sum of VmRSS over ``root_pid`` and its descendants (via /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields["PPid"]), []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def measure(command: list[str], timeout_s: float) -> dict:
    """Run ``command``; wall seconds, peak tree RSS, exit status (None = timed out)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak, load_max = 0, 0.0
    while process.poll() is None:
        peak = max(peak, tree_rss_bytes(process.pid))
        load_max = max(load_max, os.getloadavg()[0])
        if time.perf_counter() - start > timeout_s:
            process.kill()
            process.wait()
            return {"wall_s": timeout_s, "peak_rss": peak, "status": None, "stderr": "timeout", "load_max": load_max}
        time.sleep(0.2)
    stderr = process.stderr.read()
    return {
        "wall_s": time.perf_counter() - start,
        "peak_rss": peak,
        "status": process.returncode,
        "stderr": stderr,
        "load_max": load_max,
    }


def _pandas_key(object_name: str) -> tuple:
    """``kafka.server:type=Fetch,user=CN%3Dx,client-id=app`` -> (kind, decoded user, client)."""
    tags = dict(p.split("=", 1) for p in object_name.split(":", 1)[1].split(","))
    user = urllib.parse.unquote(tags["user"]) if "user" in tags else None
    return tags["type"].lower(), user, tags.get("client-id")


def _spark_rows(path: Path) -> dict:
    return {(r["kind"], r["user"], r["client_id"]): r for r in json.loads(path.read_text())["entities"]}


def _pandas_rows(path: Path) -> dict:
    return {_pandas_key(r["entity"]): r for r in json.loads(path.read_text())}


def _truth_rows(dump_dir: Path) -> dict:
    """The generator's exact statistics (from the values before they were written as text)."""
    return {
        (r["kind"], r["user"], r["client_id"]): r
        for r in json.loads((dump_dir / "truth.json").read_text())["entities_truth"]
    }


def max_relative_difference(got: dict, want: dict, stats: tuple[str, ...] = STATS) -> dict:
    """Per statistic, the largest |got - want| / |want| over the entities (a statistic one tool
    leaves out, None, differs infinitely unless both leave it out)."""
    if set(got) != set(want):
        return {"entities_differ": len(set(got) ^ set(want))}
    worst = {}
    for key, expected in want.items():
        for name in stats:
            value, ref = got[key][name], expected[name]
            if value is None or ref is None:
                worst[name] = max(worst.get(name, 0.0), 0.0 if value == ref else float("inf"))
                continue
            worst[name] = max(worst.get(name, 0.0), abs(value - ref) / abs(ref) if ref else abs(value))
    return worst


def generate_dump(samples: int, out: Path) -> float | None:
    """Generate the dump once (kept for reruns); seconds taken, None when it already existed."""
    if (out / "truth.json").exists():
        return None
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "kconfigs",
            "analyze",
            "generate",
            "--format",
            "jmxtool",
            "--samples",
            str(samples),
            "--entities",
            str(ENTITIES),
            "--brokers",
            str(BROKERS),
            "--out",
            str(out),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def run_size(samples: int, workdir: Path, timeout_s: float, pandas_max: int) -> dict:
    out = workdir / f"jmx-{samples:.0e}"
    generate_s = generate_dump(samples, out)
    size_bytes = sum(p.stat().st_size for p in out.glob("*.jmx.csv"))
    spark_json, pandas_json = workdir / f"spark-{samples:.0e}.json", workdir / f"pandas-{samples:.0e}.json"
    spark = measure(
        [
            sys.executable,
            "-m",
            "kconfigs",
            "analyze",
            "report",
            str(out),
            "--quotas",
            str(out / "quotas.toml"),
            "--master",
            "local[2]",
            "--driver-memory",
            DRIVER_MEMORY,
            "--format",
            "json",
            "--output",
            str(spark_json),
            "--no-progress",
        ],
        timeout_s,
    )
    result = {"samples": samples, "bytes": size_bytes, "generate_s": generate_s, "spark": spark, "pandas": None}
    if spark["status"] == 0:
        result["vs_truth"] = max_relative_difference(_spark_rows(spark_json), _truth_rows(out))
    if samples <= pandas_max:
        result["pandas"] = measure([sys.executable, "-c", PANDAS_REPORT, str(out), str(pandas_json)], timeout_s)
        if spark["status"] == 0 and result["pandas"]["status"] == 0:
            result["vs_pandas"] = max_relative_difference(_spark_rows(spark_json), _pandas_rows(pandas_json))
    return result


def _cell(result: dict | None, samples: int) -> tuple[str, str, str]:
    if result is None:
        return "not run", "–", "–"
    if result["status"] is None:
        return f"> {result['wall_s']:.0f} (killed)", "–", f"{result['peak_rss'] / 2**20:,.0f}"
    if result["status"] != 0:
        reason = (result["stderr"].strip().splitlines() or ["failed"])[-1][:60]
        return f"failed: {reason}", "–", f"{result['peak_rss'] / 2**20:,.0f}"
    return f"{result['wall_s']:.1f}", f"{samples / result['wall_s']:,.0f}", f"{result['peak_rss'] / 2**20:,.0f}"


def _ok(result: dict | None) -> bool:
    return result is not None and result["status"] == 0


def _table_rows(results: list[dict]) -> list[str]:
    lines = []
    for r in results:
        spark, pandas = _cell(r["spark"], r["samples"]), _cell(r["pandas"], r["samples"])
        ratio = f"{r['pandas']['wall_s'] / r['spark']['wall_s']:.2f}" if _ok(r["spark"]) and _ok(r["pandas"]) else "–"
        per_million = f"{r['spark']['wall_s'] / (r['samples'] / 1e6):.2f}" if _ok(r["spark"]) else "–"
        load = f"{r['spark']['load_max']:.1f}" if r["spark"].get("load_max") is not None else "–"
        lines.append(
            f"| {r['samples']:.0e} | {r['bytes'] / 2**20:,.0f} | {' | '.join(spark)} | {per_million} | {load} "
            f"| {' | '.join(pandas)} | {ratio} |"
        )
    return lines


def _accuracy_rows(results: list[dict]) -> list[str]:
    lines = []
    for r in results:
        for name, label in (("vs_pandas", "pandas"), ("vs_truth", "generator truth")):
            diff = r.get(name)
            if diff is None:
                continue
            if "entities_differ" in diff:
                lines.append(
                    f"| {r['samples']:.0e} | {label} | entity sets differ in {diff['entities_differ']} entities |||||"
                )
            else:
                lines.append(f"| {r['samples']:.0e} | {label} | " + " | ".join(f"{diff[n]:.1e}" for n in STATS) + " |")
    return lines


def _target_line(results: list[dict]) -> str:
    big = [r for r in results if r["samples"] >= 10**8]
    if not big:
        return "Target (1e8 samples in ≤ 600 s with peak RSS ≤ 4,096 MB): 1e8 not in this run."
    r = big[0]
    met = _ok(r["spark"]) and r["spark"]["wall_s"] <= 600 and r["spark"]["peak_rss"] <= 4 * 2**30
    return (
        f"Target (1e8 samples in ≤ 600 s with peak RSS ≤ 4,096 MB): **{'met' if met else 'not met'}** — "
        f"{_cell(r['spark'], r['samples'])[0]} s, {r['spark']['peak_rss'] / 2**20:,.0f} MB."
    )


def render(results: list[dict], command: str, load_before: tuple, load_after: tuple) -> str:
    import pyspark

    from kconfigs_analysis.transforms import PERCENTILE_ACCURACY

    generated = ", ".join(
        f"{r['samples']:.0e} in {r['generate_s']:.0f} s" for r in results if r["generate_s"] is not None
    )
    lines = [
        "## `kconfigs analyze report` on Spark local[2] vs single-process pandas",
        "",
        f"Command: `{command}` on {machine()}, Python {platform.python_version()},",
        f"Java 17, PySpark {pyspark.__version__} local[2] with {DRIVER_MEMORY} driver memory. Load average (1 min)",
        f"{load_before[0]:.1f} before / {load_after[0]:.1f} after; the highest seen during each Spark run is in the",
        "table (the 2-core machine is shared with other jobs: compare the two tools within a row).",
        f"Input: JmxTool CSV dumps from `kconfigs analyze generate` ({ENTITIES} user+client entities ×",
        f"produce/fetch × {BROKERS} brokers; one sample = one entity's byte-rate *and* throttle-time at one",
        "poll, so 1e8 samples are 2e8 CSV cells)" + (f"; generated in this run: {generated}." if generated else "."),
        "Both tools compute the same report numbers (per-broker p50/p95/p99/max, worst broker, throttled",
        "fraction); Spark also resolves quotas and builds the chart series. Wall time includes process and",
        "JVM start; RSS is the whole process tree (Python + JVM), sampled every 0.2 s.",
        "",
        "| samples | dump MB | Spark s | Spark samples/s | Spark peak RSS MB | Spark s per 1e6 | load max | "
        "pandas s | pandas samples/s | pandas peak RSS MB | pandas/Spark time |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *_table_rows(results),
        "",
        _target_line(results),
        "",
    ]
    accuracy = _accuracy_rows(results)
    if accuracy:
        lines += [
            "Spark's report against pandas' and against the generator's exact statistics (truth.json, from",
            "the values before they were written with one decimal): largest relative difference over all",
            f"entities. Spark's percentiles are `percentile_approx` with accuracy {PERCENTILE_ACCURACY:,} (rank",
            f"error ≤ n/{PERCENTILE_ACCURACY:,} per broker series); pandas' and the truth are exact nearest-rank.",
            "",
            "| samples | against | " + " | ".join(STATS) + " |",
            "|---" * (len(STATS) + 2) + "|",
            *accuracy,
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e6,1e7", help="comma-separated sample counts")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "bench-analyze"))
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per tool and size")
    parser.add_argument(
        "--pandas-max",
        type=float,
        default=1e7,
        help="largest size pandas runs at (it needed 7.2 GB at 1e7; 1e8 would need ~70 GB)",
    )
    parser.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    results = []
    for size in args.sizes.split(","):
        result = run_size(int(float(size)), workdir, args.timeout, int(args.pandas_max))
        results.append(result)
        print(
            {
                k: (v if not isinstance(v, dict) else {x: y for x, y in v.items() if x != "stderr"})
                for k, v in result.items()
            },
            flush=True,
        )
    command = "python benchmarks/bench_analyze.py " + " ".join(sys.argv[1:])
    text = render(results, command, load_before, os.getloadavg())
    print(text)
    if args.write:
        write_section("analyze", text)


if __name__ == "__main__":
    main()
