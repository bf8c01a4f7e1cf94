"""Gateway against its peers, all in front of the SAME Apache Kafka 4.3.1 single-broker KRaft
cluster in one run: direct, a no-parse TCP relay (the floor), `kconfigs serve` on the native data
plane (1 and 2 worker threads by default), and Kroxylicious 0.12 as a plain pass-through proxy. Writes the `gateway-peers` section of benchmarks/RESULTS.md.

    python benchmarks/bench_gateway_peers.py [--rounds 3] [--seconds 10] [--warmup 5] [--max-warmup 40] [--producers 4]
        [--megabytes 200] [--latency-rounds 8] [--latency-seconds 5] [--idle 500] [--native-workers 1,2]

Quick check: --rounds 1 --seconds 3 --warmup 2 --megabytes 10 --latency-rounds 2 --latency-seconds 2 --idle 50 --no-write

Network: Kroxylicious binds its per-broker ports on 0.0.0.0 with no option to change that, so the
script re-executes itself in a private network namespace (`unshare -n`, root) whose only interface
is its own loopback: nothing of the run is reachable from outside, and no port of another job on
the machine can collide with it.

Paths. The relay is socat (`-b 262144`, fork per connection, no Kafka parsing), the same relay
bench_gateway.py uses: a C process doing read/write, so its figures are the cost of the extra
loopback hop alone. Kafka only stays behind a relay if it advertises the relay's address, so the
broker has a second listener (RELAY) whose advertised port is the relay's; every other path uses
the PLAINTEXT listener and rewrites addresses itself (gateway, Kroxylicious port-per-node mapping
of node id 1). Kroxylicious runs from its Maven Central runtime jar through
benchmarks/kroxylicious/KroxyliciousLauncher.java (fetched and compiled by benchmarks/kroxylicious/fetch),
no filters. The broker JVM runs with the full JIT (the test harness limits it to C1 for start-up time),
a 6 GB heap and its log on tmpfs (--broker-log-parent), and is collected before each paced-batch
round, so that the upstream's own pauses do not set every path's p99 (BROKER_JVM_FLAGS); such a
round also starts only once the broker has freed the previous round's partition files.

Workloads:
(a) small requests: one 100 B record per Produce request (one partition, linger.ms=0, acks=1,
    librdkafka batch.num.messages=1 / Java batch.size=0, 5 requests in flight per connection as
    the Java client's default), --producers processes at once, once with librdkafka
    (confluent-kafka, one Python process each) and once with Kafka's own ProducerPerformance
    (one JVM each). Requests/s is the growth of the partition's end offset over a --seconds window
    once the rate has stopped climbing (JIT warm-up of the clients, the broker and Kroxylicious; at
    least --warmup, at most --max-warmup seconds), read from the broker directly; proxy CPU per request is the proxy's CPU
    time over the same window (all threads, plus children: socat's forks; the Kroxylicious JVM
    whole) divided by the requests.
(b) 1 KiB batched produce then consume with librdkafka (bench_gateway.py's clients): MB/s, ratio
    and proxy CPU ms per MB.
(c) scaling: (a) with each --native-workers count.
(d) native plane (the largest --native-workers): p99 added produce latency at half of its max
    batched load (bench_gateway.py's paced rounds, direct and gateway alternating) and again at
    --light-load of it (on a small machine, half of max load keeps every core busy, so its
    percentiles measure the wait for a core; the machine's busy cores over the light rounds are
    shown), then at half of max load again from a generator that costs next to no CPU
    (batch_latency.py: pre-built 1 MB Produce requests on a schedule, latency from the scheduled
    send to the acknowledgement; each batch's latency also split, with the broker's own request
    log, into the broker's time on the connection and the rest: broker_request_log.py), memory
    per idle connection (RSS delta over --idle connections; also shown for Kroxylicious).

Every round runs every path back to back in rotated order; figures are median (min–max) over
rounds, and ratios are medians of per-round ratios, so load from other jobs hits all paths alike.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from benchmarks import bench_gateway as bg  # noqa: E402
from benchmarks import broker_request_log as request_log  # noqa: E402
from benchmarks._results import machine, write_section  # noqa: E402
from benchmarks.batch_latency import BATCH_CLIENT_ID, BATCH_RECORDS, MAX_IN_FLIGHT, batch_latencies_ms  # noqa: E402

NETNS_ENV = "KCONFIGS_BENCH_PRIVATE_NETNS"
KROXYLICIOUS_FETCH = ROOT / "benchmarks" / "kroxylicious" / "fetch"
SMALL_RECORD = b"s" * 100
#: requests in flight per connection for both clients (the Java producer's default)
IN_FLIGHT = 5
DIRECT, RELAY, KROXY = "direct", "tcp relay (socat)", "Kroxylicious 0.12"
#: what the issue asks of the native plane
TARGETS = {
    "small_vs_relay": 0.95,
    "small_cpu_us": 15.0,
    "batched_vs_relay": 1.0,
    "produce_ms_per_mb": 0.60,
    "consume_ms_per_mb": 0.30,
    "p99_added_ms": 1.0,
}


def native_name(workers: int) -> str:
    return f"gateway, native plane, {workers} worker{'s' if workers > 1 else ''}"


# --- private network namespace -----------------------------------------------------------------


def enter_private_netns() -> None:
    """Re-execute this script inside `unshare -n` (a fresh network namespace with only `lo`)."""
    if os.environ.get(NETNS_ENV) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    env = dict(os.environ, **{NETNS_ENV: "1"})
    try:
        os.execvpe("unshare", ["unshare", "-n", "--", sys.executable, *sys.argv], env)
    except OSError as error:
        raise SystemExit(f"{Path(sys.argv[0]).stem}: cannot run unshare -n ({error}); it needs root") from None


CONGESTION_CONTROL = Path("/proc/sys/net/ipv4/tcp_congestion_control")


def use_congestion_control(name: str | None) -> str:
    """Set the namespace's TCP congestion control (None: keep the machine's); say what runs.

    Why it is a setting of the run: on loopback the sender's congestion control decides how a
    large response is cut up. BBR paces its sends (with no fq qdisc, by TCP's own timer), so a
    1 MB Fetch response arrives in many small pieces and every path pays more CPU per MB than
    under cubic (the kernel's default) or reno. Runs on machines of different defaults only
    compare when the run names it.
    """
    machines = CONGESTION_CONTROL.read_text().strip()
    if name is None or name == machines:
        return f"{machines} (the machine's default)"
    try:
        CONGESTION_CONTROL.write_text(name)
    except OSError as error:
        allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().strip()
        raise SystemExit(
            f"{Path(sys.argv[0]).stem}: cannot use TCP congestion control {name} ({error.strerror}; allowed here: "
            f"{allowed}; as root: sysctl -w net.ipv4.tcp_allowed_congestion_control='{allowed} {name}')"
        ) from None
    return f"{name} (set for the run; the machine's default: {machines})"


# --- processes and their CPU --------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process, its live descendants (socat forks one per connection) and the
    children it has reaped (cutime+cstime, clock ticks: only relevant to socat)."""
    total = 0.0
    for member in descendants(pid):
        try:
            total += bg.cpu_seconds(member)
        except OSError:
            pass  # ended between listing and reading
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return total + (int(fields[13]) + int(fields[14])) / bg.CLK_TCK


# --- the cluster and the paths ------------------------------------------------------------------


#: The broker's JVM: the full JIT, and a heap whose young generation (5 GB, touched at start)
#: outlasts a paced-batch round once it is emptied before the round (collect_broker_garbage).
#: With the harness' 128 MB starting heap the serial collector stayed at a 34 MB young
#: generation and paused 2-26 ms ten times a second at 300 MB/s, and those pauses, not the path,
#: set every path's p99 (direct 5.5-41.7 ms over six rounds); a 3 GB one still paused 15-60 ms
#: once in most 5 s rounds at 450 MB/s.
BROKER_JVM_FLAGS = ("-XX:TieredStopAtLevel=4", "-Xms6g", "-Xmx6g", "-Xmn5g", "-XX:+AlwaysPreTouch")
#: Where the broker keeps its log by default: tmpfs. On this machine's disk, appends at 300 MB/s
#: stalled 10-40 ms every 0.8 s or so (page cache writeback; direct p99 4.4-20.4 ms over six
#: rounds, the collector tamed as above), on tmpfs 3.5-4.8 ms. Every path writes to the same
#: broker, so this takes the upstream's noise out of the comparison, not a path's own cost.
BROKER_LOG_PARENT = "/dev/shm"


def filesystem_type(path: str) -> str:
    """The type of the filesystem holding ``path`` (its longest mount point in /proc/mounts)."""
    resolved, best, kind = os.path.realpath(path), "", "unknown filesystem"
    for line in Path("/proc/mounts").read_text().splitlines():
        _device, mount_point, fs_type = line.split()[:3]
        inside = resolved == mount_point or resolved.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best):
            best, kind = mount_point, fs_type
    return kind


def start_broker(workdir: Path, log_dir: Path | None = None):
    """The broker every path is put in front of; its log in ``log_dir`` (default: under ``workdir``)."""
    from harness.brokers import KraftBroker
    from harness.processes import free_ports
    from harness.versions import KAFKA_4_VERSION

    class RelayedKraftBroker(KraftBroker):
        """KRaft broker with a second listener (RELAY) that advertises the relay's port."""

        def choose_ports(self) -> None:
            self.port, self.controller_port, self.sasl_port, self.relay_listener_port, self.relay_port = free_ports(5)

        def _listener_props(self) -> dict[str, str]:
            props = super()._listener_props()
            props["listeners"] += f",RELAY://127.0.0.1:{self.relay_listener_port}"
            props["advertised.listeners"] += f",RELAY://127.0.0.1:{self.relay_port}"
            props["listener.security.protocol.map"] += ",RELAY:PLAINTEXT"
            return props

    # a deleted topic's files go after a second, not Kafka's default minute, and the task that
    # deletes them starts at once, not after 30 s: on tmpfs they are memory (six 5 s rounds at
    # 450 MB/s held 8 GB, and appends slowed to 270 MB/s while the machine found the pages)
    props = {"log.segment.delete.delay.ms": "1000", "log.initial.task.delay.ms": "0"}
    (workdir / "kafka").mkdir(parents=True, exist_ok=True)
    logging_flag, request_log_path = request_log.logging_config(workdir / "kafka")
    broker = RelayedKraftBroker(
        KAFKA_4_VERSION, workdir / "kafka", extra_props=props, extra_jvm_flags=(*BROKER_JVM_FLAGS, logging_flag)
    )
    broker.request_log = request_log_path
    if log_dir is not None:
        broker.log_dir = log_dir
    broker.start()
    return broker


def start_relay(workdir: Path, broker):
    from harness.brokers import metadata_ready
    from harness.processes import ServerProcess

    relay = ServerProcess(
        "socat relay",
        [
            "socat",
            "-b",
            "262144",
            f"TCP-LISTEN:{broker.relay_port},bind=127.0.0.1,fork,reuseaddr",
            f"TCP:127.0.0.1:{broker.relay_listener_port}",
        ],
        workdir / "socat.log",
    )
    relay.start()
    bootstrap = f"127.0.0.1:{broker.relay_port}"
    relay.wait_until(lambda: metadata_ready(bootstrap), "proxying metadata")
    return relay, bootstrap


def kroxylicious_config(upstream: str, bootstrap_port: int, node_port: int) -> str:
    """Port-per-node pass-through: one gateway, node id 1 (the harness broker) on node_port."""
    return (
        "virtualClusters:\n"
        "  - name: bench\n"
        "    targetCluster:\n"
        f"      bootstrapServers: {upstream}\n"
        "    gateways:\n"
        "      - name: plain\n"
        "        portIdentifiesNode:\n"
        f"          bootstrapAddress: 127.0.0.1:{bootstrap_port}\n"
        f"          nodeStartPort: {node_port}\n"
        "          nodeIdRanges:\n"
        "            - name: brokers\n"
        "              start: 1\n"
        "              end: 1\n"
    )


def start_kroxylicious(workdir: Path, upstream: str):
    from harness.brokers import metadata_ready
    from harness.java import java_binary
    from harness.processes import ServerProcess, free_ports

    cache = subprocess.run([str(KROXYLICIOUS_FETCH)], check=True, capture_output=True, text=True).stdout.strip()
    bootstrap_port, node_port = free_ports(2)
    config = workdir / "kroxylicious.yaml"
    config.write_text(kroxylicious_config(upstream, bootstrap_port, node_port))
    argv = [
        java_binary(),
        "-Xms256m",
        "-Xmx512m",
        "-Djava.net.preferIPv4Stack=true",
        "-cp",
        f"{cache}/*:{cache}/launcher",
        "KroxyliciousLauncher",
        str(config),
    ]
    proxy = ServerProcess("kroxylicious", argv, workdir / "kroxylicious.log")
    proxy.start()
    bootstrap = f"127.0.0.1:{bootstrap_port}"
    proxy.wait_until(lambda: metadata_ready(bootstrap), "proxying metadata")
    return proxy, bootstrap


def start_gateway(workdir: Path, upstream: str, workers: int):
    bg.DATA_PLANE.update(workers=workers)
    gateway_dir = workdir / f"gateway-{workers}"
    gateway_dir.mkdir()
    return bg.start_gateway(upstream, gateway_dir)


# --- workloads ----------------------------------------------------------------------------------


def create_topic(direct: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": direct})
    for future in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30).values():
        future.result(60)


def end_offset(direct: str, topic: str) -> int:
    import confluent_kafka as ck

    consumer = ck.Consumer({"bootstrap.servers": direct, "group.id": "bench-offsets"})
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                return consumer.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=10)[1]
            except ck.KafkaException:  # a topic created a moment ago: metadata still on its way
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        consumer.close()


