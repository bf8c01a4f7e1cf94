"""Quota entities, their ZooKeeper paths, filters and the znode JSON codec (spec §3)."""

import pytest

from kconfigs.errors import CorruptData, ValidationError
from kconfigs.model import DEFAULT, MATCH_ALL, EntityFilter, EntityType, FilterComponent, Match, QuotaEntity
from kconfigs.znode_codec import config_znode, decode_config, decode_notification, encode_config, encode_notification

PATHS = [
    (QuotaEntity(user="user1"), "users/user1"),
    (QuotaEntity(user="CN=user1"), "users/CN%3Duser1"),
    (QuotaEntity(user=DEFAULT), "users/<default>"),
    (QuotaEntity(user="<default>"), "users/%3Cdefault%3E"),
    (QuotaEntity(user="user1", client_id="clientA"), "users/user1/clients/clientA"),
    (QuotaEntity(user="user1", client_id=DEFAULT), "users/user1/clients/<default>"),
    (QuotaEntity(user=DEFAULT, client_id=DEFAULT), "users/<default>/clients/<default>"),
    (QuotaEntity(client_id="clientA"), "clients/clientA"),
    (QuotaEntity(client_id=DEFAULT), "clients/<default>"),
    (QuotaEntity(client_id="a b"), "clients/a%20b"),
    (QuotaEntity(ip="1.2.3.4"), "ips/1.2.3.4"),
    (QuotaEntity(ip="::1"), "ips/::1"),
    (QuotaEntity(ip=DEFAULT), "ips/<default>"),
]


@pytest.mark.parametrize("entity, path", PATHS)
def test_entity_path_is_kafkas_entity_path(entity, path):
    assert entity.path == path
    assert QuotaEntity.from_path(path) == entity


@pytest.mark.parametrize("path", ["users", "users/a/clients", "topics/t", "users/a/b/c", "clients/a/clients/b"])
def test_invalid_entity_paths_are_rejected(path):
    with pytest.raises(ValidationError, match="Invalid quota entity path"):
        QuotaEntity.from_path(path)


def test_entity_needs_a_component_and_ip_stands_alone():
    with pytest.raises(ValidationError):
        QuotaEntity()
    with pytest.raises(ValidationError, match="IP entity should not be used with user/client ID entity"):
        QuotaEntity(user="u", ip="1.2.3.4")


def test_json_form_uses_null_for_defaults():
    entity = QuotaEntity(user="u", client_id=DEFAULT)
    assert entity.to_json() == {"user": "u", "client-id": None}
    assert QuotaEntity.from_json(entity.to_json()) == entity
    with pytest.raises(ValidationError, match="Unknown quota entity type"):
        QuotaEntity.from_json({"topic": "t"})


def test_strict_filter_requires_exactly_the_named_components():
    users_any = EntityFilter((FilterComponent(EntityType.USER, Match.ANY),))
    assert users_any.matches(QuotaEntity(user="u")) and users_any.matches(QuotaEntity(user=DEFAULT))
    assert not users_any.matches(QuotaEntity(user="u", client_id="c"))
    default_only = EntityFilter((FilterComponent(EntityType.USER, Match.DEFAULT),))
    assert default_only.matches(QuotaEntity(user=DEFAULT)) and not default_only.matches(QuotaEntity(user="u"))
    exact = EntityFilter(
        (FilterComponent(EntityType.USER, Match.EXACT, "u"), FilterComponent(EntityType.CLIENT_ID, Match.ANY))
    )
    assert exact.matches(QuotaEntity(user="u", client_id=DEFAULT)) and not exact.matches(
        QuotaEntity(user="v", client_id="c")
    )
    assert MATCH_ALL.matches(QuotaEntity(ip="1.2.3.4"))


def test_config_znode_is_jacksons_compact_json():
    assert (
        encode_config({"producer_byte_rate": "1024", "consumer_byte_rate": "2048"})
        == b'{"version":1,"config":{"producer_byte_rate":"1024","consumer_byte_rate":"2048"}}'
    )
    assert encode_config({}) == b'{"version":1,"config":{}}'
    assert encode_config({"k": "caf\u00e9"}) == '{"version":1,"config":{"k":"café"}}'.encode("utf-8")


@pytest.mark.parametrize(
    "data, configs",
    [
        (None, {}),
        (b"", {}),
        (b'{"version":1,"config":{}}', {}),
        (b'{"version":1,"config":{"a":"1"}}', {"a": "1"}),
        (b'{"config":{"a":"1"},"version":1}', {"a": "1"}),
    ],
)
def test_config_znodes_kafka_writes_decode(data, configs):
    assert decode_config(data, "/config/x") == configs


@pytest.mark.parametrize(
    "data", [b"garbage", b"[1]", b'{"version":1,"config":{"a":1}}', b'{"version":1,"config":[]}', b"\xff\xfe"]
)
def test_garbage_config_znode_is_corrupt_data_naming_the_path(data):
    with pytest.raises(CorruptData, match="/config/users/x"):
        decode_config(data, "/config/users/x")


def test_notification_formats():
    assert (
        encode_notification("users/CN%3Du/clients/<default>")
        == b'{"version":2,"entity_path":"users/CN%3Du/clients/<default>"}'
    )
    assert decode_notification(b'{"version":2,"entity_path":"ips/1.2.3.4"}') == "ips/1.2.3.4"
    assert decode_notification(b'{"version":1,"entity_type":"clients","entity_name":"c"}') == "clients/c"
    assert (
        decode_notification(b'{"version":1,"entity_type":"users","entity_name":"u"}') is None
    )  # v1: topics/clients only
    assert decode_notification(b'{"version":3,"entity_path":"users/u"}') is None
    assert decode_notification(b"not json") is None
    assert decode_notification(None) is None


@pytest.mark.parametrize(
    "entity_path, message",
    [
        ("users/.", 'Invalid path string "/config/users/." caused by relative paths not allowed @14'),
        ("users/..", 'Invalid path string "/config/users/.." caused by relative paths not allowed @15'),
        (
            "users/a/clients/..",
            'Invalid path string "/config/users/a/clients/.." caused by relative paths not allowed @25',
        ),
    ],
)
def test_dot_names_fail_with_zookeepers_path_message_as_in_kafka(entity_path, message):
    # kafka-configs 2.8.2 --alter --user . prints exactly the @14 line (ZooKeeper PathUtils).
    with pytest.raises(ValidationError) as err:
        config_znode(entity_path)
    assert str(err.value) == message


def test_names_with_dots_inside_are_fine():
    assert config_znode(QuotaEntity(user="...").path) == "/config/users/..."
    assert config_znode(QuotaEntity(client_id="a.b").path) == "/config/clients/a.b"
