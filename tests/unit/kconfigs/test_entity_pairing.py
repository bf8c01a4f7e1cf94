"""How kafka-configs pairs entity types with names (spec §1.1) and which ZooKeeper entity a
command line means (ConfigCommandTest cases 5, 24 and 25 of spec §8)."""

import itertools

import pytest

from kconfigs import args as A
from kconfigs.errors import UsageError
from kconfigs.ip_names import is_valid_ip_entity
from kconfigs.model import DEFAULT, EntityType, FilterComponent, Match, QuotaEntity
from kconfigs.targets import bootstrap_pairs, describe_target, entity_of, zk_pairs

ZK = ["--zookeeper", "localhost:2181"]


def types_and_names(argv):
    opts = A.parse_argv(argv)
    return A.entity_types(opts), A.entity_names(opts)


def checked(argv):
    opts = A.parse_argv(ZK + argv)
    A.check_args(opts, is_valid_ip_entity)
    return A.entity_types(opts), A.entity_names(opts)


def alter_path(argv):
    types, names = checked(["--alter", "--add-config", "a=b"] + argv)
    return entity_of(zk_pairs(types, names, alter=True)).path


def describe_filter(argv):
    types, names = checked(["--describe"] + argv)
    return describe_target(zk_pairs(types, names, alter=False))


@pytest.mark.parametrize(
    "argv, types, names",
    [
        ("--entity-type users --entity-type clients --entity-name A --entity-default", ["users", "clients"], ["A", ""]),
        ("--entity-default --entity-name B --entity-type users --entity-type clients", ["users", "clients"], ["", "B"]),
        ("--client B --user A", ["clients", "users"], ["B", "A"]),
        ("--client B --user-defaults", ["clients", "users"], ["B", ""]),
        ("--user A --client B", ["clients", "users"], ["B", "A"]),  # shorthand order is fixed, not typed
        ("--entity-type ips --entity-name 1.2.3.4", ["ips"], ["1.2.3.4"]),
        ("--ip 1.2.3.4", ["ips"], ["1.2.3.4"]),
        ("--entity-type users", ["users"], []),
        ("--ip-defaults --client-defaults", ["clients", "ips"], ["", ""]),
        ("--entity-type users --entity-name ", ["users"], [""]),
    ],
)
def test_types_and_names_are_built_in_kafkas_order(argv, types, names):
    assert types_and_names(argv.split(" ")) == (types, names)


@pytest.mark.parametrize(
    "argv, path",
    [
        (["--entity-type", "clients", "--entity-name", "client-1"], "clients/client-1"),
        (["--entity-type", "clients", "--entity-default"], "clients/<default>"),
        (["--entity-type", "clients", "--entity-name", ""], "clients/<default>"),
        (
            ["--entity-type", "users", "--entity-name", "CN=ConfigCommandTest,O=Apache,L=<default>"],
            "users/CN%3DConfigCommandTest%2CO%3DApache%2CL%3D%3Cdefault%3E",
        ),
        (["--user", "<default>"], "users/%3Cdefault%3E"),
        (["--client", "<default>"], "clients/%3Cdefault%3E"),
        (["--user-defaults"], "users/<default>"),
        (["--user", "u", "--client-defaults"], "users/u/clients/<default>"),
        (["--user-defaults", "--client", "client-1"], "users/<default>/clients/client-1"),
        (["--user-defaults", "--client-defaults"], "users/<default>/clients/<default>"),
        (
            [
                "--entity-type",
                "users",
                "--entity-name",
                "CN=user1",
                "--entity-type",
                "clients",
                "--entity-name",
                "client1?@%",
            ],
            "users/CN%3Duser1/clients/client1%3F%40%25",
        ),
        (["--ip", "1.2.3.4"], "ips/1.2.3.4"),
        (["--ip", "<default>"], "ips/<default>"),  # ips are not sanitized: the typed <default> IS the default
        (["--entity-type", "ips", "--entity-default"], "ips/<default>"),
        (["--ip", "::1"], "ips/::1"),
    ],
)
def test_alter_writes_the_entity_kafka_writes(argv, path):
    assert alter_path(argv) == path