def librdkafka_small_producer(bootstrap: str, topic: str) -> None:
    """Worker process: one 100 B record per Produce request, as fast as the path takes them."""
    import confluent_kafka as ck

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 0,
            "batch.num.messages": 1,
            "acks": 1,
            "max.in.flight.requests.per.connection": IN_FLIGHT,
            "queue.buffering.max.messages": 1000,
        }
    )
    while True:
        try:
            producer.produce(topic, SMALL_RECORD)
        except BufferError:
            producer.poll(0.001)
        producer.poll(0)


def small_producer_argv(client: str, bootstrap: str, topic: str) -> list[str]:
    if client == "librdkafka":
        return [sys.executable, str(Path(__file__).resolve()), "--small-producer", bootstrap, topic]
    from harness.java import java_command
    from harness.versions import KAFKA_4_VERSION

    return java_command(
        KAFKA_4_VERSION,
        "org.apache.kafka.tools.ProducerPerformance",
        [
            "--topic",
            topic,
            "--num-records",
            "1000000000000",
            "--record-size",
            str(len(SMALL_RECORD)),
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={bootstrap}",
            "acks=1",
            "linger.ms=0",
            # 0: no batching, each record its own batch, so one record per Produce request
            "batch.size=0",
            f"max.in.flight.requests.per.connection={IN_FLIGHT}",
            # a short queue: the default 32 MB holds ~200,000 one-record batches (KBs of heap each),
            # more than the tool's heap, and the JVM then spends its time in GC
            "buffer.memory=262144",
        ],
        role="tools",
        extra_jvm_flags=("-XX:TieredStopAtLevel=4",),
    )


