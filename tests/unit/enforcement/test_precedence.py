"""8-level precedence, sensor tags and sharing (DefaultQuotaCallback, ClientQuotaManagerTest)."""

from __future__ import annotations

import pytest

from kconfigs_enforcement import QuotaSnapshot

ALL_LEVELS = [
    ({"user": "alice", "client-id": "app"}, 1),
    ({"user": "alice", "client-id": None}, 2),
    ({"user": "alice"}, 3),
    ({"user": None, "client-id": "app"}, 4),
    ({"user": None, "client-id": None}, 5),
    ({"user": None}, 6),
    ({"client-id": "app"}, 7),
    ({"client-id": None}, 8),
]
KEY = "producer_byte_rate"


def snap(levels, key=KEY):
    return QuotaSnapshot.from_records((entity, {key: 1000 * level}) for entity, level in levels)


@pytest.mark.parametrize("winner", range(1, 9))
def test_most_specific_configured_level_wins(winner):
    snapshot = snap([lv for lv in ALL_LEVELS if lv[1] >= winner])
    resolved = snapshot.resolve("alice", "app", KEY)
    assert (resolved.value, resolved.level) == (1000.0 * winner, winner)


def test_user_default_client_beats_client_default():
    snapshot = snap([({"user": None, "client-id": None}, 5), ({"client-id": None}, 8)])
    assert snapshot.resolve("bob", "x", KEY).path == "/config/users/<default>/clients/<default>"


def test_user_client_default_beats_plain_user():
    snapshot = snap([({"user": "alice", "client-id": None}, 2), ({"user": "alice"}, 3)])
    resolved = snapshot.resolve("alice", "other", KEY)
    assert resolved.path == "/config/users/alice/clients/<default>"
    assert resolved.metric_tags == {"user": "alice", "client-id": "other"}  # exclusive per pair


def test_named_user_beats_default_user_client_id_pair():
    snapshot = snap([({"user": "alice"}, 3), ({"user": None, "client-id": "app"}, 4)])
    assert snapshot.resolve("alice", "app", KEY).level == 3
    assert snapshot.resolve("bob", "app", KEY).level == 4


def test_user_quota_is_shared_by_all_client_ids_of_that_user():
    snapshot = snap([({"user": "alice"}, 3), ({"client-id": "app"}, 7)])
    assert snapshot.resolve("alice", "c1", KEY).metric_tags == {"user": "alice", "client-id": ""}
    assert snapshot.resolve("alice", "c2", KEY).metric_tags == {"user": "alice", "client-id": ""}


def test_client_id_quota_is_shared_across_users():
    snapshot = snap([({"client-id": "app"}, 7)])
    for user in ("alice", "bob"):
        resolved = snapshot.resolve(user, "app", KEY)
        assert resolved.metric_tags == {"user": "", "client-id": "app"}
        assert resolved.path == "/config/clients/app"


def test_only_user_quotas_tag_every_client_by_user_even_without_a_match():
    snapshot = snap([({"user": "alice"}, 3)])
    resolved = snapshot.resolve("bob", "app", KEY)
    assert (resolved.value, resolved.level, resolved.metric_tags) == (None, 0, {"user": "bob", "client-id": ""})


def test_no_quotas_tags_by_client_id_and_is_unlimited():
    resolved = QuotaSnapshot.from_records([]).resolve("alice", "app", KEY)
    assert (resolved.value, resolved.path, resolved.metric_tags) == (None, None, {"user": "", "client-id": "app"})


def test_user_tag_is_sanitized_client_tag_raw_and_path_sanitized():
    snapshot = snap([({"user": "CN=a b", "client-id": "c*1"}, 1)])
    resolved = snapshot.resolve("CN=a b", "c*1", KEY)
    assert resolved.metric_tags == {"user": "CN%3Da%20b", "client-id": "c*1"}
    assert resolved.path == "/config/users/CN%3Da%20b/clients/c%2A1"