def _interleavings():
    """Every way to spell (user CN=user1, client client1) that ConfigCommandTest checks."""
    user, client = ("users", "CN=user1"), ("clients", "client1")
    for first, second in itertools.permutations([user, client]):
        yield [
            "--entity-type",
            first[0],
            "--entity-name",
            first[1],
            "--entity-type",
            second[0],
            "--entity-name",
            second[1],
        ]
        yield [
            "--entity-type",
            first[0],
            "--entity-type",
            second[0],
            "--entity-name",
            first[1],
            "--entity-name",
            second[1],
        ]
        yield [
            "--entity-name",
            first[1],
            "--entity-name",
            second[1],
            "--entity-type",
            first[0],
            "--entity-type",
            second[0],
        ]
    yield ["--user", "CN=user1", "--client", "client1"]
    yield ["--client", "client1", "--user", "CN=user1"]


@pytest.mark.parametrize("argv", list(_interleavings()))
def test_every_interleaving_of_user_and_client_names_the_same_znode(argv):
    assert alter_path(argv) == "users/CN%3Duser1/clients/client1"


def test_a_single_name_with_clients_first_binds_to_the_user():
    target = describe_filter(["--entity-type", "clients", "--entity-name", "CN=user1", "--entity-type", "users"])
    assert target.entity_filter.components == (
        FilterComponent(EntityType.USER, Match.EXACT, "CN=user1"),
        FilterComponent(EntityType.CLIENT_ID, Match.ANY),
    )
    assert target.exact is None


def test_clients_and_users_unnamed_lists_all_tuples():
    target = describe_filter(["--entity-type", "clients", "--entity-type", "users"])
    assert target.entity_filter.components == (
        FilterComponent(EntityType.USER, Match.ANY),
        FilterComponent(EntityType.CLIENT_ID, Match.ANY),
    )


def test_unnamed_clients_describe_lists_every_client():
    target = describe_filter(["--entity-type", "clients"])
    assert target.entity_filter.components == (FilterComponent(EntityType.CLIENT_ID, Match.ANY),)
    assert not target.skip_empty_users


def test_only_the_all_users_listing_skips_empty_user_nodes():
    assert describe_filter(["--entity-type", "users"]).skip_empty_users
    assert not describe_filter(["--entity-type", "users", "--entity-type", "clients"]).skip_empty_users
    assert not describe_filter(["--user", "u"]).skip_empty_users


def test_a_fully_named_describe_targets_exactly_that_entity():
    target = describe_filter(["--user", "u", "--client-defaults"])
    assert target.exact == QuotaEntity(user="u", client_id=DEFAULT)


@pytest.mark.parametrize(
    "argv",
    [
        ["--entity-type", "users", "--entity-name", "u", "--entity-type", "clients"],
        ["--entity-type", "clients", "--entity-name", "c", "--entity-type", "users"],
    ],
)
def test_alter_of_a_tuple_with_one_name_fails_in_parse_entity(argv):
    with pytest.raises(
        UsageError, match="^--entity-name or --entity-default must be specified with each --entity-type for --alter$"
    ):
        alter_path(argv)


def test_alter_of_a_tuple_with_no_name_fails_in_check_args():
    with pytest.raises(UsageError, match="^an entity-name or default entity must be specified with --alter"):
        alter_path(["--entity-type", "users", "--entity-type", "clients"])


def test_bootstrap_pairs_positionally_without_reordering():
    assert bootstrap_pairs(["clients", "users"], ["c", ""]) == [("clients", "c"), ("users", DEFAULT)]
    assert bootstrap_pairs(["users", "clients"], ["u"]) == [("users", "u"), ("clients", None)]
    with pytest.raises(UsageError, match="^More entity names specified than entity types$"):
        bootstrap_pairs(["users"], ["a", "b"])
