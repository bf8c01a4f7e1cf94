"""kafka-configs 2.8 ZooKeeper-mode output lines (spec §4.1) and kconfigs' JSON."""

import json

import pytest

from kconfigs.model import DEFAULT, QuotaEntity, QuotaRecord
from kconfigs.render import records_json, zk_alter_line, zk_describe_line, zk_entity_text


@pytest.mark.parametrize(
    "entity, text",
    [
        (QuotaEntity(user="CN=user1"), "user-principal 'CN=user1'"),
        (QuotaEntity(user=DEFAULT), "default user-principal"),
        (QuotaEntity(client_id="clientA"), "client-id 'clientA'"),
        (QuotaEntity(client_id=DEFAULT), "default client-id"),
        (QuotaEntity(ip="1.2.3.4"), "ips '1.2.3.4'"),
        (QuotaEntity(ip=DEFAULT), "default ips"),
        (QuotaEntity(user="user1", client_id="clientA"), "user-principal 'user1', client-id 'clientA'"),
        (QuotaEntity(user="user1", client_id=DEFAULT), "user-principal 'user1', default client-id"),
        (QuotaEntity(user=DEFAULT, client_id=DEFAULT), "default user-principal, default client-id"),
        (QuotaEntity(user="<default>"), "user-principal '<default>'"),  # a user literally named <default>
        (QuotaEntity(user="a b", client_id="client1?@%"), "user-principal 'a b', client-id 'client1?@%'"),
    ],
)
def test_entity_text(entity, text):
    assert zk_entity_text(entity) == text


def test_alter_line():
    assert zk_alter_line(QuotaEntity(client_id=DEFAULT)) == "Completed updating config for entity: default client-id."
    assert zk_alter_line(QuotaEntity(ip="1.2.3.4")) == "Completed updating config for entity: ips '1.2.3.4'."


def test_describe_line_joins_raw_values_without_spaces_in_the_order_of_a_properties():
    # a JDK 17 Properties given producer_byte_rate then request_percentage iterates them reversed
    record = QuotaRecord(
        QuotaEntity(user="u", client_id="c"), {"producer_byte_rate": "1024", "request_percentage": "50"}
    )
    assert (
        zk_describe_line(record)
        == "Configs for user-principal 'u', client-id 'c' are request_percentage=50,producer_byte_rate=1024"
    )


def test_describe_line_of_an_empty_entity_ends_with_a_space():
    assert zk_describe_line(QuotaRecord(QuotaEntity(client_id="nosuch"), {})) == "Configs for client-id 'nosuch' are "


def test_json_is_a_list_of_entity_and_numeric_quotas():
    records = [
        QuotaRecord(
            QuotaEntity(user="u", client_id=DEFAULT), {"producer_byte_rate": "1024", "request_percentage": "50"}
        ),
        QuotaRecord(QuotaEntity(ip="1.2.3.4"), {"connection_creation_rate": "10"}),
        QuotaRecord(QuotaEntity(user="s"), {"SCRAM-SHA-256": "salt=x"}),
    ]
    assert json.loads(records_json(records)) == [
        {
            "entity": {"user": "u", "client-id": None},
            "quotas": {"producer_byte_rate": 1024, "request_percentage": 50.0},
        },
        {"entity": {"ip": "1.2.3.4"}, "quotas": {"connection_creation_rate": 10}},
        {"entity": {"user": "s"}, "quotas": {}},
    ]
