"""kconfigs vs real kafka-configs 3.9.2 and 4.3.1 over --bootstrap-server, edge by edge, on
generated command lines (hypothesis) against one shared KRaft broker (with SCRAM) per version.

Each example gives both tools their own entity (``k<n>`` for Kafka, ``o<n>`` for kconfigs, the
same state prepared for both), runs the same command line through each, and compares exit code,
error text (a broker refusal reduced to its message, kconfigs' one line) and stdout with the
entity name put back. Kafka runs in one JVM per version (harness ToolBatch), kconfigs in-process.
"""

from __future__ import annotations

import itertools
import re
import time

import pytest
from compat_support import arranged, jvm_examples, run_kafka_configs_batch, run_kconfigs_in_process
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.java import config_command_class
from harness.versions import BOOTSTRAP_TOOL_VERSIONS, KAFKA_3_VERSION, KAFKA_4_VERSION

pytestmark = pytest.mark.integration
SERIAL = itertools.count()
QUOTA_KEYS = ["producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"]
ORDERS = st.lists(st.integers(0, 9), min_size=1, max_size=6)  # option order (see compat_support.arranged)
FORMS = st.lists(st.sampled_from([" ", "=", "-"]), min_size=1, max_size=3)  # --opt v / --opt=v / -opt v


@pytest.fixture(scope="module", params=BOOTSTRAP_TOOL_VERSIONS)
def broker(request, kraft_broker_factory):
    return kraft_broker_factory(request.param, sasl_scram=True)


def kafka(broker, args):
    return run_kafka_configs_batch(broker.version, ["--bootstrap-server", broker.bootstrap, *args])


def ours(broker, args):
    return run_kconfigs_in_process(["--bootstrap-server", broker.bootstrap, *args])


def fill(template, name):
    return [part.replace("{e}", name) for part in template]


def both(broker, template, setup=()):
    """Run ``setup`` then ``template`` through each tool on its own fresh entity; returns the two
    results with the entity name replaced by ``{e}`` in stdout and error."""
    n = next(SERIAL)
    results = []
    for tool, prefix in ((kafka, "k"), (ours, "o")):
        name = f"{prefix}{n}-{int(time.time())}"
        for step in setup:
            done = kafka(broker, fill(step, name))
            assert done.rc == 0, (step, done.stderr)
            wait_until_described(broker, fill(step, name))
        run = tool(broker, fill(template, name))
        results.append((run.rc, run.error.replace(name, "{e}"), [line.replace(name, "{e}") for line in run.stdout]))
    return results


def wait_until_described(broker, alter):
    """Brokers answer from a metadata image that trails the controller: wait until the entity
    an ``--alter --add-config`` just set shows in a describe, so both tools start equal."""
    flags, skip = [], False
    for arg in alter:
        if skip or arg == "--alter":
            skip = False
            continue
        if arg == "--add-config":
            skip = True
            continue
        flags.append(arg)
    deadline = time.monotonic() + 15
    while not ours(broker, ["--describe", *flags]).stdout:
        assert time.monotonic() < deadline, alter
        time.sleep(0.1)


def assert_same(broker, template, setup=()):
    theirs, mine = both(broker, template, setup)
    assert mine == theirs, template
    return theirs


def eventually_same(broker, template, setup=()):
    """Describes read the brokers' metadata image, which trails a just-acknowledged alter."""
    deadline = time.monotonic() + 15
    while True:
        theirs, mine = both(broker, template, setup)
        if mine == theirs or time.monotonic() > deadline:
            return mine, theirs
        time.sleep(0.3)


# -- --delete-config with empty items -----------------------------------------------------
DELETE_ITEMS = st.lists(st.sampled_from(["producer_byte_rate", "consumer_byte_rate", "", " "]), min_size=1, max_size=4)


@jvm_examples(12)
@given(
    values=st.lists(DELETE_ITEMS.map(",".join), min_size=1, max_size=2),
    entity=st.sampled_from(
        [["--user", "{e}"], ["--client", "{e}"], ["--entity-type", "users", "--entity-name", "{e}"]]
    ),
    order=ORDERS,
    forms=FORMS,
)
def test_delete_config_items_split_and_fail_like_kafka(broker, values, entity, order, forms):
    setup = [[*entity, "--alter", "--add-config", "producer_byte_rate=1,consumer_byte_rate=2"]]
    deletes = [arg for value in values for arg in ("--delete-config", value)]
    assert_same(broker, arranged(["--alter", *entity, *deletes], order, forms), setup)


