"""SCRAM credentials as kafka-configs' ZooKeeper mode stores them (RFC 5802 / Kafka ScramFormatter).

The password never reaches the store: ``SCRAM-SHA-256=[iterations=8192,password=pw]`` becomes
``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=8192``. Pure apart from ``salt``,
which the caller passes (a fresh random one in production, a fixed one in tests).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

from kconfigs.errors import ValidationError

MIN_ITERATIONS = 4096
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# No DOTALL: like Java's Pattern, "." stops at a line break, so such a password is refused.
_VALUE = re.compile(r"(?:iterations=([0-9]*),)?password=(.*)")


def random_salt() -> bytes:
    """Kafka's ScramFormatter.secureRandomBytes: a 130-bit random number in base 36, as bytes."""
    number = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while number:
        number, rem = divmod(number, 36)
        text = digits[rem] + text
    return (text or "0").encode("ascii")


def credential(mechanism: str, value: str, salt: bytes) -> str:
    """:raises ValidationError: with kafka-configs' messages for a bad value or iteration count."""
    enum_name = mechanism.replace("-", "_")
    match = _VALUE.fullmatch(value)
    if match is None:
        raise ValidationError(f"Invalid credential property {enum_name}={value}")
    iterations = int(match.group(1)) if match.group(1) else MIN_ITERATIONS
    if iterations < MIN_ITERATIONS:
        raise ValidationError(
            f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} required for {enum_name}"
        )
    algorithm = _HASHES[mechanism]
    salted = hashlib.pbkdf2_hmac(algorithm, match.group(2).encode("utf-8"), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", algorithm).digest()
    stored_key = hashlib.new(algorithm, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", algorithm).digest()
    b64 = lambda raw: base64.b64encode(raw).decode("ascii")  # noqa: E731
    return f"salt={b64(salt)},stored_key={b64(stored_key)},server_key={b64(server_key)},iterations={iterations}"
