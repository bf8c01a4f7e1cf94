"""The mTLS principal the gateway gives a certificate is the name a Kafka broker gives it (its
default principal builder: ``X500Principal.getName()`` through the DEFAULT mapping rule), so a
quota set on the principal Kafka sees holds through the gateway. Kafka's own classes on a JDK are
the reference: subjects as PKIs issue them (an e-mail address, multi-valued RDNs, domain
components, attributes RFC 2253 has no keyword for) and generated names full of characters that
need escaping, in every string type a certificate may carry. JDKs after 17 decode a BMPString
differently (docs/gateway.md): those subjects are compared only on JDK 17, the suite's JDK."""

from __future__ import annotations

import base64
import datetime
import random
import subprocess
from pathlib import Path

import pytest

from harness.javac import java_program_command
from harness.versions import KAFKA_4_VERSION

pytestmark = pytest.mark.integration
PROGRAM = Path(__file__).resolve().parent / "java" / "CertificatePrincipals.java"
#: characters RFC 2253 escapes or the JDK treats specially, and some that need more than a byte
TRICKY = ' ,=+<>#;"\\\r\x00aZ9-_.é€😀'
GENERATED = 40


def _subjects() -> list[list[list[tuple[str, str, str]]]]:
    """Subjects as lists of RDNs, each a list of (attribute, value, ASN.1 string type)."""
    utf8, printable, ia5 = "UTF8String", "PrintableString", "IA5String"
    subjects = [
        [[("O", "acme", utf8)], [("CN", "alice", utf8)]],
        # openssl's default prompts end with an e-mail address (pkcs9 emailAddress: no keyword)
        [[("C", "DE", printable)], [("O", "acme", utf8)], [("CN", "bob", utf8)], [("EMAIL", "bob@acme.example", ia5)]],
        [[("DC", "com", ia5)], [("DC", "acme", ia5)], [("OU", "eng", utf8)], [("CN", "carol", utf8)]],
        [[("CN", "dave", utf8), ("UID", "d42", utf8)]],  # multi-valued RDN
        [[("CN", 'a=b#c,d+e;f<g>h"i\\j', utf8)]],
        [[("CN", "  two spaces each side  ", utf8)]],
        [[("CN", "#hash first", utf8)]],
        [[("CN", "svc", utf8)], [("SERIALNUMBER", "1234", printable)], [("TITLE", "ops", utf8)]],
        [[("CN", "bmp é€", "BMPString")], [("O", "t61", "T61String")], [("OU", "42", "NumericString")]],
        [[("CN", "visible", "VisibleString")], [("L", "Zürich", utf8)], [("ST", "ZH", utf8), ("STREET", "x 1", utf8)]],
        [],  # an empty subject
    ]
    rng = random.Random(20261128)
    for _ in range(GENERATED):
        value = "".join(rng.choice(TRICKY) for _ in range(rng.randint(1, 12)))
        kind = rng.choice([utf8, utf8, "BMPString"])
        if kind == "BMPString":  # UCS-2: characters of the basic multilingual plane only
            value = "".join(c for c in value if ord(c) < 0x10000) or "x"
        subjects.append([[("O", "gen", utf8)], [("CN", value, kind)]])
    return subjects


def _has_bmp_string(subject) -> bool:
    return any(kind == "BMPString" for rdn in subject for _attr, _value, kind in rdn)


def _certificates(directory: Path, subjects) -> list[Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.name import _ASN1Type
    from cryptography.x509.oid import NameOID

    oids = {
        "CN": NameOID.COMMON_NAME,
        "O": NameOID.ORGANIZATION_NAME,
        "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
        "C": NameOID.COUNTRY_NAME,
        "L": NameOID.LOCALITY_NAME,
        "ST": NameOID.STATE_OR_PROVINCE_NAME,
        "STREET": NameOID.STREET_ADDRESS,
        "DC": NameOID.DOMAIN_COMPONENT,
        "UID": NameOID.USER_ID,
        "EMAIL": NameOID.EMAIL_ADDRESS,
        "SERIALNUMBER": NameOID.SERIAL_NUMBER,
        "TITLE": NameOID.TITLE,
    }
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    paths = []
    for n, rdns in enumerate(subjects):
        name = x509.Name(
            [
                x509.RelativeDistinguishedName(
                    [x509.NameAttribute(oids[attr], value, _ASN1Type[kind]) for attr, value, kind in rdn]
                )
                for rdn in rdns
            ]
        )
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "issuer")]))
            .public_key(key.public_key())
            .serial_number(n + 1)
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256())
        )
        path = directory / f"cert-{n}.der"
        path.write_bytes(cert.public_bytes(serialization.Encoding.DER))
        paths.append(path)
    return paths


def _kafka_principals(paths: list[Path]) -> tuple[str, list[str]]:
    """The JDK's specification version, and the principal Kafka gives each certificate."""
    result = subprocess.run(
        java_program_command(PROGRAM, KAFKA_4_VERSION, [str(p) for p in paths]),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    jdk, *names = result.stdout.splitlines()
    return jdk, [base64.b64decode(line).decode("utf-8") for line in names]


def test_the_gateways_mtls_principal_is_the_one_kafka_gives_the_certificate(tmp_path):
    from kconfigs_enforcement._native import testing

    subjects = _subjects()
    paths = _certificates(tmp_path, subjects)
    jdk, kafka = _kafka_principals(paths)
    ours = [testing.certificate_principal(p.read_bytes()) for p in paths]
    assert len(kafka) == len(paths)
    compared = [jdk == "17" or not _has_bmp_string(s) for s in subjects]
    mismatches = [(k, o) for k, o, c in zip(kafka, ours, compared) if c and k != o]
    assert mismatches == [], f"{len(mismatches)} of {len(paths)} differ (Kafka's, the gateway's)"
    # the e-mail address is hex, as the JDK writes an attribute without an RFC 2253 keyword
    assert kafka[1].startswith("1.2.840.113549.1.9.1=#16")
