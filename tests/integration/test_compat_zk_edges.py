"""kconfigs vs real kafka-configs 2.8.2 on ZooKeeper, edge by edge, on generated command lines.

Each example gets two fresh sibling chroots (one per tool) with the same prepared state, runs the
same command line through both and compares exit code, error text, stdout, the znodes under
/config and the change notifications. Kafka runs in one JVM (harness ToolBatch), kconfigs
in-process. Deliberate differences (README table) are normalised or asserted explicitly.
"""

from __future__ import annotations

import dataclasses
import itertools
import subprocess
import sys

import pytest
from compat_support import (
    arranged,
    config_tree,
    jvm_examples,
    normalised_lines,
    notifications,
    run_kafka_configs_batch,
    run_kconfigs_in_process,
    without_empty_leaves,
)
from hypothesis import given
from hypothesis import strategies as st

from harness.versions import KAFKA_ZK_TOOL_VERSION

pytestmark = pytest.mark.integration
SERIAL = itertools.count()
TOOLS = {
    "kafka": lambda args: run_kafka_configs_batch(KAFKA_ZK_TOOL_VERSION, args),
    "kconfigs": run_kconfigs_in_process,
}


def run_both(zk_client, zk_connect, command, setup=()):
    """``setup`` (through Kafka) then ``command`` on a fresh chroot per tool; returns
    {tool: (ToolRun, config tree, notifications after setup)}."""
    n = next(SERIAL)
    out = {}
    for tool, runner in TOOLS.items():
        chroot = f"/e{n}-{tool}"
        zk_client.ensure_path(f"{chroot}/brokers")  # a Kafka-like chroot: no kconfigs warning
        connect = ["--zookeeper", zk_connect + chroot]
        for step in setup:
            done = TOOLS["kafka"](connect + step)
            assert done.rc == 0, (step, done.stderr)
        before = len(notifications_under(zk_client, chroot))
        run = runner(connect + command)
        out[tool] = (run, tree_under(zk_client, chroot), notifications_under(zk_client, chroot)[before:])
    return out


class _Under:
    """A kazoo-like view of ``chroot`` for compat_support's tree readers."""

    def __init__(self, client, chroot):
        self._client, self._chroot = client, chroot

    def __getattr__(self, name):
        method = getattr(self._client, name)
        return lambda path, *a, **k: method(self._chroot + path, *a, **k)


def tree_under(zk_client, chroot):
    return config_tree(_Under(zk_client, chroot))


def notifications_under(zk_client, chroot):
    return notifications(_Under(zk_client, chroot))


def assert_same(results, emptied=False):
    (kafka, kafka_tree, kafka_changes), (ours, our_tree, our_changes) = results["kafka"], results["kconfigs"]
    assert (ours.rc, ours.error) == (kafka.rc, kafka.error), (kafka.stderr, ours.stderr)
    assert normalised_lines(ours.stdout) == normalised_lines(kafka.stdout)
    assert our_tree == (without_empty_roots(without_empty_leaves(kafka_tree), our_tree) if emptied else kafka_tree)
    assert our_changes == kafka_changes


def without_empty_roots(tree, ours):
    """2.8.2 creates ``/config/users`` (null data) on its way to an empty node kconfigs never
    writes; such a root, childless and absent from kconfigs' tree, is part of the same difference."""
    return {
        path: doc
        for path, doc in tree.items()
        if path in ours or doc is not None or any(p.startswith(path + "/") for p in tree)
    }


ENTITIES = st.sampled_from(
    [
        ["--user", "u1"],
        ["--client", "c1"],
        ["--user", "u1", "--client", "c1"],
        ["--entity-type", "clients", "--entity-default"],
    ]
)


@jvm_examples(15)
@given(
    entity=ENTITIES,
    values=st.lists(
        st.lists(st.sampled_from(["producer_byte_rate", "consumer_byte_rate", "", " "]), min_size=1, max_size=4).map(
            ",".join
        ),
        min_size=1,
        max_size=2,
    ),
    order=st.lists(st.integers(0, 9), min_size=1, max_size=6),
    forms=st.lists(st.sampled_from([" ", "=", "-"]), min_size=1, max_size=3),
)
def test_delete_config_with_empty_items_matches_kafka(zk_client, zk_connect, entity, values, order, forms):
    setup = [["--alter", *entity, "--add-config", "producer_byte_rate=1,consumer_byte_rate=2"]]
    deletes = [arg for value in values for arg in ("--delete-config", value)]
    command = arranged(["--alter", *entity, *deletes], order, forms)
    # README: kconfigs deletes an emptied znode where 2.8.2 keeps {"config":{}}.
    assert_same(run_both(zk_client, zk_connect, command, setup), emptied=True)