def wait_until_steady(args, direct: str, topic: str, producers: list[subprocess.Popen], who: str) -> None:
    """Until the produce rate has stopped climbing: at least --warmup seconds after the first
    record, then until the last 3 s went at most 10% faster than the 3 s before (JIT compilers in
    the Java clients, the broker and Kroxylicious take a while), --max-warmup at most."""
    deadline = time.monotonic() + 60
    while end_offset(direct, topic) == 0:  # clients started (JVMs take a while)
        if time.monotonic() > deadline or any(p.poll() is not None for p in producers):
            raise RuntimeError(f"{who} produced nothing")
        time.sleep(0.2)
    start, offsets = time.monotonic(), []
    while time.monotonic() - start < args.max_warmup:
        offsets.append(end_offset(direct, topic))
        if time.monotonic() - start >= args.warmup and len(offsets) >= 7:
            last, before = offsets[-1] - offsets[-4], offsets[-4] - offsets[-7]
            if last <= 1.1 * before:
                return
        time.sleep(1)


def under_small_load(args, client: str, direct: str, bootstrap: str, window):
    """--producers small-request producers through `bootstrap` until the rate is steady, then
    `window()` between two reads of the partition's end offset: (requests, seconds, its result)."""
    topic = f"small-{uuid.uuid4().hex[:8]}"
    create_topic(direct, topic)
    producers = [
        subprocess.Popen(
            small_producer_argv(client, bootstrap, topic),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        for _ in range(args.producers)
    ]
    try:
        wait_until_steady(args, direct, topic, producers, f"{client} producers through {bootstrap}")
        offset0, t0 = end_offset(direct, topic), time.monotonic()
        result = window()
        offset1, t1 = end_offset(direct, topic), time.monotonic()
    finally:
        for producer in producers:
            producer.kill()
        for producer in producers:
            producer.wait(30)
    bg.delete_topic(direct, topic)
    return offset1 - offset0, t1 - t0, result


def small_requests(args, client: str, direct: str, bootstrap: str, pids: list[int]) -> tuple[float, float | None]:
    """Requests/s over the window, and the proxy's CPU µs per request (None without a proxy)."""

    def proxy_cpu_seconds() -> float:
        cpu0 = sum(map(tree_cpu_seconds, pids))
        time.sleep(args.seconds)
        return sum(map(tree_cpu_seconds, pids)) - cpu0

    requests, seconds, cpu = under_small_load(args, client, direct, bootstrap, proxy_cpu_seconds)
    return requests / seconds, (cpu / requests * 1e6 if pids and requests else None)


def rotated(paths: list[str], round_no: int) -> list[str]:
    shift = round_no % len(paths)
    return paths[shift:] + paths[:shift]


def measure_rounds(args, workload: str, paths: list[str], measure, failures: dict, loads: list[float]) -> dict:
    """--rounds rounds of ``measure(path) -> {figure: value or None}`` over every path in rotated
    order: per path, per figure, the list of values. A path that fails (a proxy that cannot carry
    the workload) is reported in ``failures`` and left out from then on; the reference paths
    (direct, relay) and the headline gateway must not fail."""
    results: dict[str, dict[str, list[float]]] = {path: {} for path in paths}
    active = list(paths)
    for round_no in range(args.rounds):
        for path in rotated(active, round_no):
            try:
                figures = measure(path)
            except Exception as error:
                if path in (DIRECT, RELAY, native_name(max(args.native_workers))):
                    raise
                failures[f"{path}, {workload}"] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
                print(f"  {workload} {path} FAILED: {error}", file=sys.stderr, flush=True)
                active.remove(path)
                del results[path]
                continue
            for name, value in figures.items():
                if value is not None:
                    results[path].setdefault(name, []).append(value)
            shown = ", ".join(f"{name} {value:.1f}" for name, value in figures.items() if value is not None)
            print(f"  {workload} round {round_no + 1} {path}: {shown}", flush=True)
        loads.append(os.getloadavg()[0])
    return results


def small_rounds(args, client: str, bootstraps: dict[str, str], pids: dict[str, list[int]], failures, loads):
    def measure(path: str) -> dict:
        rps, cpu_us = small_requests(args, client, bootstraps[DIRECT], bootstraps[path], pids.get(path, []))
        return {"rps": rps, "cpu_us": cpu_us}

    return measure_rounds(args, f"small requests ({client})", list(bootstraps), measure, failures, loads)


def batched_rounds(args, bootstraps: dict[str, str], pids: dict[str, list[int]], failures, loads):
    def measure(path: str) -> dict:
        topic = f"batched-{uuid.uuid4().hex[:8]}"
        create_topic(bootstraps[DIRECT], topic)
        members = pids.get(path, [])
        cpu0 = sum(map(tree_cpu_seconds, members))
        produce = bg.produce_throughput(bootstraps[path], topic, args.megabytes)
        cpu1 = sum(map(tree_cpu_seconds, members))
        consume = bg.consume_throughput(bootstraps[path], topic, args.megabytes)
        cpu2 = sum(map(tree_cpu_seconds, members))
        bg.delete_topic(bootstraps[DIRECT], topic)
        return {
            "produce": produce,
            "consume": consume,
            "produce_ms": (cpu1 - cpu0) * 1000 / args.megabytes if members else None,
            "consume_ms": (cpu2 - cpu1) * 1000 / args.megabytes if members else None,
        }

    return measure_rounds(args, "batched 1 KiB", list(bootstraps), measure, failures, loads)


# --- the run ------------------------------------------------------------------------------------


def run(args) -> str:
    workdir = Path(tempfile.mkdtemp(prefix="bench-gateway-peers-", dir=args.workdir))
    load_start = os.getloadavg()[0]
    log_dir = Path(tempfile.mkdtemp(prefix="bench-gateway-peers-log-", dir=args.broker_log_parent))
    try:
        return _run(args, workdir, log_dir, load_start)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)


