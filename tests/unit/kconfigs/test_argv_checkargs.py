"""kafka-configs' argv parsing and ``checkArgs`` (spec §1.2): exact messages, in Kafka's order."""

import pytest

from kconfigs import args as A
from kconfigs.errors import UsageError
from kconfigs.ip_names import is_valid_ip_entity

ZK = ["--zookeeper", "localhost:2181"]
BS = ["--bootstrap-server", "localhost:9092"]


def check(argv):
    opts = A.parse_argv(argv)
    A.check_args(opts, is_valid_ip_entity)
    return opts


def message_of(argv):
    with pytest.raises(UsageError) as err:
        check(argv)
    return str(err.value)


# One row per checkArgs step; each command line passes every earlier step.
STEPS = [
    (ZK + ["--entity-type", "users"], "Command must include exactly one action: --describe, --alter"),
    (
        ZK + ["--alter", "--describe", "--entity-type", "users"],
        "Command must include exactly one action: --describe, --alter",
    ),
    (
        ZK + ["--describe", "--add-config", "a=b", "--entity-type", "users"],
        'Option "[describe]" can\'t be used with option "[add-config]"',
    ),
    (
        ZK + ["--describe", "--delete-config", "a", "--entity-type", "users"],
        'Option "[describe]" can\'t be used with option "[delete-config]"',
    ),
    (
        ZK + ["--describe", "--entity-type", "users", "--entity-type", "users"],
        "Duplicate entity type(s) specified: users",
    ),
    (ZK + ["--describe", "--user", "a", "--entity-type", "users"], "Duplicate entity type(s) specified: users"),
    (
        ZK + ["--describe", "--entity-type", "foo"],
        "Invalid entity type foo, the entity type must be one of topics,clients,users,brokers,ips with the --zookeeper argument",
    ),
    (
        BS + ["--describe", "--entity-type", "foo"],
        "Invalid entity type foo, the entity type must be one of topics,clients,users,brokers,ips,broker-loggers with the --bootstrap-server argument",
    ),
    (
        ["--describe", "--entity-type", "foo"],  # no connect option: the ZooKeeper list (embedded store)
        "Invalid entity type foo, the entity type must be one of topics,clients,users,brokers,ips with the --zookeeper argument",
    ),
    (ZK + ["--describe"], "At least one entity type must be specified"),
    (
        ZK + ["--describe", "--entity-type", "users", "--entity-type", "ips"],
        "Only 'users' and 'clients' entity types may be specified together",
    ),
    (
        ZK + ["--describe", "--entity-name", "A", "--entity-type", "users", "--client", "B"],
        "--entity-{type,name,default} should not be used in conjunction with specific entity flags",
    ),
    (ZK + BS + ["--describe", "--user", "a"], "Only one of --bootstrap-server or --zookeeper must be specified"),
    (
        ZK + ["--describe", "--ip", "A,B"],
        "The entity name for ips must be a valid IP or resolvable host, but it is: A,B",
    ),
    (
        ZK + ["--describe", "--entity-type", "ips", "--entity-name", "admin"],
        "The entity name for ips must be a valid IP or resolvable host, but it is: admin",
    ),
    (
        ZK + ["--alter", "--entity-type", "users", "--add-config", "a=b"],
        "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips",
    ),
    (
        ZK + ["--alter", "--user", "u", "--add-config", "a=b", "--add-config-file", "f"],
        "Only one of --add-config or --add-config-file must be specified",
    ),
    (
        ZK + ["--alter", "--user", "u"],
        "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter",
    ),
]


@pytest.mark.parametrize("argv, message", STEPS)
def test_check_args_message(argv, message):
    assert message_of(argv) == message


def test_earlier_checks_win_over_later_ones():
    # Violates steps 1, 3, 4 and 14: only the first is reported.
    assert message_of(["--entity-type", "foo", "--entity-type", "foo"]) == STEPS[0][1]
    # Duplicate (3) before invalid (4); invalid (4) before the connect-option check (8).
    assert (
        message_of(ZK + BS + ["--describe", "--entity-type", "foo", "--entity-type", "foo"])
        == "Duplicate entity type(s) specified: foo"
    )
    assert message_of(ZK + BS + ["--describe", "--entity-type", "foo"]).startswith("Invalid entity type foo")
    # The ip check (11) runs before the alter checks (12-14).
    assert message_of(ZK + ["--alter", "--ip", "999.1.1.1"]).startswith("The entity name for ips must be")


def test_usage_is_shown_only_for_the_action_checks():
    for argv, _ in STEPS:
        with pytest.raises(UsageError) as err:
            check(argv)
        assert err.value.show_usage == ("action" in err.value.message or "can't be used" in err.value.message)


@pytest.mark.parametrize(
    "argv",
    [
        ZK + ["--describe", "--entity-type", "users"],
        ZK + ["--alter", "--entity-type", "clients", "--entity-name", "1", "--add-config", "a=b,c=d"],
        ZK + ["--alter", "--entity-type", "users", "--entity-name", "1", "--add-config-file", "new.properties"],
        ZK + ["--alter", "--client", "1", "--delete-config", "a,b,c"],
        ZK + ["--alter", "--ip", "1", "--add-config", "a=b,c=d", "--delete-config", "a"],
        BS + ["--describe", "--ip", "1"],
        ["-alter", "-user", "1", "-add-config", "a=b"],  # single-dash long options (ConfigCommandTest)
        ZK + ["--describe", "--add-config-file", "x.properties", "--user", "u"],  # not rejected by Kafka either
    ],
)
def test_kafkas_argument_parse_cases_pass_check_args(argv):
    check(argv)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--blah"], "blah is not a recognized option"),
        (["--entity-t", "users"], "entity-t is not a recognized option"),  # no abbreviations in ConfigCommand
        (["--describe", "--entity-type"], "Option entity-type requires an argument"),
    ],
)
def test_parse_errors_use_joptsimple_texts(argv, message):
    with pytest.raises(UsageError, match=f"^{message}$"):
        A.parse_argv(argv)


def test_repeated_add_config_is_a_joptsimple_error():
    opts = A.parse_argv(["--add-config", "a=1", "--add-config", "b=2"])
    with pytest.raises(
        UsageError, match="^Found multiple arguments for option add-config, but you asked for only one$"
    ):
        opts.value("add-config")


def test_option_values_may_look_like_options_or_use_equals():
    opts = A.parse_argv(["--entity-name", "--odd", "--add-config=a=b"])
    assert opts.values("entity-name") == ["--odd"]
    assert opts.value("add-config") == "a=b"


def test_connect_mode():
    assert A.connect_mode(A.parse_argv(ZK)) == "zookeeper"
    assert A.connect_mode(A.parse_argv(BS)) == "bootstrap"
    assert A.connect_mode(A.parse_argv(["--describe"])) == "embedded"
