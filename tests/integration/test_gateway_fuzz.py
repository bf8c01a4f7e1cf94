"""Fuzzed frames (random lengths, truncated headers, garbage api keys, oversize prefixes) close
only their own connection: the gateway keeps serving, and a client producing meanwhile is not
disturbed. A scripted socket is used only to inject the bad bytes."""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
import uuid

import pytest

from tests.integration.gateway_support import GatewayThread

pytestmark = pytest.mark.integration


def _bad_frames(rng: random.Random):
    """Yields (name, bytes) of hostile inputs."""
    yield "tls-hello", bytes.fromhex("160301020001") + rng.randbytes(100)
    yield "oversize", struct.pack(">i", 2**31 - 1) + b"x" * 10
    yield "negative", struct.pack(">i", -5)
    yield "tiny", struct.pack(">i", 3) + b"abc"
    yield "truncated-client-id", struct.pack(">ihhih", 12, 3, 1, 7, 200) + b"ab"
    yield "preauth-big-sasl", struct.pack(">ihhi", 600_000, 36, 2, 1)  # SaslAuthenticate above 512 KiB... no SASL yet
    for _ in range(60):
        kind = rng.choice(["random", "garbage-key", "truncated-body"])
        if kind == "random":
            body = rng.randbytes(rng.randint(0, 64))
            yield kind, struct.pack(">i", rng.randint(-10, 10_000)) + body
        elif kind == "garbage-key":
            body = (
                struct.pack(">hhih", rng.randint(-32768, 32767), rng.randint(-5, 40), rng.randint(0, 99), 1)
                + b"c"
                + rng.randbytes(rng.randint(0, 40))
            )
            yield kind, struct.pack(">i", len(body)) + body
        else:
            api_key = rng.choice([0, 3, 10, 17, 18, 36, 60])
            body = struct.pack(">hhih", api_key, rng.randint(0, 12), 5, 1) + b"c" + rng.randbytes(rng.randint(0, 30))
            yield kind, struct.pack(">i", len(body) + rng.randint(1, 50)) + body  # announces more than it sends


def _inject(port: int, payload: bytes) -> bool:
    """Send ``payload`` and half-close; True when the gateway then closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(10)
        try:
            while sock.recv(65536):
                pass  # the gateway may answer what parsed, then must close
            return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


def test_fuzzed_frames_close_only_their_connection(tansu_upstream):
    from kafka import KafkaProducer

    gateway = GatewayThread(tansu_upstream)
    try:
        producer = KafkaProducer(bootstrap_servers=gateway.bootstrap, client_id="steady", linger_ms=1)
        topic, sent, stop, errors = f"fz-{uuid.uuid4().hex[:6]}", [], threading.Event(), []

        def keep_producing():
            while not stop.is_set():
                try:
                    producer.send(topic, b"ok").get(10)
                    sent.append(time.monotonic())
                except Exception as err:
                    errors.append(err)

        worker = threading.Thread(target=keep_producing)
        worker.start()
        time.sleep(1)
        broker_port = next(iter(gateway.gateway.registry.mapping.values()))[1]
        ports = [gateway.gateway.bootstrap_address[1], broker_port]
        rng = random.Random(20261122)
        left_open = [name for i, (name, payload) in enumerate(_bad_frames(rng)) if not _inject(ports[i % 2], payload)]
        assert not left_open, left_open
        stop.set()
        worker.join()
        producer.close()
        assert not errors, errors
        assert len(sent) > 20
        # the gateway still accepts and serves new clients after the barrage
        fresh = KafkaProducer(bootstrap_servers=gateway.bootstrap, client_id="after")
        fresh.send(topic, b"still-up").get(10)
        fresh.close()
        # most inputs are rejected by the gateway itself (the rest are forwarded opaquely and the
        # broker closes them): every one is logged and counted
        assert (
            gateway.gateway.stats.registry.get_sample_value("kconfigs_gateway_bad_frames_total", {"side": "client"})
            >= 30
        )
    finally:
        gateway.stop()
