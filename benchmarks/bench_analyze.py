"""Benchmark ``kconfigs analyze report`` on local[2] against a single-process pandas run.

For each size: generate a JmxTool dump (``analyze generate``), then run, each in its own process,
(1) ``kconfigs analyze report DIR --master local[2] --format json`` and (2) a pandas script that
computes the same per-entity numbers (per-broker nearest-rank p50/p95/p99, max, throttled
fraction; worst broker). Wall time and peak RSS of the whole process tree (Python + JVM,
sampled from /proc every 0.2 s) are recorded; a pandas run that fails (e.g. out of memory) or
exceeds its time limit is reported as such.

    python benchmarks/bench_analyze.py --sizes 1e6,1e7 [--workdir /tmp/bench-analyze] [--write]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_section  # noqa: E402

ENTITIES = 500
BROKERS = 2

PANDAS_REPORT = r'''
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
print(len(result))
'''


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
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss_bytes(process.pid))
        if time.perf_counter() - start > timeout_s:
            process.kill()
            process.wait()
            return {"wall_s": timeout_s, "peak_rss": peak, "status": None, "stderr": "timeout"}
        time.sleep(0.2)
    stderr = process.stderr.read()
    return {"wall_s": time.perf_counter() - start, "peak_rss": peak, "status": process.returncode, "stderr": stderr}


def run_size(samples: int, workdir: Path, timeout_s: float) -> dict:
    out = workdir / f"jmx-{samples:.0e}"
    if not (out / "truth.json").exists():
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "kconfigs", "analyze", "generate", "--format", "jmxtool", "--samples",
                        str(samples), "--entities", str(ENTITIES), "--brokers", str(BROKERS), "--out", str(out)],
                       check=True, stdout=subprocess.DEVNULL)
    size_bytes = sum(p.stat().st_size for p in out.glob("*.jmx.csv"))
    spark = measure([sys.executable, "-m", "kconfigs", "analyze", "report", str(out), "--quotas", str(out / "quotas.toml"),
                     "--master", "local[2]", "--driver-memory", "3g", "--format", "json", "--output", os.devnull,
                     "--no-progress"], timeout_s)
    pandas = measure([sys.executable, "-c", PANDAS_REPORT, str(out)], timeout_s)
    return {"samples": samples, "bytes": size_bytes, "spark": spark, "pandas": pandas}


def _cell(result: dict, samples: int) -> tuple[str, str, str]:
    if result["status"] is None:
        return f"> {result['wall_s']:.0f} (killed)", "–", f"{result['peak_rss'] / 2**20:,.0f}"
    if result["status"] != 0:
        reason = (result["stderr"].strip().splitlines() or ["failed"])[-1][:60]
        return f"failed: {reason}", "–", f"{result['peak_rss'] / 2**20:,.0f}"
    return f"{result['wall_s']:.1f}", f"{samples / result['wall_s']:,.0f}", f"{result['peak_rss'] / 2**20:,.0f}"


def render(results: list[dict], command: str, load_before: tuple, load_after: tuple) -> str:
    lines = [
        "## `kconfigs analyze report` on Spark local[2] vs single-process pandas (issue 5)", "",
        f"Command: `{command}` on {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},",
        f"Java 17, PySpark local[2] with 3 GB driver memory. Load average {load_before[0]:.1f} before /",
        f"{load_after[0]:.1f} after (the 2-core machine is shared with other jobs: compare the two tools",
        "within a row, not rows across runs). Input: JmxTool CSV dumps from `kconfigs analyze generate`",
        f"({ENTITIES} user+client entities × produce/fetch × {BROKERS} brokers; one sample = one entity's",
        "byte-rate *and* throttle-time at one poll). Both tools compute the same report numbers",
        "(per-broker p50/p95/p99/max, worst broker, throttled fraction); Spark also resolves quotas and",
        "builds the chart series. Wall time includes process and JVM start; RSS is the whole process tree.", "",
        "| samples | dump MB | Spark s | Spark samples/s | Spark peak RSS MB | pandas s | pandas samples/s | pandas peak RSS MB | pandas/Spark time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        spark, pandas = _cell(r["spark"], r["samples"]), _cell(r["pandas"], r["samples"])
        both_ok = r["spark"]["status"] == 0 and r["pandas"]["status"] == 0
        ratio = f"{r['pandas']['wall_s'] / r['spark']['wall_s']:.2f}" if both_ok else "–"
        lines.append(f"| {r['samples']:.0e} | {r['bytes'] / 2**20:,.0f} | {' | '.join(spark)} | {' | '.join(pandas)} | {ratio} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e6,1e7", help="comma-separated sample counts")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "bench-analyze"))
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per tool and size")
    parser.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    results = []
    for size in args.sizes.split(","):
        result = run_size(int(float(size)), workdir, args.timeout)
        results.append(result)
        print({k: (v if not isinstance(v, dict) else {x: y for x, y in v.items() if x != "stderr"}) for k, v in result.items()}, flush=True)
    command = "python benchmarks/bench_analyze.py " + " ".join(sys.argv[1:])
    text = render(results, command, load_before, os.getloadavg())
    print(text)
    if args.write:
        write_section("analyze", text)


if __name__ == "__main__":
    main()