def test_delete_config_of_a_lone_comma_names_it_as_kafka_does(broker):
    result = assert_same(broker, ["--alter", "--user", "{e}", "--delete-config", ","])
    listed = "," if config_command_class(broker.version).startswith("org.apache") else "ArrayBuffer(,)"
    assert result[1] == (
        "Only quota and SCRAM credential configs can be deleted for 'users' using "
        f"--bootstrap-server. Unexpected config names: {listed}"
    )


# -- a key named twice ----------------------------------------------------------------------
@jvm_examples(12)
@given(
    key=st.sampled_from(QUOTA_KEYS),
    preset=st.booleans(),
    form=st.sampled_from(["add+delete", "delete k,k", "delete twice"]),
    entity=st.sampled_from([["--user", "{e}"], ["--user", "{e}", "--client", "c"], ["--client", "{e}"]]),
    order=ORDERS,
    forms=FORMS,
)
def test_a_key_named_twice_is_refused_and_nothing_changes(broker, key, preset, form, entity, order, forms):
    setup = [["--alter", *entity, "--add-config", f"{key}=5"]] if preset else []
    args = {
        "add+delete": ["--add-config", f"{key}=7", "--delete-config", key],
        "delete k,k": ["--delete-config", f"{key},{key}"],
        "delete twice": ["--delete-config", key, "--delete-config", key],
    }[form]
    rc, error, _ = assert_same(broker, arranged(["--alter", *entity, *args], order, forms), setup)
    assert rc == 1 and error
    if preset:  # unchanged: the preset value is still there for both
        mine, theirs = eventually_same(broker, ["--describe", *entity])
        assert mine == theirs


# -- unexpected keys, listed in the order of kafka-configs' collections ----------------------
ODD_KEYS = ["foo", "", "b", "some_config", "retention.ms", "x", "SCRAM-SHA-512", "connection_creation_rate"]


@jvm_examples(40)
@given(
    keys=st.lists(st.sampled_from([*ODD_KEYS, "producer_byte_rate", "consumer_byte_rate"]), min_size=2, max_size=7),
    deletes=st.lists(st.sampled_from(["zz", "foo", "connection_creation_rate"]), max_size=2),
    entity=st.sampled_from(
        [["--user", "{e}"], ["--client", "{e}"], ["--user", "{e}", "--client", "c"], ["--ip", "10.9.8.7"]]
    ),
)
def test_unexpected_keys_are_listed_in_kafkas_order(broker, keys, deletes, entity):
    """kafka-configs names the keys it refuses in the iteration order of the collections it keeps
    them in (a Properties, then Scala maps and sets: hash order beyond 4 keys), not the command
    line's, and prints a rebuilt set of more than 4 keys as ``HashSet``."""
    args = ["--add-config", ",".join(f"{key}=1" for key in keys)]
    if "--ip" in entity:
        args += ["--delete-config", ",".join(deletes)] if deletes else []
        if not {*keys, *deletes} - {"connection_creation_rate"}:
            return  # an alter the ip takes
    elif not set(keys) & set(ODD_KEYS):
        return  # quota keys only: an alter the entity takes
    rc, error, _ = assert_same(broker, ["--alter", *entity, *args])
    assert rc == 1 and error


# -- option spellings joptsimple does not know, and names that do not pair -----------------
UNKNOWN_SPELLINGS = ["-bogus", "-force", "-=x", "---describe", "-5", "--bogus=1", "-bogus=1", "-Describe", "--=x"]


@jvm_examples(12)
@given(token=st.sampled_from(UNKNOWN_SPELLINGS), at=st.integers(0, 3))
def test_an_unknown_option_is_named_as_joptsimple_names_it(broker, token, at):
    """A single-dash word that is no option is a cluster of one-letter options to joptsimple,
    which names the first letter; 4.x no longer knows --force."""
    command = ["--describe", "--user", "{e}"]
    theirs, mine = both(broker, [*command[:at], token, *command[at:]])
    if at == 2 and mine[0] == 0:  # --user took the token as its name: "{e}" is a word kafka-configs ignores
        assert mine[1] == "Warning: '{e}' follows no option and is ignored, as kafka-configs ignores it"
        mine = (mine[0], "", mine[2])
    assert mine == theirs