def test_quota_types_resolve_independently():
    snapshot = QuotaSnapshot.from_records(
        [({"user": "alice"}, {"producer_byte_rate": 10}), ({"client-id": "app"}, {"consumer_byte_rate": 20})]
    )
    assert snapshot.resolve("alice", "app", "producer_byte_rate").level == 3
    assert snapshot.resolve("alice", "app", "consumer_byte_rate").level == 7
    assert snapshot.resolve("alice", "app", "request_percentage").value is None


def test_zookeeper_mode_enables_levels_for_every_quota_type():
    # ZK brokers call updateQuota on all four managers for any change of an entity; KRaft only on
    # the manager of the key that changed. A user-only producer quota therefore switches the
    # consumer tag shape to (user, "") in ZooKeeper mode only.
    records = [({"user": "alice"}, {"producer_byte_rate": 10})]
    kraft = QuotaSnapshot.from_records(records)
    zk = QuotaSnapshot.from_records(records, zookeeper_masks=True)
    assert (kraft.enabled_mask("consumer_byte_rate"), zk.enabled_mask("consumer_byte_rate")) == (0, 2)
    assert kraft.resolve("bob", "app", "consumer_byte_rate").metric_tags == {"user": "", "client-id": "app"}
    assert zk.resolve("bob", "app", "consumer_byte_rate").metric_tags == {"user": "bob", "client-id": ""}


def test_ip_quota_beats_default_ip():
    snapshot = QuotaSnapshot.from_records(
        [({"ip": "10.0.0.1"}, {"connection_creation_rate": 5}), ({"ip": None}, {"connection_creation_rate": 50})]
    )
    assert (snapshot.resolve_ip("10.0.0.1").value, snapshot.resolve_ip("10.0.0.1").path) == (
        5.0,
        "/config/ips/10.0.0.1",
    )
    assert (snapshot.resolve_ip("10.0.0.2").value, snapshot.resolve_ip("10.0.0.2").level) == (50.0, 2)
    assert QuotaSnapshot.from_records([]).resolve_ip("10.0.0.2").value is None


def test_producer_ids_rate_is_per_user_only():
    snapshot = QuotaSnapshot.from_records(
        [({"user": None}, {"producer_ids_rate": 7}), ({"user": "alice", "client-id": "app"}, {"producer_ids_rate": 1})]
    )
    resolved = snapshot.resolve("alice", "app", "producer_ids_rate")
    assert (resolved.value, resolved.path, resolved.metric_tags) == (7.0, "/config/users/<default>", {"user": "alice"})


def test_invalid_entity_is_rejected():
    with pytest.raises(ValueError):
        QuotaSnapshot.from_records([({"ip": "1.2.3.4", "user": "u"}, {"producer_byte_rate": 1})])


@pytest.mark.parametrize("name", ["127.1", "127.0.0.1", "::ffff:127.0.0.1", "2130706433"])
@pytest.mark.parametrize("client", ["127.0.0.1", "::ffff:127.0.0.1", "127.1"])
def test_an_ip_quota_holds_for_every_name_of_its_address(name, client):
    # Kafka keys ip quotas by InetAddress.getByName(name): a quota set on 127.1 holds for a client
    # from 127.0.0.1 (a dual-stack listener sees it as ::ffff:127.0.0.1)
    snapshot = QuotaSnapshot.from_records(
        [({"ip": name}, {"connection_creation_rate": 5}), ({"ip": None}, {"connection_creation_rate": 50})]
    )
    resolved = snapshot.resolve_ip(client)
    assert (resolved.value, resolved.level, resolved.path) == (5.0, 1, f"/config/ips/{name}")


def test_of_two_names_of_one_address_the_later_holds():
    snapshot = QuotaSnapshot.from_records(
        [({"ip": "10.0.0.1"}, {"connection_creation_rate": 5}), ({"ip": "10.1"}, {"connection_creation_rate": 7})]
    )
    assert (snapshot.resolve_ip("10.0.0.1").value, snapshot.resolve_ip("10.0.0.1").path) == (7.0, "/config/ips/10.1")
    assert snapshot.resolve_ip("[::1]").value is None and snapshot.resolve_ip("10.0.0.2").value is None
