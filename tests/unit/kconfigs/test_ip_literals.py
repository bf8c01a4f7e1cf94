"""ip entity names (spec §5): the literal forms Java's InetAddress.getByName accepts; host names
only when a resolver is passed (kconfigs --resolve-hostnames)."""

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconfigs.ip_names import address_key, is_ipv6_literal, is_java_ipv4_literal, is_valid_ip_entity


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


def _java_ipv4_forms(value: int) -> list[str]:
    """Every part count Java accepts for one address: the leading parts are bytes, the last part
    fills the bytes left (1.2.0.3 is also 1.2.3, 1.131075 and 16908291)."""
    octets = list(ipaddress.IPv4Address(value).packed)
    return [".".join([*map(str, octets[:n]), str(int.from_bytes(bytes(octets[n:]), "big"))]) for n in range(4)]


@given(st.integers(0, 2**32 - 1))
def test_every_java_form_of_an_ipv4_address_is_one_address(value):
    dotted = str(ipaddress.IPv4Address(value))
    forms = _java_ipv4_forms(value) + [f"::ffff:{dotted}", f"[::ffff:{dotted}]"]
    assert {form: address_key(form) for form in forms} == {form: dotted for form in forms}


@given(st.integers(0, 2**128 - 1))
def test_every_form_of_an_ipv6_address_is_one_address(value):
    address = ipaddress.IPv6Address(value)
    expected = str(address.ipv4_mapped or address)  # Java's getByName gives the IPv4 address
    java = ":".join(f"{int(group, 16):x}" for group in address.exploded.split(":"))  # getHostAddress: 0:0:..:1
    for form in (address.compressed, address.exploded, f"[{address.compressed}]", address.exploded.upper(), java):
        assert address_key(form) == expected


def test_a_name_that_is_no_literal_is_its_own_address():
    assert [address_key(n) for n in ("broker-1.example", "::1.2.3.4")] == ["broker-1.example", "::102:304"]