@jvm_examples(12)
@given(
    entity=st.sampled_from(
        [
            ["--entity-type", "users", "--entity-name", "{e}", "--entity-name", "c2"],
            ["--entity-type", "users", "--entity-type", "clients", "--entity-name", "{e}"],
            ["--user", "{e}", "--entity-name", "c2"],
        ]
    ),
    configs=st.sampled_from(["nonsense", "producer_byte_rate=1", "SCRAM-SHA-256=[password=p]", "foo=1"]),
)
def test_names_that_do_not_pair_with_types_are_refused_before_the_configs_are_read(broker, entity, configs):
    rc, error, _ = assert_same(broker, ["--alter", *entity, "--add-config", configs])
    assert rc == 1 and error


@jvm_examples(12)
@given(
    keys=st.lists(st.sampled_from(QUOTA_KEYS), min_size=2, max_size=4, unique=True),
    values=st.lists(st.sampled_from(["x", "1_0", "0x1q", "5"]), min_size=4, max_size=4),
    entity=st.sampled_from([["--user", "{e}"], ["--client", "{e}"], ["--user", "{e}", "--client", "c"]]),
)
def test_of_several_unparsable_values_the_first_in_kafkas_order_is_named(broker, keys, values, entity):
    configs = ",".join(f"{key}={value}" for key, value in zip(keys, values))
    assert_same(broker, ["--alter", *entity, "--add-config", configs])


# -- empty or comments-only --add-config-file -----------------------------------------------
COMMENT_LINES = st.lists(st.sampled_from(["", "   ", "# a comment", "! bang comment", "\t# tabbed"]), max_size=4)


@jvm_examples(12)
@given(
    lines=COMMENT_LINES,
    entity=st.sampled_from(
        [
            ["--user", "{e}"],
            ["--client", "{e}"],
            ["--user-defaults"],
            ["--ip", "10.9.8.7"],
            ["--user", "{e}", "--client", "c"],
            ["--entity-type", "users", "--entity-name", "{e}", "--entity-type", "clients", "--entity-default"],
        ]
    ),
)
def test_an_empty_add_config_file_does_what_kafka_does(broker, tmp_path_factory, lines, entity):
    path = tmp_path_factory.mktemp("props") / "empty.properties"
    path.write_text("\n".join(lines))
    assert_same(broker, ["--alter", *entity, "--add-config-file", str(path)])


FILE_KEYS = [*ODD_KEYS, "a1", "a2", "a3", "k9", "Aa", "q w", "e$r", "t~y", *QUOTA_KEYS]  # not "BB": same hash as "Aa"


@jvm_examples(30)
@given(
    keys=st.lists(st.sampled_from(FILE_KEYS), min_size=5, max_size=14, unique=True),
    value=st.sampled_from(["1", "x"]),
    entity=st.sampled_from([["--user", "{e}"], ["--client", "{e}"], ["--ip", "10.9.8.7"]]),
)
def test_the_keys_of_a_longer_add_config_file_are_named_in_kafkas_order(broker, tmp_path_factory, keys, value, entity):
    """4.4 copies a loaded file into its Properties with putAll, whose table is sized up front:
    the first bad key and the refused keys come in that table's order."""
    path = tmp_path_factory.mktemp("props") / "many.properties"
    escaped = [key.replace(" ", "\\ ") for key in keys]  # "q\ w": a key with a blank in it
    path.write_text("".join(f"{key}={value}\n" for key in escaped))
    assert_same(broker, ["--alter", *entity, "--add-config-file", str(path)])


# -- SCRAM credentials ----------------------------------------------------------------------
ITERATIONS = st.sampled_from([None, "-1", "4096", "8192", "16384", "20000", "100", "", "x"])
PASSWORDS = st.sampled_from(["pw", "a=b", "p,w", "", "späß"])