def _run(args, workdir: Path, log_dir: Path, load_start: float) -> str:
    broker = start_broker(workdir, log_dir)
    servers, gateways, failures = [], [], {}
    bootstraps: dict[str, str] = {DIRECT: broker.bootstrap}
    pids: dict[str, list[int]] = {}
    try:
        relay, bootstraps[RELAY] = start_relay(workdir, broker)
        servers.append(relay)
        pids[RELAY] = [relay.pid]
        for workers in args.native_workers:
            proc, bootstraps[native_name(workers)] = start_gateway(workdir, broker.bootstrap, workers)
            gateways.append(proc)
            pids[native_name(workers)] = [proc.pid]
        try:
            kroxy, bootstraps[KROXY] = start_kroxylicious(workdir, broker.bootstrap)
            servers.append(kroxy)
            pids[KROXY] = [kroxy.pid]
        except Exception as error:  # reported in the results, the other paths still run
            failures[KROXY] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
            print(f"Kroxylicious did not start: {error}", file=sys.stderr)
        loads: list[float] = []
        small = {client: small_rounds(args, client, bootstraps, pids, failures, loads) for client in args.clients}
        batched = batched_rounds(args, bootstraps, pids, failures, loads)
        native = native_name(max(args.native_workers))
        half_load = statistics.median(batched[native]["produce"]) / 2
        latency = bg.latency_rounds(args, broker.bootstrap, bootstraps[native], half_load, 5)
        with BusyCores() as batch_busy:
            batch = batch_latency_rounds(args, broker.bootstrap, bootstraps[native], half_load, broker)
        light_load = half_load * 2 * args.light_load
        with BusyCores() as busy:
            light = bg.latency_rounds(args, broker.bootstrap, bootstraps[native], light_load, 5)
        idle = {}
        for path in (native, KROXY):
            try:
                if path in pids:
                    idle[path] = bg.idle_connection_bytes(pids[path][0], bootstraps[path], args.idle)
            except OSError as error:
                failures[f"{path}, idle connections"] = f"{type(error).__name__}: {error}"
    finally:
        for proc in gateways:
            proc.terminate()
            proc.wait(30)
        for server in servers:
            server.stop()
        broker.stop()
    light_latency = (light_load, *light, busy.cores)
    batch_latency = (half_load, *batch, batch_busy.cores)
    return render(
        args,
        bootstraps,
        small,
        batched,
        (half_load, *latency),
        light_latency,
        batch_latency,
        idle,
        failures,
        load_start,
        loads,
    )


