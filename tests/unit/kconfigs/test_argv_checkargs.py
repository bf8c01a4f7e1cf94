"""kafka-configs' argv parsing and ``checkArgs`` (spec §1.2): exact messages, in Kafka's order."""

import pytest

from kconfigs import args as A
from kconfigs.errors import UsageError
from kconfigs.ip_names import is_valid_ip_entity
from kconfigs.kafka_texts import TEXTS, Dialect

ZK = ["--zookeeper", "localhost:2181"]
BS = ["--bootstrap-server", "localhost:9092"]


def check(argv, dialect=None):
    opts = A.parse_argv(argv)
    A.check_args(opts, is_valid_ip_entity, (lambda: TEXTS[dialect]) if dialect else None)
    return opts


def message_of(argv, dialect=None):
    with pytest.raises(UsageError) as err:
        check(argv, dialect)
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
        "Invalid entity type foo, the entity type must be one of topics,clients,users,brokers,ips with the "
        "--zookeeper argument",
    ),
    (
        BS + ["--describe", "--entity-type", "foo"],  # a server not asked: the 3.x texts
        "Invalid entity type foo, the entity type must be one of topics, clients, users, brokers, ips, broker-loggers, "
        "client-metrics with a --bootstrap-server or --bootstrap-controller argument",
    ),
    (
        ["--describe", "--entity-type", "foo"],  # no connect option: the ZooKeeper list (embedded store)
        "Invalid entity type foo, the entity type must be one of topics,clients,users,brokers,ips with the "
        "--zookeeper argument",
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


# Texts of kafka-configs 3.9.2 and 4.3.1 (read off the real tools; the integration differential
# tests compare generated command lines against both).
@pytest.mark.parametrize(
    "argv, kafka_3, kafka_4",
    [
        (
            BS + ["--describe", "--entity-type", "foo"],
            "Invalid entity type foo, the entity type must be one of topics, clients, users, brokers, ips, "
            "broker-loggers, "
            "client-metrics with a --bootstrap-server or --bootstrap-controller argument",
            "Invalid entity type foo, the entity type must be one of topics, clients, users, brokers, ips, "
            "client-metrics, "
            "groups, broker-loggers with a --bootstrap-server or --bootstrap-controller argument",
        ),
        (
            BS + ["--alter", "--entity-type", "users", "--add-config", "a=b"],
            "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips",
            "An entity-name or default entity must be specified with --alter of users, clients, brokers or ips",
        ),
        (
            BS + ["--describe", "--ip", "<default>"],
            None,
            "The entity name for ips must be a valid IP or resolvable host, but it is: <default>",
        ),
        (BS + ["--describe", "--user", "u", "--force"], None, "force is not a recognized option"),
        (
            BS + ["--describe", "--entity-type", "groups"],
            "Invalid entity type groups, the entity type must be one of topics, clients, users, brokers, ips, "
            "broker-loggers, client-metrics with a --bootstrap-server or --bootstrap-controller argument",
            "kconfigs manages client quotas only (users, clients, ips); use kafka-configs.sh for groups",
        ),
    ],
)
def test_texts_follow_the_kafka_line(argv, kafka_3, kafka_4):
    for dialect, expected in ((Dialect.KAFKA_3, kafka_3), (Dialect.KAFKA_4, kafka_4)):
        if expected is None:
            check(argv, dialect)
        else:
            assert message_of(argv, dialect) == expected


def test_zookeeper_mode_never_asks_for_the_kafka_line():
    def refuse():
        raise AssertionError("texts asked for")

    A.check_args(A.parse_argv(ZK + ["--describe", "--user", "u", "--force"]), is_valid_ip_entity, refuse)


@pytest.mark.parametrize(
    "argv, kafka_3, kafka_4",
    [
        (["--describe", "--group", "g", "--user", "u"], "group is not a recognized option", None),
        (["--describe", "-group", "g"], "g is not a recognized option", None),
        (["--describe", "--client-metrics", "m"], "client-metrics is not a recognized option", None),
        (["--describe", "-force", "--user", "u"], None, "f is not a recognized option"),
        (["--force", "--bogus"], "bogus is not a recognized option", "force is not a recognized option"),
        (["--group", "g", "--bogus"], "group is not a recognized option", "bogus is not a recognized option"),
        (["--bogus", "--group", "g"], "bogus is not a recognized option", "bogus is not a recognized option"),
    ],
)
def test_options_only_some_lines_know_are_refused_in_command_line_order(argv, kafka_3, kafka_4):
    """As real kafka-configs 3.9.2 / 4.3.1 / 4.4.0 refused them (joptsimple stops at the first
    option the line does not know; 4.x knows --group and --client-metrics, not --force)."""
    for dialect, expected in ((Dialect.KAFKA_3, kafka_3), (Dialect.KAFKA_4, kafka_4), (Dialect.KAFKA_4_4, kafka_4)):
        try:
            opts = A.parse_argv(BS + argv)
        except UsageError as err:
            assert str(err) == expected
            continue
        texts = TEXTS[dialect]
        if expected is None:
            A.check_recognized(opts, lambda: texts)  # noqa: B023 (called before the loop moves on)
        else:
            with pytest.raises(UsageError) as err:
                A.check_recognized(opts, lambda: texts)  # noqa: B023
            assert str(err.value) == expected


@pytest.mark.parametrize(
    "argv, scala, java",
    [
        (
            ["--describe", "--entity-type", "users", "--entity-type", "users", "--entity-type", "users"],
            "Duplicate entity type(s) specified: users,users",  # Scala types.diff(types.distinct)
            "Duplicate entity type(s) specified: users",
        ),
        (
            ["--describe", "--broker-defaults", "--entity-type", "ips", "--entity-type", "ips", "--broker", "1"]
            + ["--entity-type", "ips"],
            "Duplicate entity type(s) specified: ips,ips,brokers",
            "Duplicate entity type(s) specified: ips,brokers",
        ),
        (
            ["--describe", "--user", "u", "--bootstrap-controller", "c:9093"],
            "Only one of --bootstrap-server, --boostrap-controller, and --zookeeper can be specified",
            "Only one of --bootstrap-server or --bootstrap-controller can be specified",
        ),
    ],
)
def test_repeated_types_and_two_servers_are_worded_as_the_line_does(argv, scala, java):
    """Texts of real kafka-configs 3.9.2 (and 4.3.1 for the repeats) and 4.4.0."""
    assert message_of(BS + argv, Dialect.KAFKA_3) == scala
    assert message_of(BS + argv, Dialect.KAFKA_4_4) == java
    if "--bootstrap-controller" not in argv:
        assert message_of(BS + argv, Dialect.KAFKA_4) == scala
        assert message_of(ZK + argv, Dialect.KAFKA_2_8) == scala  # 2.8.2 lists every repeat too


def test_a_parse_error_after_an_option_only_some_lines_know_waits_for_the_line():
    opts = A.parse_argv(BS + ["--group", "g", "--user"])
    assert opts.refused == "Option user requires an argument"
    with pytest.raises(UsageError, match="^group is not a recognized option$"):
        A.check_recognized(opts, lambda: TEXTS[Dialect.KAFKA_3])
    with pytest.raises(UsageError, match="^Option user requires an argument$"):
        A.check_recognized(opts, lambda: TEXTS[Dialect.KAFKA_4_4])


def test_zookeeper_tls_and_two_servers_come_after_the_names_over_a_server():
    """As real kafka-configs 3.9.2 (4.x does not know --zk-tls-config-file)."""
    tls = BS + ["--describe", "--user", "u", "--zk-tls-config-file", "/x"]
    assert (
        message_of(tls, Dialect.KAFKA_3)
        == "Only the --zookeeper option can be used with the --zk-tls-config-file option."
    )
    for dialect in (Dialect.KAFKA_4, Dialect.KAFKA_4_4):
        assert message_of(tls, dialect) == "zk-tls-config-file is not a recognized option"
    twice = BS + ["--describe", "--client", "c", "--client", "d", "--bootstrap-controller", "x:9093"]
    assert (
        message_of(twice, Dialect.KAFKA_3) == "Found multiple arguments for option client, but you asked for only one"
    )
