"""Kafka's Sanitizer (spec §3.3). Expected values: org.apache.kafka.common.utils.Sanitizer from
kafka-clients 2.8.2, run on JDK 17 (``Sanitizer.sanitize`` / ``Sanitizer.desanitize``)."""

import pytest

from kconfigs.sanitize import DEFAULT_NAME, desanitize, sanitize

JDK_SANITIZED = [
    ("CN=user1", "CN%3Duser1"),
    ("alice@EXAMPLE.COM", "alice%40EXAMPLE.COM"),
    ("a b", "a%20b"),
    ("a*b", "a%2Ab"),
    ("a+b", "a%2Bb"),
    ("~x", "%7Ex"),
    ("a/b", "a%2Fb"),
    ("client1?@%", "client1%3F%40%25"),
    ("über", "%C3%BCber"),
    ("<default>", "%3Cdefault%3E"),
    ("CN=ConfigCommandTest,O=Apache,L=<default>", "CN%3DConfigCommandTest%2CO%3DApache%2CL%3D%3Cdefault%3E"),
    ("a!b'c(d)e", "a%21b%27c%28d%29e"),
    ("x\ty", "x%09y"),
    ("😀", "%F0%9F%98%80"),
    ("-._", "-._"),
    ("", ""),
]


@pytest.mark.parametrize("name, sanitized", JDK_SANITIZED)
def test_sanitize_matches_kafka_sanitizer(name, sanitized):
    assert sanitize(name) == sanitized


@pytest.mark.parametrize("name, sanitized", JDK_SANITIZED)
def test_desanitize_inverts_sanitize(name, sanitized):
    assert desanitize(sanitized) == name


@pytest.mark.parametrize("znode_name, name", [("a+b", "a b"), ("a%20b", "a b"), ("%2B", "+")])
def test_desanitize_reads_a_literal_plus_as_space_like_urldecoder(znode_name, name):
    assert desanitize(znode_name) == name


def test_a_user_literally_named_default_never_collides_with_the_default_node():
    assert sanitize(DEFAULT_NAME) != DEFAULT_NAME
