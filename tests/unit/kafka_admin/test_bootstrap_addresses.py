"""bootstrap.servers checks, vectors from ClientUtils.parseAndValidateAddresses (Kafka 3.9.2 and
4.3.1 print the same texts; the integration differential test compares generated ones)."""

import pytest

from kconfigs.errors import UsageError
from kconfigs.kafka_admin.bootstrap_addresses import bootstrap_addresses

KNOWN = {"", "localhost", "127.0.0.1", "::1", "broker-1.example"}


def resolves(host):
    return host in KNOWN


@pytest.mark.parametrize(
    "servers, addresses",
    [
        ("localhost:9092", [("localhost", 9092)]),
        (" localhost:9092 , 127.0.0.1:1 ", [("localhost", 9092), ("127.0.0.1", 1)]),
        ("PLAINTEXT://broker-1.example:9093", [("broker-1.example", 9093)]),
        ("[::1]:9092,,", [("::1", 9092)]),
        (":9092", [("", 9092)]),
        ("nosuch:1,localhost:2", [("localhost", 2)]),
    ],
)
def test_usable_entries(servers, addresses):
    assert bootstrap_addresses(servers, resolves) == addresses


@pytest.mark.parametrize(
    "servers, message",
    [
        ("notaport", "Invalid url in bootstrap.servers: notaport"),
        ("localhost:9092,notaport", "Invalid url in bootstrap.servers: notaport"),
        ("localhost:", "Invalid url in bootstrap.servers: localhost:"),
        ("host name:1", "Invalid url in bootstrap.servers: host name:1"),
        ("localhost:70000", "Invalid port in bootstrap.servers: localhost:70000"),
        ("nosuch:1", "No resolvable bootstrap urls given in bootstrap.servers"),
        (" , ", "No resolvable bootstrap urls given in bootstrap.servers"),
        ("", "You must set either bootstrap.servers or bootstrap.controllers"),
        ("  ", "You must set either bootstrap.servers or bootstrap.controllers"),
    ],
)
def test_refusals_carry_kafkas_text(servers, message):
    with pytest.raises(UsageError) as err:
        bootstrap_addresses(servers, resolves)
    assert str(err.value) == message