def scram_value(iterations, password):
    return (f"iterations={iterations}," if iterations is not None else "") + f"password={password}"


@jvm_examples(12)
@given(
    mechanism=st.sampled_from(["SCRAM-SHA-256", "SCRAM-SHA-512"]),
    iterations=ITERATIONS,
    password=PASSWORDS,
    then=st.sampled_from(["describe", "delete", "delete-other", "add-both", "with-quota", "describe-all"]),
)
def test_scram_credentials_over_bootstrap_match_kafka(broker, mechanism, iterations, password, then):
    add = ["--alter", "--user", "{e}", "--add-config", f"{mechanism}=[{scram_value(iterations, password)}]"]
    rc, _, _ = assert_same(broker, add)
    other = "SCRAM-SHA-512" if mechanism == "SCRAM-SHA-256" else "SCRAM-SHA-256"
    follow = {
        "describe": ["--describe", "--user", "{e}"],
        "delete": ["--alter", "--user", "{e}", "--delete-config", mechanism],
        "delete-other": ["--alter", "--user", "{e}", "--delete-config", other],
        "add-both": ["--alter", "--user", "{e}", "--add-config", f"{mechanism}=[password=a],{other}=[password=b]"],
        "with-quota": ["--alter", "--user", "{e}", "--add-config", f"{other}=[password=b],producer_byte_rate=5"],
        "describe-all": ["--describe", "--entity-type", "users"],
    }[then]
    setup = [add] if rc == 0 else []
    if then.startswith("describe"):
        mine, theirs = eventually_same(broker, follow, setup)
        mine = (mine[0], mine[1], [line for line in mine[2] if "{e}" in line])
        theirs = (theirs[0], theirs[1], [line for line in theirs[2] if "{e}" in line])
        assert mine == theirs
        if rc == 0:
            assert any(line.startswith("SCRAM credential configs for user-principal '{e}' are ") for line in mine[2])
    else:
        assert_same(broker, follow, setup)


def test_credentials_set_by_kconfigs_let_the_user_log_in(broker):
    from harness.brokers import metadata_ready

    user = f"login-{next(SERIAL)}"
    done = ours(
        broker, ["--alter", "--user", user, "--add-config", "SCRAM-SHA-512=[iterations=8192,password=s3cr=t,x]"]
    )
    assert (done.rc, done.stdout) == (0, [f"Completed updating config for user {user}."])
    config = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": user,
        "sasl_plain_password": "s3cr=t,x",
    }
    deadline = time.monotonic() + 15
    while not metadata_ready(broker.sasl_bootstrap, **config):
        assert time.monotonic() < deadline, "the broker did not accept the credential kconfigs set"
        time.sleep(0.3)


# -- texts that differ between 3.x and 4.x --------------------------------------------------
ENTITY_TYPES = st.sampled_from(["foo", "groups", "client-metrics", "topic", "Users", "ip"])
BAD_ADD_CONFIG = st.sampled_from(["producer_byte_rate", "k=v=w", "a==", "a=[b,c,d=e", ",a=b", "a=b,,c=d"])
# An escaped "=" is no escape: "k\\=v" is key "k\\" (3.7+ then refuses its backslash).
BAD_KEY_CONFIGS = ["a b=1", "a$b=1", "a~b=1", "c/d=1", "x=1,a b=1", "a$b=1,c d=1", "k\\=v", "a\\=b=1"]
BAD_KEYS = st.sampled_from(BAD_KEY_CONFIGS)


@jvm_examples(12)
@given(
    case=st.one_of(
        ENTITY_TYPES.map(lambda t: ["--describe", "--entity-type", t]),
        BAD_ADD_CONFIG.map(lambda s: ["--alter", "--user", "{e}", "--add-config", s]),
        BAD_KEYS.map(lambda k: ["--alter", "--user", "{e}", "--add-config", k]),
        st.just(["--alter", "--entity-type", "users", "--add-config", "producer_byte_rate=1"]),
        st.just(["--describe", "--user", "{e}", "--force"]),
        st.just(["--describe", "--ip", "<default>"]),
        st.just(["--alter", "--ip", "<default>", "--add-config", "connection_creation_rate=5"]),
        st.just(["--help"]),
    )
)
def test_version_specific_texts_match_the_clusters_kafka_configs(broker, case):
    theirs, mine = both(broker, case)
    if case[1:] in (["--entity-type", "groups"], ["--entity-type", "client-metrics"]) and theirs[0] == 0:
        assert mine[1].startswith("kconfigs manages client quotas only")  # README: not a quota tool's job
        return
    if theirs[1].startswith("Invalid entity type") or theirs[0] == 0:
        assert mine == theirs, case
        return
    assert (mine[0], mine[1]) == (theirs[0], theirs[1]), case


