"""Build an ``ssl.SSLContext`` from PEM material (file or inline, as Kafka's PEM stores accept).

Kafka's PEM parser (DefaultSslEngineFactory.PemParser) tolerates PEM blocks whose base64 body
was folded onto one line by a properties continuation; Python's ``ssl`` does not, so blocks
are re-wrapped first. ``SSLContext.load_cert_chain`` only reads files, so an inline key is
written to a private temporary file (mode 0600) that is removed right after loading.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile

from kconfigs.errors import ValidationError
from kconfigs.kafka_admin.security import PemMaterial

_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)
_BASE64_LINE_CHARS = 64


def normalize_pem(text: str) -> str:
    """Re-wrap every PEM block to canonical 64-column lines. :raises ValidationError: none found."""
    blocks = []
    for label, body in _BLOCK.findall(text):
        # Encrypted traditional keys carry "Proc-Type:"/"DEK-Info:" headers that must stay lines.
        header_lines = [ln.strip() for ln in body.strip().splitlines() if ":" in ln]
        payload = "".join(ln for ln in body.split() if ":" not in ln and "," not in ln)
        lines = [payload[i : i + _BASE64_LINE_CHARS] for i in range(0, len(payload), _BASE64_LINE_CHARS)]
        header = "\n".join(header_lines) + "\n\n" if header_lines else ""
        blocks.append(f"-----BEGIN {label}-----\n{header}" + "\n".join(lines) + f"\n-----END {label}-----\n")
    if not blocks:
        raise ValidationError("no PEM block (-----BEGIN ...-----) found in the SSL settings")
    return "".join(blocks)


def build_ssl_context(pem: PemMaterial, check_hostname: bool) -> ssl.SSLContext:
    """A client TLS context: PEM CAs (or the system store), optional client key pair.

    :raises ValidationError: unreadable certificates or key (message names no secret).
    """
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.check_hostname = check_hostname
    try:
        if pem.ca_pem:
            context.load_verify_locations(cadata=normalize_pem(pem.ca_pem))
    except ssl.SSLError as err:
        raise ValidationError(f"Cannot load the SSL truststore certificates: {err.reason or err}") from None
    if pem.cert_chain_pem and pem.key_pem:
        _load_key_pair(context, pem)
    return context


def _load_key_pair(context: ssl.SSLContext, pem: PemMaterial) -> None:
    certs = normalize_pem(pem.cert_chain_pem)
    key = normalize_pem(pem.key_pem)
    only_certs = "".join(b.group(0) + "\n" for b in _BLOCK.finditer(certs) if "CERTIFICATE" in b.group(1))
    only_key = "".join(b.group(0) + "\n" for b in _BLOCK.finditer(key) if "KEY" in b.group(1))
    with tempfile.TemporaryDirectory(prefix="kconfigs-tls-") as private_dir:
        os.chmod(private_dir, 0o700)
        cert_path = os.path.join(private_dir, "chain.pem")
        key_path = os.path.join(private_dir, "key.pem")
        for path, content in ((cert_path, only_certs), (key_path, only_key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(content)
        try:
            context.load_cert_chain(cert_path, key_path, password=pem.key_password)
        except ssl.SSLError as err:
            raise ValidationError(
                f"Cannot load the SSL keystore key pair: {err.reason or 'bad key or password'}"
            ) from None