@jvm_examples(15)
@given(
    entity=ENTITIES,
    preset=st.booleans(),
    lines=st.lists(
        st.sampled_from(["", "  ", "# comment", "! bang", "\t#x=1", "   # producer_byte_rate=5"]), max_size=5
    ),
)
def test_empty_add_config_file_matches_kafka(zk_client, zk_connect, tmp_path_factory, entity, preset, lines):
    path = tmp_path_factory.mktemp("props") / "empty.properties"
    path.write_text("\n".join(lines))
    setup = [["--alter", *entity, "--add-config", "request_percentage=5"]] if preset else []
    results = run_both(zk_client, zk_connect, ["--alter", *entity, "--add-config-file", str(path)], setup)
    # README: for an entity without a znode 2.8.2 creates {"config":{}}, kconfigs does not.
    assert_same(results, emptied=not preset)
    assert results["kafka"][0].rc == 0


@jvm_examples(15)
@given(
    key=st.sampled_from(["request_percentage", "controller_mutation_rate", "producer_byte_rate"]),
    value=st.sampled_from(["Infinity", "-Infinity", "NaN", "+Infinity", "0x1p3", "1e3", " 2.5d", "1.5"]),
)
def test_special_numbers_in_zookeeper_mode(zk_client, zk_connect, key, value):
    results = run_both(zk_client, zk_connect, ["--alter", "--user", "u1", "--add-config", f"{key}={value}"])
    kafka, ours = results["kafka"][0], results["kconfigs"][0]
    finite_double = key != "producer_byte_rate" and value.strip().lstrip("+-") not in ("Infinity", "NaN")
    if key == "producer_byte_rate" or finite_double:
        assert_same(results)  # Java's own answer: stored as typed, or refused with its message
    else:  # README: Kafka stores NaN/Infinity for DOUBLE keys; kconfigs refuses them
        assert kafka.rc == 0
        assert (ours.rc, ours.error) == (
            1,
            f"Invalid value {value.strip()} for configuration {key}: must be a finite number",
        )
        assert results["kconfigs"][1] == {}


def test_help_first_is_kafka_configs_usage_and_help_alone_is_kconfigs(zk_connect):
    theirs = TOOLS["kafka"](["--help", "--zookeeper", zk_connect, "--describe"])
    ours = run_kconfigs_in_process(["--help", "--zookeeper", zk_connect, "--describe"])
    assert (ours.rc, ours.error, ours.stdout) == (theirs.rc, theirs.error, theirs.stdout) == (1, theirs.error, [])
    assert (
        theirs.error
        == "This tool helps to manipulate and describe entity config for a topic, client, user, broker or ip"
    )
    click = subprocess.run([sys.executable, "-m", "kconfigs", "--help"], capture_output=True, text=True, timeout=60)
    assert click.returncode == 0 and click.stdout.startswith("Usage: kconfigs")


@jvm_examples(40)
@given(
    entity=st.sampled_from(
        [
            ["--user", "u1"],
            ["--user", "u1", "--client", "c1"],
            ["--user-defaults", "--client", "c1"],
            ["--user-defaults"],
            ["--entity-type", "clients", "--entity-name", "c1", "--entity-type", "users", "--entity-name", ".."],
        ]
    ),
    value=st.sampled_from(["1e3", " 7", "iterations=1,password=p", "iterations=4096,password=p", "password="]),
    sha512=st.sampled_from([None, "x", "password=q"]),
    delete=st.sampled_from([[], ["--delete-config", "consumer_byte_rate"]]),
)
def test_scram_values_are_checked_first_for_every_entity_that_starts_with_a_user(
    zk_client, zk_connect, entity, value, sha512, delete
):
    """kafka-configs turns SCRAM passwords into credentials before it checks anything else when
    the entity's first type is users, so a bad value is the error even where the key is unknown;
    SCRAM-SHA-256 before SCRAM-SHA-512 whatever their order on the command line."""
    configs = f"SCRAM-SHA-256={value}" if sha512 is None else f"SCRAM-SHA-512={sha512},SCRAM-SHA-256={value}"
    results = run_both(zk_client, zk_connect, ["--alter", *entity, "--add-config", configs, *delete])
    (kafka, kafka_tree, kafka_changes), (ours, our_tree, our_changes) = results["kafka"], results["kconfigs"]
    assert (ours.rc, ours.error, ours.stdout) == (kafka.rc, kafka.error, kafka.stdout), (kafka.stderr, ours.stderr)
    if kafka.rc != 0:  # a stored credential has a random salt: compared only when nothing was written
        assert (our_tree, our_changes) == (kafka_tree, kafka_changes) == ({}, [])