@pytest.mark.parametrize("config", BAD_KEY_CONFIGS)
def test_config_key_characters_are_checked_as_the_line_does(broker, config):
    assert_same(broker, ["--alter", "--user", "{e}", "--add-config", config])


def test_kafka_version_option_picks_the_other_lines_texts(broker):
    other = KAFKA_4_VERSION if broker.version == KAFKA_3_VERSION else KAFKA_3_VERSION
    args = ["--alter", "--entity-type", "users", "--add-config", "producer_byte_rate=1"]
    mine = ours(broker, ["--kafka-version", other, *args])
    theirs = run_kafka_configs_batch(other, ["--bootstrap-server", broker.bootstrap, *args])
    assert (mine.rc, mine.error) == (theirs.rc, theirs.error) == (1, theirs.error)


# -- options only some lines know --------------------------------------------------------------
LINE_PIECES = [
    ["--group", "g"],
    ["-group", "g"],
    ["--client-metrics", "m"],
    ["--force"],
    ["-force"],
    ["--bogus"],
    ["--user", "{e}"],
    ["--describe"],
    ["--help"],
    ["--entity-type", "users"],
]


@jvm_examples(30)
@given(pieces=st.lists(st.sampled_from(LINE_PIECES), min_size=1, max_size=5))
def test_options_only_some_lines_know_are_refused_as_the_line_does(broker, pieces):
    """4.x knows --group and --client-metrics and not --force, 3.x the other way round; joptsimple
    refuses the first option the line does not know, before --help is looked at."""
    theirs, mine = both(broker, [arg for piece in pieces for arg in piece])
    if mine[1].startswith("kconfigs manages client quotas only"):
        return  # README: group and client-metrics configs are not a quota tool's job
    assert (mine[0], mine[1]) == (theirs[0], theirs[1]), pieces


# -- --help first, and unusable bootstrap addresses -----------------------------------------
def test_help_first_with_a_server_is_kafka_configs_usage(broker):
    theirs = kafka(broker, ["--help", "--describe"])
    mine = run_kconfigs_in_process(["--help", "--bootstrap-server", broker.bootstrap, "--describe"])
    assert (mine.rc, mine.error, mine.stdout) == (theirs.rc, theirs.error, theirs.stdout) == (1, theirs.error, [])
    assert theirs.error.startswith("This tool helps to manipulate and describe entity config")