def batch_latency_rounds(args, direct: str, gateway: str, rate: float, broker):
    """Latencies of paced batches (batch_latency.py) and the MB/s acknowledged, per round and
    path (bench_gateway.alternating_rounds), each round from an empty young generation and with
    the previous round's partition gone from the broker's log directory; then the same batches'
    time outside the broker per round and path (broker_request_log.py), or None if the request
    log could not be read."""
    timelines: dict[str, list[list]] = {direct: [], gateway: []}

    def measure(bootstrap: str) -> tuple[list[float], float]:
        topic = f"batch-lat-{uuid.uuid4().hex[:8]}"
        create_topic(direct, topic)
        collect_broker_garbage(broker.pid)
        timelines[bootstrap].append([])
        measured = batch_latencies_ms(bootstrap, topic, rate, args.latency_seconds, timelines[bootstrap][-1])
        bg.delete_topic(direct, topic)
        wait_until_partition_files_gone(broker.log_dir, topic)
        return measured

    from harness.brokers import KRAFT_NODE_ID

    request_log.set_request_logging(direct, KRAFT_NODE_ID, True)
    try:
        rounds = bg.alternating_rounds(args.latency_rounds, direct, gateway, measure)
    finally:
        request_log.set_request_logging(direct, KRAFT_NODE_ID, False)
    try:
        timings = request_log.produce_timings(broker.request_log, BATCH_CLIENT_ID)
        outside = tuple(
            [request_log.outside_the_broker_ms(t, timings) for t in timelines[b]] for b in (direct, gateway)
        )
    except (OSError, ValueError, KeyError) as error:
        print(f"the broker's request log gave no split of the batch latencies: {error}", file=sys.stderr)
        outside = None
    return (*rounds, outside)


def wait_until_partition_files_gone(log_dir: Path, topic: str, timeout_s: float = 60) -> None:
    """Until the broker has removed a deleted topic's partition directories from ``log_dir``.

    Why: the broker deletes the files log.segment.delete.delay.ms after the topic, in its own
    scheduler thread; a round's gigabyte on tmpfs then takes ~0.2 s to free, which landed inside
    the next round (the other path's) and stalled it (in the one such stall lined up against the
    broker's request log: a response held 13 ms in its response queue, the path's 22-26 ms)."""
    deadline = time.monotonic() + timeout_s
    while any(entry.name.startswith(f"{topic}-") for entry in log_dir.iterdir()):
        if time.monotonic() > deadline:
            print(f"topic {topic}'s files still in {log_dir} after {timeout_s:.0f} s; going on", file=sys.stderr)
            return
        time.sleep(0.05)


def collect_broker_garbage(pid: int) -> None:
    """A full collection in the broker now (``jcmd GC.run``, 50 ms or so), between rounds: a
    round then starts with an empty young generation, which BROKER_JVM_FLAGS size to outlast it,
    so no collector pause falls inside a round on either path."""
    from harness.java import java_binary

    jcmd = Path(java_binary()).resolve().parent / "jcmd"
    subprocess.run([str(jcmd), str(pid), "GC.run"], capture_output=True, check=True, timeout=60)


class BusyCores:
    """The machine's average busy cores (all processes) over a ``with`` block, from /proc/stat."""

    cores = 0.0

    @staticmethod
    def _jiffies() -> tuple[int, int]:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields) - idle, time.monotonic_ns()

    def __enter__(self):
        self._start = self._jiffies()
        return self

    def __exit__(self, *_exc):
        (busy0, t0), (busy1, t1) = self._start, self._jiffies()
        self.cores = (busy1 - busy0) / os.sysconf("SC_CLK_TCK") / ((t1 - t0) / 1e9)


# --- the report ---------------------------------------------------------------------------------


def ratios(values: list[float], bases: list[float]) -> list[float]:
    return [v / b for v, b in zip(values, bases)]


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def command_line(args) -> str:
    return (
        f"python benchmarks/bench_gateway_peers.py --rounds {args.rounds} --seconds {args.seconds:g} "
        f"--warmup {args.warmup:g} --max-warmup {args.max_warmup:g} --producers {args.producers} --megabytes {args.megabytes} "
        f"--latency-rounds {args.latency_rounds} --latency-seconds {args.latency_seconds:g} --idle {args.idle} "
        f"--native-workers {','.join(map(str, args.native_workers))} --clients {','.join(args.clients)}"
        + (f" --congestion-control {args.congestion_control}" if args.congestion_control else "")
    )