@jvm_examples(15)
@given(
    token=st.sampled_from(["-bogus", "-=x", "---describe", "-5", "--bogus=1", "-bogus=1", "-Describe", "--=x"]),
    at=st.integers(0, 3),
)
def test_an_unknown_option_is_named_as_joptsimple_names_it(zk_client, zk_connect, token, at):
    """A single-dash word that is no option is a cluster of one-letter options to joptsimple,
    which names the first letter."""
    command = ["--describe", "--user", "u1"]
    results = run_both(zk_client, zk_connect, [*command[:at], token, *command[at:]])
    ours = results["kconfigs"][0]
    if at == 2 and ours.rc == 0:  # --user took the token as its name: "u1" is a word kafka-configs ignores
        assert ours.stderr == "Warning: 'u1' follows no option and is ignored, as kafka-configs ignores it\n"
        results["kconfigs"] = (dataclasses.replace(ours, error="", stderr=""), *results["kconfigs"][1:])
    assert_same(results)


@jvm_examples(15)
@given(
    lines=st.lists(
        st.sampled_from(
            [
                "producer_byte_rate=[9] ",
                "consumer_byte_rate:5 # c",
                "request_percentage\t1.5\t",
                "consumer_byte_rate = 7 ",
                "controller_mutation_rate=x\\t ",
                "producer_byte_rate -9223372036854775809",
            ]
        ),
        min_size=1,
        max_size=4,
    ),
    entity=ENTITIES,
)
def test_an_add_config_file_value_is_named_as_written_and_checked_in_kafkas_order(
    zk_client, zk_connect, tmp_path_factory, lines, entity
):
    """A properties file's value keeps its trailing blanks, which Kafka's message shows; of
    several bad values, ConfigDef names the first in its own key order."""
    path = tmp_path_factory.mktemp("props") / "values.properties"
    path.write_text("\n".join(lines))
    assert_same(run_both(zk_client, zk_connect, ["--alter", *entity, "--add-config-file", str(path)]))


@jvm_examples(15)
@given(
    lines=st.lists(st.sampled_from(["consumer_byte_rate=12\\", "3", "\\", "   ", "", "# c"]), min_size=1, max_size=4),
    end=st.sampled_from(["", "\n", "\r", "\r\n", "\\", "\\\n", "\\\r\n"]),
    newline=st.sampled_from(["\n", "\r\n"]),
)
def test_continued_lines_in_an_add_config_file_join_as_kafka_reads_them(
    zk_client, zk_connect, tmp_path_factory, lines, end, newline
):
    """Properties.load reads a stream: where a continued line meets the end of the file decides
    whether an empty key appears."""
    path = tmp_path_factory.mktemp("props") / "continued.properties"
    path.write_bytes((newline.join(lines) + end).encode("latin-1"))
    assert_same(
        run_both(zk_client, zk_connect, ["--alter", "--client", "c1", "--add-config-file", str(path)]), emptied=True
    )


# -- describe: the order of lines and keys --------------------------------------------------
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@"
# "": the default; "." and ".." are refused by both tools as znode names (tests of their own)
ENTITY_PART = st.one_of(
    st.none(), st.just(""), st.text(NAME_CHARS, min_size=1, max_size=10).filter(lambda n: n not in (".", ".."))
)
QUOTA_ENTITY = st.tuples(ENTITY_PART, ENTITY_PART).filter(lambda parts: parts != (None, None))
QUOTA_KEYS = ["producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"]


def _entity_args(entity_type: str, name: str | None) -> list[str]:
    if name is None:
        return []
    return ["--entity-type", entity_type, *(["--entity-name", name] if name else ["--entity-default"])]


