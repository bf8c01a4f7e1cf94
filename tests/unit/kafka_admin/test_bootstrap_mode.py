"""kafka-configs --bootstrap-server quota texts (Kafka 3.9 ConfigCommand; spec 2.4, 4.2, 8)."""

import pytest

from kconfigs.bootstrap_mode import (
    alter_done_line,
    alter_entity,
    check_alter_keys,
    describe_filter,
    describe_line,
    describe_lines,
    quota_update,
)
from kconfigs.errors import UsageError, ValidationError
from kconfigs.model import DEFAULT, EntityType, FilterComponent, Match, QuotaEntity, QuotaRecord


def test_describe_line_uses_java_double_formatting_and_fixed_entity_order():
    # keys in the order of the admin client's HashMap (JDK 17), not the response's
    record = QuotaRecord(
        QuotaEntity(user="user1", client_id="clientA"), {"producer_byte_rate": "1024", "consumer_byte_rate": "10485760"}
    )
    assert describe_line(record) == (
        "Quota configs for user-principal 'user1', client-id 'clientA' are "
        "consumer_byte_rate=1.048576E7, producer_byte_rate=1024.0"
    )


def test_describe_lines_follow_the_admin_clients_hash_maps():
    # the orders a JDK 17 printed for new HashMap<>(n) filled in the response's order, the
    # entities hashing as ClientQuotaEntity does (Objects.hash(entries))
    keys = ["request_percentage", "controller_mutation_rate", "consumer_byte_rate", "producer_byte_rate"]
    records = [
        QuotaRecord(QuotaEntity(user="alice", client_id=DEFAULT), {key: "1" for key in keys}),
        QuotaRecord(QuotaEntity(client_id="app"), {"producer_byte_rate": "2"}),
        QuotaRecord(QuotaEntity(ip="10.0.0.1"), {"connection_creation_rate": "3"}),
    ]
    assert describe_lines(records) == [
        "Quota configs for ip '10.0.0.1' are connection_creation_rate=3.0",
        "Quota configs for user-principal 'alice', the default client-id are producer_byte_rate=1.0, "
        "consumer_byte_rate=1.0, controller_mutation_rate=1.0, request_percentage=1.0",
        "Quota configs for client-id 'app' are producer_byte_rate=2.0",
    ]


def test_describe_line_defaults_and_ip_and_empty():
    assert (
        describe_line(QuotaRecord(QuotaEntity(user=DEFAULT, client_id=DEFAULT), {"request_percentage": "50"}))
        == "Quota configs for the default user-principal, the default client-id are request_percentage=50.0"
    )
    assert (
        describe_line(QuotaRecord(QuotaEntity(ip="1.2.3.4"), {"connection_creation_rate": "100"}))
        == "Quota configs for ip '1.2.3.4' are connection_creation_rate=100.0"
    )
    assert describe_line(QuotaRecord(QuotaEntity(user="scram-only"), {})) is None


@pytest.mark.parametrize(
    "types,names,line",
    [
        (["users"], ["admin"], "Completed updating config for user admin."),
        (["clients"], ["clientA"], "Completed updating config for client clientA."),
        (["ips"], ["1.2.3.4"], "Completed updating config for ip 1.2.3.4."),
        (["users"], [""], "Completed updating default config for users in the cluster."),
        (["clients", "users"], ["c", "u"], "Completed updating config for client c."),
        (["users", "clients"], ["", "c"], "Completed updating default config for users in the cluster."),
    ],
)
def test_alter_done_line_uses_first_type_and_name(types, names, line):
    assert alter_done_line(types, names) == line


def test_describe_filter_maps_name_default_and_absent_like_get_all_client_quotas_configs():
    assert describe_filter(["users", "clients"], ["u"]).components == (
        FilterComponent(EntityType.USER, Match.EXACT, "u"),
        FilterComponent(EntityType.CLIENT_ID, Match.ANY),
    )
    assert describe_filter(["ips"], [""]).components == (FilterComponent(EntityType.IP, Match.DEFAULT),)
    assert describe_filter(["ips"], []).strict is True
    with pytest.raises(UsageError, match="^More entity names specified than entity types$"):
        describe_filter(["users"], ["a", "b"])