def render(
    args, bootstraps, small, batched, latency, light_latency, batch_latency, idle, failures, load_start, loads
) -> str:
    spread = bg.spread
    natives = [native_name(w) for w in args.native_workers]
    headline = natives[-1]
    lines = [
        "## Gateway against its peers (native plane, socat relay, Kroxylicious 0.12)",
        "",
        f"Command: `{command_line(args)}` on {machine()} shared with other jobs "
        f"(1-min load average {load_start:.1f} at the start, {spread(loads)} over the rounds), "
        f"Python {platform.python_version()}; everything in a private loopback-only network namespace, "
        f"TCP congestion control {args.congestion_in_use}.",
        "Upstream: Apache Kafka 4.3.1, one KRaft broker+controller (test harness settings, "
        f"{' '.join(BROKER_JVM_FLAGS)}, its log in {args.broker_log_parent} "
        f"({filesystem_type(args.broker_log_parent)})), the same broker for every path. Relay: socat (`-b 262144`, fork per connection; a C read/write loop, as in "
        "bench_gateway.py: a relay written in Python would cost more than the proxies it is the floor for), no "
        "parsing, in front of a second broker listener that advertises the relay's port. Kroxylicious: runtime jar + launcher, port-per-node pass-through, no filters. "
        f"{args.rounds} rounds, each running every path back to back in rotated order; median (min–max) over "
        "rounds; ratios are medians of per-round ratios. Proxy CPU from /proc (all threads; socat's forks; "
        "the whole Kroxylicious JVM).",
    ]
    if statistics.median(loads) > (os.cpu_count() or 1):
        lines += [
            "",
            f"**The load average ({statistics.median(loads):.1f}) was above the {os.cpu_count()} cores during "
            "the run**: other jobs took CPU from every path alike (rounds rotate, so the ratios roughly hold, with "
            "the spread shown), but the latency percentiles mostly measure the wait for a core, direct as well, "
            "and the throughputs are lower than an idle machine gives. CPU per request or per MB is the least "
            "affected figure.",
        ]
    for name, reason in failures.items():
        lines += ["", f"**Failed: {name}** ({reason}); left out of the tables."]
    labels = {"librdkafka": "librdkafka (confluent-kafka)", "java": "Kafka's ProducerPerformance (Java)"}
    for client in args.clients:
        lines += render_small(args, small[client], labels[client], natives)
    lines += render_batched(args, batched)
    lines += render_scaling(args, small, natives)
    lines += render_latency_memory(args, headline, latency, light_latency, batch_latency, idle)
    lines += render_targets(small, batched, latency, light_latency, batch_latency, headline)
    return "\n".join(lines)


def render_small(args, results, label, natives) -> list[str]:
    spread = bg.spread
    direct, relay = results[DIRECT]["rps"], results[RELAY]["rps"]
    lines = [
        "",
        f"### Small requests, {label}",
        "",
        f"{args.producers} producer processes, one 100 B record per Produce request (linger.ms=0, acks=1, "
        f"{IN_FLIGHT} in flight per connection), one partition; requests/s over {args.seconds:g} s once "
        f"the rate stopped climbing (>= {args.warmup:g} s, <= {args.max_warmup:g} s of warm-up: the last 3 s at "
        "most 10% above the 3 s before).",
        "",
        "| path | requests/s | / direct | / relay | proxy CPU µs per request |",
        "|---|---|---|---|---|",
    ]
    for path, r in results.items():
        lines.append(
            f"| {path} | {spread(r['rps'], '.0f')} | {spread(ratios(r['rps'], direct), '.2f')} | "
            f"{spread(ratios(r['rps'], relay), '.2f')} | {spread(r['cpu_us'], '.1f') if r.get('cpu_us') else '-'} |"
        )
    return lines


def render_batched(args, results) -> list[str]:
    spread = bg.spread
    direct, relay = results[DIRECT], results[RELAY]
    lines = [
        "",
        "### 1 KiB batched produce and consume, librdkafka",
        "",
        f"linger.ms=5, acks=1, {args.megabytes} MB produced then consumed per path per round.",
        "",
        "| path | produce MB/s | consume MB/s | / direct (produce, consume) | / relay (produce, consume) "
        "| proxy CPU ms per MB produced | per MB consumed |",
        "|---|---|---|---|---|---|---|",
    ]
    for path, r in results.items():
        cpu = f"{spread(r['produce_ms'], '.2f')} | {spread(r['consume_ms'], '.2f')}" if r.get("produce_ms") else "- | -"
        lines.append(
            f"| {path} | {spread(r['produce'])} | {spread(r['consume'])} | "
            f"{spread(ratios(r['produce'], direct['produce']), '.2f')}, {spread(ratios(r['consume'], direct['consume']), '.2f')} | "
            f"{spread(ratios(r['produce'], relay['produce']), '.2f')}, {spread(ratios(r['consume'], relay['consume']), '.2f')} | "
            f"{cpu} |"
        )
    return lines


