"""Identity through the gateway: mTLS principal = certificate DN, and the producer-id quota
(KIP-936 style, per user) throttling a client that creates new idempotent producers in a loop
while another user's long-lived idempotent producer is untouched."""

from __future__ import annotations

import datetime
import ipaddress
import time
import uuid

import pytest

from tests.integration.gateway_support import GatewayThread, read_usage

pytestmark = pytest.mark.integration


def _write_pki(directory) -> dict[str, str]:
    """A CA, a server certificate for 127.0.0.1, and client certificates CN=looper / CN=steady."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    paths: dict[str, str] = {}

    def issue(name: str, subject: x509.Name, issuer_key, issuer_name, ca: bool, san=None):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer_name or subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        cert = builder.sign(issuer_key or key, hashes.SHA256())
        (directory / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (directory / f"{name}.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        paths[name], paths[f"{name}_key"] = str(directory / f"{name}.pem"), str(directory / f"{name}.key")
        return key, cert

    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kconfigs-test-ca")])
    ca_key, _ = issue("ca", ca_name, None, None, True)
    issue(
        "server",
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gateway")]),
        ca_key,
        ca_name,
        False,
        [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    for user in ("looper", "steady"):
        subject = x509.Name(
            [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "acme"), x509.NameAttribute(NameOID.COMMON_NAME, user)]
        )
        issue(user, subject, ca_key, ca_name, False)
    return paths


def _tls(pki: dict[str, str], user: str) -> dict:
    return {
        "security_protocol": "SSL",
        "ssl_cafile": pki["ca"],
        "ssl_certfile": pki[user],
        "ssl_keyfile": pki[f"{user}_key"],
    }


def test_mtls_principal_and_producer_ids_rate(tansu_upstream, tmp_path):
    from kafka import KafkaProducer

    pki = _write_pki(tmp_path)
    usage = tmp_path / "usage.jsonl"
    gateway = GatewayThread(
        tansu_upstream,
        tls_cert_file=pki["server"],
        tls_key_file=pki["server_key"],
        tls_client_ca_file=pki["ca"],
        usage_log_path=str(usage),
    )
    try:
        # default user: 0.5 new producer ids per second (burst allowance 0.5 * 10 s = 5 ids)
        gateway.call_soon(gateway.gateway.quotas.load, [({"user": None}, {"producer_ids_rate": 0.5})])
        topic = f"pid-{uuid.uuid4().hex[:6]}"
        steady = KafkaProducer(
            bootstrap_servers=gateway.bootstrap, client_id="steady", enable_idempotence=True, **_tls(pki, "steady")
        )
        throttles_ms = []
        for i in range(12):
            looper = KafkaProducer(
                bootstrap_servers=gateway.bootstrap,
                client_id=f"looper-{i}",
                enable_idempotence=True,
                **_tls(pki, "looper"),
            )
            started = time.monotonic()
            looper.send(topic, b"new-producer").get(30)
            throttles_ms.append(int((time.monotonic() - started) * 1000))
            looper.close()
            steady.send(topic, b"same-producer").get(30)
        steady.flush()
        steady.close()
    finally:
        gateway.stop()
    lines = read_usage(usage)
    users = {l["user"] for l in lines if l["kind"] == "produce"}
    assert users == {"CN=looper,O=acme", "CN=steady,O=acme"}  # RFC 4514 DN, as Kafka's X500Principal.getName()
    looper_pid = [l for l in lines if l["kind"] == "producer_id" and l["user"] == "CN=looper,O=acme"]
    steady_pid = [l for l in lines if l["kind"] == "producer_id" and l["user"] == "CN=steady,O=acme"]
    assert sum(l["value"] for l in looper_pid) == 12
    assert sum(l["throttle_ms"] for l in looper_pid) > 0
    assert sum(l["value"] for l in steady_pid) == 1
    assert sum(l["throttle_ms"] for l in lines if l["user"] == "CN=steady,O=acme") == 0