def test_alter_entity_pairs_by_index():
    assert alter_entity(["clients", "users"], ["c", ""]) == QuotaEntity(user=DEFAULT, client_id="c")
    with pytest.raises(UsageError, match="^An entity name must be specified for every entity type$"):
        alter_entity(["users", "clients"], ["u"])


# Case numbers refer to kafka-configs spec section 8.
def test_ips_unknown_keys_joined_with_commas_case_11():
    with pytest.raises(UsageError) as err:
        check_alter_keys(["ips"], ["127.0.0.1"], {"connection_creation_rate": "1", "some_config": "10"}, ["b"])
    assert str(err.value) == (
        "Only connection quota configs can be added for 'ips' using --bootstrap-server. "
        "Unexpected config names: some_config,b"
    )


def test_users_unknown_add_and_delete_render_as_scala_collections_case_15():
    # Observed from Kafka 3.9.2: "...Unexpected config names: Set(some_config, b)" and "ArrayBuffer(some_config)"
    with pytest.raises(UsageError) as err:
        check_alter_keys(["users"], ["u1"], {"some_config": "1", "b": "2"}, [])
    assert str(err.value).endswith(
        "can be added for 'users' using --bootstrap-server. Unexpected config names: Set(some_config, b)"
    )
    with pytest.raises(UsageError) as err:
        check_alter_keys(["users"], ["u1"], {}, ["some_config", "SCRAM-SHA-256"])
    assert str(err.value) == (
        "Only quota and SCRAM credential configs can be deleted for 'users' using "
        "--bootstrap-server. Unexpected config names: ArrayBuffer(some_config)"
    )


def test_scram_on_clients_is_rejected_case_16():
    with pytest.raises(UsageError, match=r"^Only quota configs can be added for 'clients' .*Set\(SCRAM-SHA-256\)$"):
        check_alter_keys(["clients"], ["admin"], {"SCRAM-SHA-256": "[iterations=8192,password=foo]"}, [])
    with pytest.raises(UsageError, match=r"deleted for 'clients' .*ArrayBuffer\(SCRAM-SHA-256\)$"):
        check_alter_keys(["users", "clients"], ["u", "c"], {}, ["SCRAM-SHA-256"])


def test_scram_with_quota_or_default_user_cases_18_19():
    with pytest.raises(UsageError, match="^Cannot alter both quota and SCRAM credential configs simultaneously"):
        check_alter_keys(["users"], ["u"], {"consumer_byte_rate": "1"}, ["SCRAM-SHA-256"])
    with pytest.raises(UsageError, match="^The use of --entity-default or --user-defaults is not allowed"):
        check_alter_keys(["users"], [""], {"SCRAM-SHA-512": "[password=x]"}, [])


def test_check_alter_keys_selects_the_api():
    assert check_alter_keys(["users"], ["u"], {"producer_byte_rate": "1"}, []) == "quota"
    assert check_alter_keys(["users"], ["u"], {"SCRAM-SHA-256": "[password=x]"}, []) == "scram"


def test_quota_update_rejects_missing_deletes_and_changes_nothing_case_22():
    update = quota_update({"producer_byte_rate": "10"}, ["missing_config1", "request_percentage", "missing_config2"])
    current = {"request_percentage": "50.0"}
    with pytest.raises(ValidationError, match="^Invalid config\\(s\\): missing_config1,missing_config2$"):
        update(current)
    assert current == {"request_percentage": "50.0"}


def test_quota_update_applies_adds_and_deletes_case_14():
    update = quota_update({"consumer_byte_rate": "20000", "producer_byte_rate": "10000"}, ["request_percentage"])
    assert update({"request_percentage": "50.0"}) == {"consumer_byte_rate": "20000", "producer_byte_rate": "10000"}
    with pytest.raises(ValidationError, match="^Cannot parse quota configuration value for k: abc$"):
        quota_update({"k": "abc"}, [])({})