def render_scaling(args, small, natives) -> list[str]:
    spread = bg.spread
    lines = [
        "",
        "### Scaling of the native plane with worker threads (small requests above)",
        "",
        "| client | " + " | ".join(f"{n} req/s" for n in natives) + " | last / first |",
        "|---|" + "---|" * (len(natives) + 1),
    ]
    for client in small:
        r = small[client]
        lines.append(
            f"| {client} | "
            + " | ".join(spread(r[n]["rps"], ".0f") if n in r else "failed" for n in natives)
            + (
                f" | {spread(ratios(r[natives[-1]]['rps'], r[natives[0]]['rps']), '.2f')} |"
                if natives[0] in r
                else " | - |"
            )
        )
    lines += [
        "",
        f"On this {os.cpu_count()}-core machine the producers and the broker share the cores with the gateway, "
        "so no worker count can show more than the cores left to it. To show N cores elsewhere: on a machine with "
        "N cores for the gateway plus enough for the broker and the clients, run "
        "`--native-workers 1,2,4,...,N --producers 4N --clients java` (4 producer processes per worker); the "
        "gateway scales if requests/s grows with the worker count while its CPU µs per request stays flat, "
        "and the relay's row shows the most the broker and clients can give.",
    ]
    return lines


def render_latency_memory(args, headline, latency, light_latency, batch_latency, idle) -> list[str]:
    half_load, direct_rounds, via_rounds, paced = latency
    why = "half of max load: half of its median batched produce MB/s above, same batching"
    lines = bg.render_latency(args, half_load, 5, direct_rounds, via_rounds, paced, why)
    light_load, light_direct, light_via, light_paced, busy = light_latency
    why = (
        f"--light-load {args.light_load:g} of its median batched produce MB/s above; the machine's busy cores "
        f"averaged {busy:.2f} of {os.cpu_count()} over these rounds, the latency generator included, same batching"
    )
    light = bg.render_latency(args, light_load, 5, light_direct, light_via, light_paced, why)
    batch_load, batch_direct, batch_via, batch_achieved, batch_outside, batch_busy = batch_latency
    why = (
        f"half of max load, as above, from a generator that costs next to no CPU: the machine's busy cores "
        f"averaged {batch_busy:.2f} of {os.cpu_count()} over these rounds"
    )
    batches = bg.render_latency(
        args,
        batch_load,
        0,
        batch_direct,
        batch_via,
        batch_achieved,
        why,
        measure="Produce batch latency (scheduled send to acknowledgement, benchmarks/batch_latency.py)",
        unit="batches",
        settings=f"{BATCH_RECORDS} records of 1 KiB per batch, acks=1, up to {MAX_IN_FLIGHT} batches in flight",
    )
    batches += render_outside_the_broker(batch_outside)
    lines = ["", f"### Added latency and memory, {headline}", *lines, *light, *batches]
    lines += ["", f"Memory per idle proxied connection (RSS delta over {args.idle} connections after ApiVersions):", ""]
    lines += [f"- {path}: {value / 1024:.1f} KiB" for path, value in idle.items()]
    if KROXY in idle:
        lines.append("  (a JVM's RSS grows with heap use and shrinks only at GC: indicative)")
    return lines


def render_outside_the_broker(outside) -> list[str]:
    """Rows for the paced-batch table: the same batches' time outside the broker, and a note."""
    if outside is None:
        return ["", "(The broker's request log gave no split of these latencies; see the run's output.)"]
    return [
        *bg.latency_rows(*outside, label="outside the broker, "),
        "",
        "\"Outside the broker\" is each batch's latency less the time the broker spent on this connection's "
        "requests (its own and those queued ahead of it) between the batch's scheduled send and its response, "
        "from the broker's own request log (benchmarks/broker_request_log.py): the client's sockets, and on the "
        "gateway path the gateway. The broker's stalls, which hit either path at random, drop out of it.",
    ]


def render_targets(small, batched, latency, light_latency, batch_latency, headline) -> list[str]:
    med = statistics.median
    lines = ["", f"### Targets for the gateway ({headline})", ""]
    for client, r in small.items():
        vs_relay = med(ratios(r[headline]["rps"], r[RELAY]["rps"]))
        cpu = med(r[headline]["cpu_us"])
        lines.append(
            f"- small requests, {client}: {vs_relay:.2f}x the relay (target >= {TARGETS['small_vs_relay']}: "
            f"{verdict(vs_relay >= TARGETS['small_vs_relay'])}); CPU {cpu:.1f} µs per request "
            f"(target <= {TARGETS['small_cpu_us']:g}: {verdict(cpu <= TARGETS['small_cpu_us'])})"
        )
        if KROXY in r:
            vs_kroxy = med(ratios(r[headline]["rps"], r[KROXY]["rps"]))
            lines[-1] += f"; {vs_kroxy:.2f}x Kroxylicious (target >= 1: {verdict(vs_kroxy >= 1)})"
    b = batched[headline]
    for kind in ("produce", "consume"):
        vs_relay = med(ratios(b[kind], batched[RELAY][kind]))
        cpu, target = med(b[f"{kind}_ms"]), TARGETS[f"{kind}_ms_per_mb"]
        lines.append(
            f"- batched {kind}: {vs_relay:.2f}x the relay (target >= 1: {verdict(vs_relay >= 1)}); "
            f"{cpu:.2f} ms CPU per MB (target <= {target:.2f}: {verdict(cpu <= target)})"
        )
    _half, direct_rounds, via_rounds, _paced = latency
    lines.append(_p99_added_target("half of max load (delivery reports, librdkafka)", direct_rounds, via_rounds))
    _half, direct_rounds, via_rounds, _achieved, outside, busy = batch_latency
    where = f"half of max load (paced batches, {busy:.2f} of {os.cpu_count()} cores busy)"
    lines.append(_p99_added_target(where, direct_rounds, via_rounds))
    if outside is not None:
        pairs = bg.added_per_pair(*outside)
        lines[-1] += (
            f"; outside the broker the gateway added {statistics.median(pairs):.2f} ms at p99 "
            f"(median of round pairs; over {TARGETS['p99_added_ms']:g} ms in "
            f"{sum(pair > TARGETS['p99_added_ms'] for pair in pairs)} of {len(pairs)})"
        )
    light_mbs, direct_rounds, via_rounds, _paced, busy = light_latency
    where = f"{light_mbs:.1f} MB/s ({busy:.2f} of {os.cpu_count()} cores busy)"
    lines.append(_p99_added_target(where, direct_rounds, via_rounds))
    return lines


