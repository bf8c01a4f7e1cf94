"""Throw-away TLS material for tests: a CA, a server and a client certificate (openssl),
plus JKS copies for Java clients (keytool). Valid for 2 days, for 127.0.0.1/localhost."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .java import java_binary
from .versions import SETUP_HINT, MissingTestDependency

STORE_PASSWORD = "kconfigs-test"
SERVER_EXTENSIONS = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n"
CLIENT_EXTENSIONS = "extendedKeyUsage=clientAuth\n"


@dataclass(frozen=True)
class TlsMaterial:
    """Paths of generated PEM/JKS files; ``password`` protects the JKS stores only."""

    ca_pem: Path
    server_cert_pem: Path
    server_key_pem: Path
    server_keystore_pem: Path  # key + certificate in one file (ZooKeeper's PEM keystore)
    client_cert_pem: Path
    client_key_pem: Path
    client_keystore_pem: Path
    client_keystore_jks: Path
    truststore_jks: Path
    password: str = STORE_PASSWORD


def _run(argv: list[str], cwd: Path) -> None:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result.stderr.strip()}")


def _openssl() -> str:
    found = shutil.which("openssl")
    if not found:
        raise MissingTestDependency(f"openssl not installed: {SETUP_HINT}")
    return found


def _keytool() -> str:
    keytool = Path(java_binary()).resolve().with_name("keytool")
    if not keytool.is_file():
        raise MissingTestDependency(f"keytool not found next to {java_binary()}: {SETUP_HINT}")
    return str(keytool)


def _signed_cert(openssl: str, directory: Path, name: str, subject: str, extensions: str) -> None:
    (directory / f"{name}.ext").write_text(extensions)
    _run(
        [
            openssl,
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            subject,
        ],
        directory,
    )
    _run(
        [
            openssl,
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            f"{name}.pem",
            "-extfile",
            f"{name}.ext",
        ],
        directory,
    )
    pem_bundle = (directory / f"{name}.key").read_text() + (directory / f"{name}.pem").read_text()
    (directory / f"{name}-keystore.pem").write_text(pem_bundle)


def _java_stores(directory: Path) -> None:
    openssl, keytool = _openssl(), _keytool()
    _run(
        [
            openssl,
            "pkcs12",
            "-export",
            "-in",
            "client.pem",
            "-inkey",
            "client.key",
            "-name",
            "client",
            "-out",
            "client.p12",
            "-passout",
            f"pass:{STORE_PASSWORD}",
        ],
        directory,
    )
    _run(
        [
            keytool,
            "-importkeystore",
            "-srckeystore",
            "client.p12",
            "-srcstoretype",
            "PKCS12",
            "-srcstorepass",
            STORE_PASSWORD,
            "-destkeystore",
            "client-keystore.jks",
            "-deststoretype",
            "JKS",
            "-deststorepass",
            STORE_PASSWORD,
            "-noprompt",
        ],
        directory,
    )
    _run(
        [
            keytool,
            "-importcert",
            "-file",
            "ca.pem",
            "-alias",
            "ca",
            "-keystore",
            "truststore.jks",
            "-storetype",
            "JKS",
            "-storepass",
            STORE_PASSWORD,
            "-noprompt",
        ],
        directory,
    )


def generate_pem_material(directory: Path, client_key_password: str | None = None) -> Path:
    """CA, server and client certificates and keys as PEM files in ``directory`` (no Java
    needed). With ``client_key_password``, ``client-encrypted.key`` holds the client key
    encrypted with it. :raises MissingTestDependency: openssl is missing."""
    directory.mkdir(parents=True, exist_ok=True)
    openssl = _openssl()
    _run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=kconfigs-test-ca",
        ],
        directory,
    )
    _signed_cert(openssl, directory, "server", "/CN=localhost", SERVER_EXTENSIONS)
    _signed_cert(openssl, directory, "client", "/CN=kconfigs-client", CLIENT_EXTENSIONS)
    if client_key_password is not None:
        _run(
            [
                openssl,
                "pkey",
                "-in",
                "client.key",
                "-aes-256-cbc",
                "-passout",
                f"pass:{client_key_password}",
                "-out",
                "client-encrypted.key",
            ],
            directory,
        )
    return directory


def generate_tls_material(directory: Path) -> TlsMaterial:
    """PEM material (:func:`generate_pem_material`) plus JKS copies for Java clients.

    :raises MissingTestDependency: openssl or keytool is missing.
    """
    generate_pem_material(directory)
    _java_stores(directory)
    return TlsMaterial(
        ca_pem=directory / "ca.pem",
        server_cert_pem=directory / "server.pem",
        server_key_pem=directory / "server.key",
        server_keystore_pem=directory / "server-keystore.pem",
        client_cert_pem=directory / "client.pem",
        client_key_pem=directory / "client.key",
        client_keystore_pem=directory / "client-keystore.pem",
        client_keystore_jks=directory / "client-keystore.jks",
        truststore_jks=directory / "truststore.jks",
    )