@jvm_examples(4)
@given(
    entities=st.lists(
        st.tuples(
            QUOTA_ENTITY,
            st.lists(st.sampled_from(QUOTA_KEYS), min_size=1, max_size=4, unique=True),
            st.sampled_from(["1024", "50", "3"]),
        ),
        min_size=1,
        max_size=25,
    ),
    writer=st.sampled_from(sorted(TOOLS)),
)
def test_describe_lists_entities_and_keys_in_kafkas_order(zk_client, zk_connect, entities, writer):
    """kafka-configs 2.8 lists entities in ZooKeeper's child order and each one's keys in the
    order of a Properties read from the znode: both tools describe the same chroot alike,
    whichever of them wrote it."""
    chroot = f"/d{next(SERIAL)}"
    zk_client.ensure_path(f"{chroot}/brokers")
    connect = ["--zookeeper", zk_connect + chroot]
    for (user, client), keys, value in entities:
        target = [*_entity_args("users", user), *_entity_args("clients", client)]
        config = ",".join(f"{key}={value}" for key in keys)
        assert TOOLS[writer]([*connect, "--alter", "--add-config", config, *target]).rc == 0, target
    for described in (
        ["--entity-type", "clients"],
        ["--entity-type", "users"],
        ["--entity-type", "users", "--entity-type", "clients"],
        ["--entity-type", "users", "--entity-default", "--entity-type", "clients"],
    ):
        theirs = TOOLS["kafka"]([*connect, "--describe", *described])
        mine = TOOLS["kconfigs"]([*connect, "--describe", *described])
        assert (mine.rc, mine.error, mine.stdout) == (theirs.rc, theirs.error, theirs.stdout), described


EMPTY_NAME = "is empty, which kafka-configs reads as the default (as {}); an unset shell variable?"


@pytest.mark.parametrize(
    "command, setup, warning",
    [
        (
            ["--alter", "--user", "", "--add-config", "producer_byte_rate=1"],
            (),
            "Warning: --user " + EMPTY_NAME.format("--user-defaults"),
        ),
        (
            ["--describe", "--client", ""],
            (["--alter", "--client-defaults", "--add-config", "producer_byte_rate=3"],),
            "Warning: --client " + EMPTY_NAME.format("--client-defaults"),
        ),
        (
            ["--alter", "--entity-type", "users", "--entity-name", "", "--add-config", "consumer_byte_rate=2"],
            (),
            "Warning: --entity-name " + EMPTY_NAME.format("--entity-default"),
        ),
        (
            ["--alter", "--user", "u1", "--add-config", "producer_byte_rate=1024,", "consumer_byte_rate=2048"],
            (),
            "Warning: 'consumer_byte_rate=2048' follows no option and is ignored, as kafka-configs ignores it "
            "(a space after a comma in --add-config ends its value)",
        ),
        (
            [
                "--alter",
                "--user",
                "u1",
                "--add-config",
                "producer_byte_rate=6",
                "--delete-config",
                "producer_byte_rate",
            ],
            (["--alter", "--user", "u1", "--add-config", "producer_byte_rate=5,consumer_byte_rate=7"],),
            "Warning: --delete-config removes producer_byte_rate, which --add-config sets: it ends up deleted, "
            "as kafka-configs 2.8 does",
        ),
    ],
)
def test_kafka_configs_foot_guns_run_as_kafka_runs_them_with_one_warning(
    zk_client, zk_connect, command, setup, warning
):
    """``--user "$U"`` with U unset, a space after a comma in --add-config, and a key both added
    and deleted: kafka-configs 2.8.2 runs them without a word. kconfigs runs them the same (stdout,
    exit code, znodes and notifications) and says what happened in one line on stderr."""
    results = run_both(zk_client, zk_connect, command, setup)
    (kafka, kafka_tree, kafka_changes), (ours, our_tree, our_changes) = results["kafka"], results["kconfigs"]
    assert (
        (ours.rc, normalised_lines(ours.stdout))
        == (kafka.rc, normalised_lines(kafka.stdout))
        == (
            0,
            normalised_lines(ours.stdout),
        )
    )
    assert (our_tree, our_changes) == (kafka_tree, kafka_changes)
    assert ours.stderr == warning + "\n"


def test_a_well_formed_command_line_gets_no_warning(zk_connect):
    add = "producer_byte_rate=1,consumer_byte_rate=2"
    run = run_kconfigs_in_process(["--zookeeper", zk_connect, "--alter", "--user", "u1", "--add-config", add])
    assert (run.rc, run.stdout, run.stderr) == (0, ["Completed updating config for entity: user-principal 'u1'."], "")