def _p99_added_target(where: str, direct_rounds, via_rounds) -> str:
    """The added p99 against its target. While the direct path's own p99 holds still between
    rounds, the median of the round pairs' differences decides. When it moves by more than the
    target, one median of such differences is noise, so the round pairs vote instead (a one-sided
    sign test: if the added p99 were over the target, each alternating pair would come out at or
    under it at most half the time): "met" or "not met" only when the pairs agree beyond chance
    (p <= SIGN_TEST_P), otherwise "not resolved"."""
    target = TARGETS["p99_added_ms"]
    direct_p99 = [bg.percentile(d, 99) for d in direct_rounds]
    pairs = bg.added_per_pair(direct_rounds, via_rounds)
    added = statistics.median(pairs)
    line = f"- p99 added latency at {where}: {added:.2f} ms, median of round pairs (target <= {target:g}: "
    low, high = min(direct_p99), max(direct_p99)
    if high - low <= target:
        return line + f"{verdict(added <= target)})"
    under = sum(1 for pair in pairs if pair <= target)
    moved = f"the direct path's own p99 ranged {low:.2f}–{high:.2f} ms over the rounds"
    for ok, agreeing in ((True, under), (False, len(pairs) - under)):
        p = sign_test_p(agreeing, len(pairs))
        if p <= SIGN_TEST_P:
            side = "at or under" if ok else "over"
            return (
                line
                + f"{verdict(ok)}: {side} it in {agreeing} of {len(pairs)} round pairs, sign test p = {p:.3f}; {moved})"
            )
    return line + (
        f"**not resolved**: {moved}, more than the target apart, and {under} of {len(pairs)} round pairs at or "
        f"under it is not beyond chance)"
    )


#: the largest chance of the round pairs agreeing by luck that still gives a p99 verdict
SIGN_TEST_P = 0.05


def sign_test_p(agreeing: int, pairs: int) -> float:
    """Chance of at least `agreeing` of `pairs` fair coin flips coming up the same side."""
    return sum(math.comb(pairs, k) for k in range(agreeing, pairs + 1)) / 2**pairs


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--small-producer":
        librdkafka_small_producer(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window of each small-request run")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of load before the window")
    parser.add_argument(
        "--max-warmup", type=float, default=40.0, help="seconds of load at most before the window (rate still climbing)"
    )
    parser.add_argument("--producers", type=int, default=4, help="producer processes of the small-request runs")
    parser.add_argument("--megabytes", type=int, default=200, help="MB per batched produce/consume run")
    parser.add_argument("--latency-rounds", type=int, default=8)
    parser.add_argument("--latency-seconds", type=float, default=5.0)
    parser.add_argument(
        "--light-load",
        type=float,
        default=0.05,
        help="a second latency measure at this fraction of max load, one meant to leave a core free (default 0.05)",
    )
    parser.add_argument("--idle", type=int, default=500, help="idle connections of the memory measurement")
    parser.add_argument(
        "--native-workers",
        type=lambda text: sorted({int(n) for n in text.split(",")}),
        default=[1, 2],
        help="comma-separated worker thread counts of the native plane (the largest is the headline gateway)",
    )
    parser.add_argument(
        "--clients",
        type=lambda text: [c for c in ("librdkafka", "java") if c in text.split(",")],
        default=["librdkafka", "java"],
        help="clients of the small-request runs: librdkafka,java (both by default)",
    )
    parser.add_argument(
        "--congestion-control",
        help="TCP congestion control in the benchmark's namespace, e.g. cubic (default: the machine's)",
    )
    parser.add_argument("--workdir", help="directory for logs and data (default: a new temp dir)")
    parser.add_argument(
        "--broker-log-parent",
        default=BROKER_LOG_PARENT,
        help=f"directory in which the broker's log directory is made (default {BROKER_LOG_PARENT}, tmpfs)",
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = parser.parse_args()
    for tool, why in (("unshare", "util-linux"), ("ip", "iproute2"), ("socat", "the relay: apt-get install -y socat")):
        if not shutil.which(tool):
            raise SystemExit(f"bench_gateway_peers: {tool} is not installed ({why})")
    if not args.clients:
        parser.error("--clients: librdkafka and/or java")
    if min(args.native_workers) < 1:
        parser.error("--native-workers: counts must be >= 1")
    if not os.path.isdir(args.broker_log_parent):
        parser.error(f"--broker-log-parent: {args.broker_log_parent} is not a directory")
    if os.environ.get(NETNS_ENV) != "1":
        # the namespace has no route out: Kroxylicious' jars come from Maven Central before it
        fetched = subprocess.run([str(KROXYLICIOUS_FETCH)], capture_output=True, text=True)
        if fetched.returncode != 0:
            print(f"Kroxylicious could not be fetched: {fetched.stderr.strip()[-500:]}", file=sys.stderr)
    enter_private_netns()
    args.congestion_in_use = use_congestion_control(args.congestion_control)
    print("running:", shlex.join(sys.argv), flush=True)
    body = run(args)
    print(body)
    if not args.no_write:
        write_section("gateway-peers", body)


if __name__ == "__main__":
    main()
