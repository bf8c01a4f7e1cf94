"""Where a small request's CPU goes: system calls and context switches per request of the native
gateway and of the socat relay (the no-parse floor), under the small-request workload of
bench_gateway_peers.py, in front of the same Apache Kafka 4.3.1 broker. Writes the
`gateway-syscalls` section of benchmarks/RESULTS.md.

    python benchmarks/gateway_syscalls.py [--rounds 3] [--seconds 8] [--workers 1,2] [--producers 4] [--client librdkafka]

Counts come from the kernel's tracepoints (`perf stat -e syscalls:sys_enter_*`, which costs the
traced process next to nothing, unlike strace) over a window of steady load, divided by the
requests the broker took in that window; proxy CPU from /proc as in bench_gateway_peers.py.
Each round measures every path back to back in rotated order, in a private loopback-only network
namespace as bench_gateway_peers.py (`--congestion-control` as there). Needs `perf`, `socat`
and root.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from benchmarks import bench_gateway_peers as peers  # noqa: E402
from benchmarks._results import machine, write_section  # noqa: E402

#: what is counted: (label, perf event)
EVENTS = [
    ("recv", "syscalls:sys_enter_recvfrom"),
    ("send", "syscalls:sys_enter_sendto"),
    ("read", "syscalls:sys_enter_read"),
    ("write", "syscalls:sys_enter_write"),
    ("epoll_wait", "syscalls:sys_enter_epoll_wait"),
    ("select", "syscalls:sys_enter_pselect6"),
    ("futex", "syscalls:sys_enter_futex"),
    ("splice", "syscalls:sys_enter_splice"),
    ("all system calls", "raw_syscalls:sys_enter"),
    ("context switches", "context-switches"),
]


def perf_counts(pids: list[int], seconds: float) -> dict[str, int]:
    """Each event's count over `seconds`, summed over the processes (and their threads)."""
    argv = ["perf", "stat", "-x,", "-e", ",".join(e for _label, e in EVENTS), "-p", ",".join(map(str, pids))]
    result = subprocess.run([*argv, "--", "sleep", str(seconds)], capture_output=True, text=True, check=True)
    counts: dict[str, int] = {}
    for line in result.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[0].isdigit():
            counts[fields[2]] = counts.get(fields[2], 0) + int(fields[0])
    return {label: counts.get(event, 0) for label, event in EVENTS}


def measure(args, direct: str, bootstrap: str, root_pid: int) -> dict[str, float]:
    """Per request, over one window of steady small-request load through `bootstrap`."""

    def counted() -> tuple[dict[str, int], float]:
        pids = peers.descendants(root_pid)  # socat forks one process per connection
        cpu0 = peers.tree_cpu_seconds(root_pid)
        counts = perf_counts(pids, args.seconds)
        return counts, peers.tree_cpu_seconds(root_pid) - cpu0

    requests, seconds, (counts, cpu) = peers.under_small_load(args, args.client, direct, bootstrap, counted)
    per_request = {label: count / requests for label, count in counts.items()}
    per_request["CPU µs"] = cpu / requests * 1e6
    per_request["requests/s"] = requests / seconds
    return per_request


def render(args, paths: list[str], results: dict[str, list[dict[str, float]]]) -> str:
    labels = [label for label, _event in EVENTS] + ["CPU µs"]
    shown = [label for label in labels if any(r[label] > 0.005 for rs in results.values() for r in rs)]
    lines = [
        "## Where a small request's CPU goes: system calls per request (native gateway, socat relay)",
        "",
        f"Command: `python benchmarks/gateway_syscalls.py {' '.join(sys.argv[1:])}` on {machine()}, "
        f"Python {sys.version.split()[0]}; in a private loopback-only network namespace, TCP congestion control "
        f"{args.congestion_in_use}.",
        f"Upstream: Apache Kafka 4.3.1, one KRaft broker. {args.producers} {args.client} producer processes, one "
        f"100 B record per Produce request (bench_gateway_peers.py's small-request workload), {args.seconds:g} s "
        f"windows of steady load, {args.rounds} rounds in rotated order. Counts from `perf stat` tracepoints on "
        "the proxy's processes and threads, divided by the requests the broker took in the window; median "
        "(min–max) over rounds.",
        "",
        "| path | requests/s | " + " | ".join(shown) + " |",
        "|---|---|" + "---|" * len(shown),
    ]

    def cell(values: list[float], digits: int) -> str:
        return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"

    for path in paths:
        rows = results[path]
        columns = [cell([r[label] for r in rows], 1 if label == "CPU µs" else 2) for label in shown]
        lines.append(f"| {path} | {cell([r['requests/s'] for r in rows], 0)} | " + " | ".join(columns) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0, help="measured window of each run")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--max-warmup", type=float, default=40.0)
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--client", choices=["librdkafka", "java"], default="librdkafka")
    parser.add_argument("--workers", type=lambda text: sorted({int(n) for n in text.split(",")}), default=[1, 2])
    parser.add_argument(
        "--congestion-control",
        help="TCP congestion control in the benchmark's namespace, e.g. cubic (default: the machine's)",
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = parser.parse_args()
    for tool in ("perf", "socat", "unshare", "ip"):
        if not shutil.which(tool):
            raise SystemExit(f"gateway_syscalls: {tool} is not installed")
    peers.enter_private_netns()
    args.congestion_in_use = peers.use_congestion_control(args.congestion_control)
    workdir = Path(tempfile.mkdtemp(prefix="gateway-syscalls-"))
    broker = peers.start_broker(workdir)
    started = []
    try:
        direct = f"127.0.0.1:{broker.port}"
        relay, relay_bootstrap = peers.start_relay(workdir, broker)
        started.append(relay)
        paths = {peers.RELAY: (relay_bootstrap, relay.pid)}
        for workers in args.workers:
            proc, bootstrap = peers.start_gateway(workdir, direct, workers)
            started.append(proc)
            paths[peers.native_name(workers)] = (bootstrap, proc.pid)
        results: dict[str, list[dict[str, float]]] = {name: [] for name in paths}
        for round_no in range(args.rounds):
            for name in peers.rotated(list(paths), round_no):
                results[name].append(measure(args, direct, *paths[name]))
                print(name, {k: round(v, 2) for k, v in results[name][-1].items()}, flush=True)
        report = render(args, list(paths), results)
    finally:
        for process in started:
            stop = getattr(process, "stop", None) or process.terminate
            stop()
        broker.stop()
    print(report)
    if not args.no_write:
        write_section("gateway-syscalls", report)


if __name__ == "__main__":
    main()
