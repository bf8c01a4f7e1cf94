"""SCRAM credentials as kafka-configs' ZooKeeper mode stores them (spec §7), checked against an
independent RFC 5802 computation and the RFC 7677 SCRAM-SHA-256 example exchange."""

import base64
import hashlib
import hmac
import re

import pytest

from kconfigs.errors import ValidationError
from kconfigs.scram import credential, random_salt

FORMAT = re.compile(
    r"salt=(?P<salt>[A-Za-z0-9+/=]+),stored_key=(?P<stored>[A-Za-z0-9+/=]+),"
    r"server_key=(?P<server>[A-Za-z0-9+/=]+),iterations=(?P<iterations>[0-9]+)"
)


def rfc5802_keys(hash_name, password, salt, iterations):
    """Hi() written out from RFC 5802 §2.2 (U1 = HMAC(pw, salt + INT(1)), Ui = HMAC(pw, Ui-1), XOR)."""
    u = hmac.new(password, salt + b"\x00\x00\x00\x01", hash_name).digest()
    salted = bytearray(u)
    for _ in range(iterations - 1):
        u = hmac.new(password, u, hash_name).digest()
        salted = bytearray(a ^ b for a, b in zip(salted, u))
    client_key = hmac.new(bytes(salted), b"Client Key", hash_name).digest()
    stored_key = hashlib.new(hash_name, client_key).digest()
    server_key = hmac.new(bytes(salted), b"Server Key", hash_name).digest()
    return stored_key, server_key


def parsed(value):
    match = FORMAT.fullmatch(value)
    assert match, value
    return {k: (int(v) if k == "iterations" else base64.b64decode(v)) for k, v in match.groupdict().items()}


@pytest.mark.parametrize("mechanism, hash_name", [("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")])
def test_stored_and_server_keys_match_rfc5802(mechanism, hash_name):
    salt = b"3w9kx1b2d7u0c5e8f4g6h"
    cred = parsed(credential(mechanism, "iterations=4096,password=abc, def", salt))
    assert cred["salt"] == salt and cred["iterations"] == 4096
    assert (cred["stored"], cred["server"]) == rfc5802_keys(hash_name, b"abc, def", salt, 4096)


def test_rfc7677_example_exchange_verifies_against_the_stored_credential():
    # RFC 7677 §3: user "user", password "pencil", i=4096.
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    cred = parsed(credential("SCRAM-SHA-256", "password=pencil", salt))
    auth_message = (
        b"n=user,r=rOprNGfwEbeRWgbNEkqO,"
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_signature = hmac.new(cred["stored"], auth_message, "sha256").digest()
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature))
    assert hashlib.sha256(client_key).digest() == cred["stored"]  # the server's proof check
    server_signature = hmac.new(cred["server"], auth_message, "sha256").digest()
    assert base64.b64encode(server_signature) == b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_default_iterations_is_4096_and_the_password_is_never_stored():
    value = credential("SCRAM-SHA-512", "password=1234=abc", b"salt")
    assert value.endswith(",iterations=4096") and "1234" not in value and "password" not in value


@pytest.mark.parametrize(
    "value, message",
    [
        ("iterations=100,password=x", "Iterations 100 is less than the minimum 4096 required for SCRAM_SHA_256"),
        ("pass=x", "Invalid credential property SCRAM_SHA_256=pass=x"),
        ("iterations=x,password=y", "Invalid credential property SCRAM_SHA_256=iterations=x,password=y"),
    ],
)
def test_bad_credential_values_use_kafkas_messages(value, message):
    with pytest.raises(ValidationError) as err:
        credential("SCRAM-SHA-256", value, b"salt")
    assert str(err.value) == message


def test_random_salt_is_a_base36_number_like_kafkas_secure_random_bytes():
    salts = {random_salt() for _ in range(50)}
    assert len(salts) == 50
    assert all(re.fullmatch(rb"[0-9a-z]{1,26}", s) for s in salts)