ADDRESS_PARTS = st.lists(
    st.tuples(
        st.sampled_from(["", "nosuch.invalid", "bad host", "a_b", "[::1"]),
        st.sampled_from(["", ":", ":1", ":99999", ":x"]),
        st.sampled_from(["", " "]),
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(parts=ADDRESS_PARTS)
def test_unusable_bootstrap_addresses_fail_at_once_with_kafkas_text(parts):
    from kconfigs.errors import UsageError
    from kconfigs.kafka_admin.bootstrap_addresses import bootstrap_addresses
    from kconfigs.kafka_admin.client import resolves

    servers = ",".join(f"{pad}{host}{port}{pad}" for host, port, pad in parts)
    try:
        bootstrap_addresses(servers, resolves)
        return  # usable (e.g. ":1" is the loopback): connecting is another test's business
    except UsageError:
        pass
    args = ["--bootstrap-server", servers, "--describe", "--user", "u"]
    started = time.monotonic()
    mine = run_kconfigs_in_process(args)
    assert time.monotonic() - started < 5
    for version in versions_agreeing_on(servers):
        theirs = run_kafka_configs_batch(version, args)
        messages = [
            line.rpartition("ConfigException: ")[2]
            for line in theirs.stderr.splitlines()
            if "ConfigException: " in line
        ]
        assert mine.rc == theirs.rc == 1
        assert messages[-1:] == [mine.error], (version, servers, theirs.stderr)


_LOOSE_HOST_PORT = re.compile(r".*?\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)")  # 2.8.2 / 3.9.2


def versions_agreeing_on(servers):
    """README: kconfigs refuses what precedes a host as 4.x does, and skips empty entries as
    3.x does; compare each input with the lines whose rule kconfigs follows for it."""
    entries = re.split(r"\s*,\s*", servers.strip()) if servers.strip() else []
    has_empty = any(entry == "" for entry in entries)
    loose_only = any(
        entry
        and _LOOSE_HOST_PORT.fullmatch(entry)
        and not re.fullmatch(r"(?:[0-9a-zA-Z\-%._]*://)?\[?([0-9a-zA-Z\-%._:]*)]?:([0-9]+)", entry)
        for entry in entries
    )
    return ([] if loose_only else [KAFKA_3_VERSION]) + ([] if has_empty else [KAFKA_4_VERSION])


# -- describe: the order of lines and keys --------------------------------------------------
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@ éü中"
ENTITY_PART = st.one_of(st.none(), st.just("--entity-default"), st.text(NAME_CHARS, min_size=1, max_size=10))
QUOTA_ENTITY = st.tuples(ENTITY_PART, ENTITY_PART).filter(lambda parts: parts != (None, None))
IP_ENTITY = st.tuples(st.integers(0, 255), st.integers(0, 255)).map(lambda b: f"10.{b[0]}.{b[1]}.7")


def _entity_args(entity_type: str, part: str | None) -> list[str]:
    if part is None:
        return []
    name = ["--entity-default"] if part == "--entity-default" else ["--entity-name", part]
    return ["--entity-type", entity_type, *name]


#: quotas no client of the shared broker ever reaches (a default entity applies to every one)
UNREACHED = ["1073741824", "2000000000", "900000000"]


@jvm_examples(4)
@given(
    entities=st.lists(
        st.tuples(
            st.one_of(QUOTA_ENTITY, IP_ENTITY),
            st.lists(st.sampled_from(QUOTA_KEYS), min_size=1, max_size=4, unique=True),
            st.sampled_from(UNREACHED),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_describe_lists_entities_and_keys_in_kafkas_order(broker, entities):
    """kafka-configs prints the admin client's HashMap of entities (and of each one's values):
    their order, not the broker's, whatever the number of entities and keys. The broker is shared
    with other modules: every quota set here is deleted again."""
    created: dict[tuple[str, ...], set[str]] = {}
    try:
        for entity, keys, value in entities:
            if isinstance(entity, str):
                target, keys = ["--entity-type", "ips", "--entity-name", entity], ["connection_creation_rate"]
            else:
                target = [*_entity_args("users", entity[0]), *_entity_args("clients", entity[1])]
            created.setdefault(tuple(target), set()).update(keys)
            config = ",".join(f"{key}={value}" for key in keys)
            assert ours(broker, ["--alter", "--add-config", config, *target]).rc == 0, target
        # the metadata image applies alters in order: once the last one shows, every one does
        last = ["--entity-type", "clients", "--entity-name", f"sentinel-{next(SERIAL)}"]
        created[tuple(last)] = {"producer_byte_rate"}
        assert ours(broker, ["--alter", "--add-config", f"producer_byte_rate={UNREACHED[0]}", *last]).rc == 0
        wait_until_described(broker, ["--alter", "--add-config", "", *last])
        for described in (
            ["--entity-type", "clients"],
            ["--entity-type", "users"],
            ["--entity-type", "users", "--entity-type", "clients"],
            ["--entity-type", "users", "--entity-default", "--entity-type", "clients"],
            ["--entity-type", "ips"],
        ):
            theirs, mine = kafka(broker, ["--describe", *described]), ours(broker, ["--describe", *described])
            assert (mine.rc, mine.error, mine.stdout) == (theirs.rc, theirs.error, theirs.stdout), described
    finally:
        for target, keys in created.items():
            removed = ours(broker, ["--alter", "--delete-config", ",".join(sorted(keys)), *target])
            assert removed.rc == 0, (target, removed.error)
