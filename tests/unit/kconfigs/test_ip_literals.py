"""ip entity names (spec §5): the literal forms Java's InetAddress.getByName accepts; host names
only when a resolver is passed (kconfigs --resolve-hostnames)."""

import pytest

from kconfigs.ip_names import is_ipv6_literal, is_java_ipv4_literal, is_valid_ip_entity


@pytest.mark.parametrize(
    "name",
    [
        "1.2.3.4",
        "0.0.0.0",
        "255.255.255.255",
        "1",  # -> 0.0.0.1 (ConfigCommandTest: ip "1")
        "123",  # -> 0.0.0.123
        "1.2.3",  # -> 1.2.0.3
        "1.65536",  # last part fills 3 bytes -> 1.1.0.0
        "4294967295",  # one part fills 4 bytes
        "01.2.3.4",
        "::1",
        "[::1]",
        "2001:db8::1",
        "::ffff:1.2.3.4",
        "<default>",
    ],
)
def test_accepted_literals(name):
    assert is_valid_ip_entity(name)


@pytest.mark.parametrize(
    "name",
    [
        "A,B",
        "999.1.1.1",
        "admin",
        "RFC2606.invalid",
        "localhost",
        "1.2.3.4.5",
        "1.2.3.256",
        "1.16777216",
        "4294967296",
        "",
        "1..2",
        "-1",
        "1.2.3.-4",
        "fe80::1%eth0",
        "[::1",
        "::1]",
        "١.٢.٣.٤",
    ],
)
def test_rejected_names_without_resolver(name):
    assert not is_valid_ip_entity(name)


def test_host_names_are_accepted_only_through_the_resolver():
    asked = []

    def resolver(host):
        asked.append(host)
        return host == "broker.example"

    assert is_valid_ip_entity("broker.example", resolver)
    assert not is_valid_ip_entity("nosuch.invalid", resolver)
    assert is_valid_ip_entity("1.2.3.4", resolver)
    assert asked == ["broker.example", "nosuch.invalid"]  # literals never hit DNS


def test_ipv4_and_ipv6_helpers_do_not_overlap():
    assert is_java_ipv4_literal("1.2.3.4") and not is_ipv6_literal("1.2.3.4")
    assert is_ipv6_literal("::1") and not is_java_ipv4_literal("::1")
