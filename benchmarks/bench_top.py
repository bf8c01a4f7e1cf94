"""``kconfigs top``: start-up time and CPU per refresh with 1,000 active entities.

A local HTTP server serves a jmx_exporter-style page (example Kafka rules: ``resource`` label)
with 1,000 (user, client-id) sensors, each a Produce and a Fetch byte-rate and throttle-time; the
quotas (a default user quota, a quota for every tenth user) come from a quota file. Measured in
the same run:
- ``kconfigs top --once`` start to exit (wall), and the same snapshot of an empty page;
- the full screen under a pseudo-terminal at the default 2 s refresh for ``--seconds``: its CPU
  (utime + stime of the process, /proc) per second of wall time;
- the peer floor: fetching and parsing the same page with prometheus_client alone, every 2 s.

Run: python benchmarks/bench_top.py [--seconds 30]
kconfigs is measured as a user installs it (bench_describe.installed_kconfigs: a wheel in a venv).
"""

from __future__ import annotations

import argparse
import http.server
import os
import platform
import pty
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import machine, write_section  # noqa: E402
from bench_describe import USER_ENV, installed_kconfigs  # noqa: E402

ENTITIES = 1000
#: the bound: at most this share of one core at the default refresh, and a start under 1 s
CPU_TARGET, START_TARGET_S = 0.05, 1.0


def exporter_page(entities: int) -> bytes:
    lines = []
    for n in range(entities):
        labels = f'user="user-{n}",clientId="client-{n}"'
        for resource, rate in (("Produce", 50_000 + n), ("Fetch", 80_000 + n)):
            lines.append(f'kafka_server_quota_byte_rate{{resource="{resource}",{labels},}} {rate}.0')
            lines.append(f'kafka_server_quota_throttle_time{{resource="{resource}",{labels},}} {n % 7}.0')
    return ("\n".join(lines) + "\n").encode()


def quota_file(path: Path, entities: int) -> None:
    blocks = ["[[quota]]\nentity = { user = { default = true } }\nproducer_byte_rate = 100000\n"]
    blocks += [
        f'[[quota]]\nentity = {{ user = "user-{n}" }}\nconsumer_byte_rate = 200000\n' for n in range(0, entities, 10)
    ]
    path.write_text("\n".join(blocks))


class Page(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def serve(body: bytes) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = type("Served", (Page,), {"body": body})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"127.0.0.1:{server.server_address[1]}"


def once_seconds(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=USER_ENV)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{argv}: {done.stderr[-400:]}")
    return times


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def screen_cpu_share(argv: list[str], seconds: float) -> float:
    """CPU per wall second of the full screen under a pty, after its first frame."""
    pid, master = pty.fork()
    if pid == 0:
        os.execve(argv[0], argv, {**USER_ENV, "COLUMNS": "200", "LINES": "50", "TERM": "xterm-256color"})
    reader = threading.Thread(target=lambda: _drain(master), daemon=True)
    reader.start()
    time.sleep(3)  # start-up and the first poll
    cpu_before, wall_before = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    share = (cpu_seconds(pid) - cpu_before) / (time.monotonic() - wall_before)
    os.write(master, b"q")
    os.waitpid(pid, 0)
    return share


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass


def parse_floor(url: str, seconds: float) -> float:
    """prometheus_client alone fetching and parsing the page every 2 s: CPU per wall second."""
    from prometheus_client.parser import text_string_to_metric_families

    start_cpu, start = time.process_time(), time.monotonic()
    while time.monotonic() - start < seconds:
        with urllib.request.urlopen(url) as response:
            text = response.read().decode()
        sum(1 for family in text_string_to_metric_families(text) for _ in family.samples)
        time.sleep(2.0)
    return (time.process_time() - start_cpu) / (time.monotonic() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    kconfigs = installed_kconfigs()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        quotas = Path(tmp) / "quotas.toml"
        quota_file(quotas, ENTITIES)
        full, full_address = serve(exporter_page(ENTITIES))
        empty, empty_address = serve(b"")
        top = [kconfigs, "top", "--quotas", str(quotas), "--jmx-exporter"]
        start_full = once_seconds([*top, full_address, "--once"], args.runs)
        start_empty = once_seconds([*top, empty_address, "--once"], args.runs)
        share = screen_cpu_share([*top, full_address], args.seconds)
        floor = parse_floor(f"http://{full_address}/metrics", args.seconds)
        full.shutdown()
        empty.shutdown()
    verdict = "met" if share <= CPU_TARGET and statistics.median(start_full) <= START_TARGET_S else "not met"
    body = f"""## `kconfigs top` with {ENTITIES:,} active entities

Command: `python benchmarks/bench_top.py --seconds {args.seconds:g} --runs {args.runs}` on {machine()},
Python {platform.python_version()}; load average {load_before:.1f} at the start. One jmx_exporter-style
page ({2 * ENTITIES:,} byte-rate and {2 * ENTITIES:,} throttle-time series, example Kafka rules) from a
local HTTP server; quotas from a quota file ({ENTITIES // 10 + 1} entries).

| measure | value |
|---|---|
| `top --once`, {ENTITIES:,} entities: start to exit, median (min-max) | {statistics.median(start_full):.3f} s ({min(start_full):.3f}-{max(start_full):.3f}) |
| `top --once`, empty page | {statistics.median(start_empty):.3f} s |
| full screen at the 2 s refresh: CPU per wall second | {100 * share:.1f} % of a core |
| peer floor: prometheus_client fetching and parsing the page every 2 s | {100 * floor:.1f} % of a core |

Targets (start under {START_TARGET_S:g} s, under {100 * CPU_TARGET:g} % of a core at a 2 s refresh): **{verdict}**.
"""
    write_section("top", body)
    print(body)


if __name__ == "__main__":
    main()
