"""Hostile input (docs/RELIABILITY.md section 2): hostile input never produces a traceback or a partial write.

Each property runs ≥ 1,000 generated cases. "No traceback" means: the code under test either
succeeds or raises a KconfigsError (which ``main`` turns into one stderr line); any other
exception fails the test. CLI-level cases run the real entry point in-process on an embedded store
and check the store is unchanged whenever the command failed.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import run_main
from kconfigs.config_grammar import parse_add_config
from kconfigs.errors import KconfigsError, ValidationError
from kconfigs.java_properties import parse_properties
from kconfigs.model import MATCH_ALL
from kconfigs.stores.sqlite import SqliteStore

CASES = settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
GRAMMAR_CHARS = st.sampled_from(list("=,[] \t") + list(string.ascii_letters[:6]) + ["1", "0", ".", "-", "é", "\\"])
KEYS = [
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
    "connection_creation_rate",
    "producer_ids_rate",
    "SCRAM-SHA-256",
    "bogus",
]
hostile_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
value_text = st.one_of(
    st.sampled_from(
        [
            "1024",
            "-1",
            "0",
            "NaN",
            "Infinity",
            "1e3",
            "1.5",
            "9" * 30,
            "",
            " 7 ",
            "0x10",
            "1_000",
            "[1,2]",
            "iterations=1,password=x",
        ]
    ),
    hostile_text,
)


@CASES
@given(st.text(alphabet=GRAMMAR_CHARS, max_size=30))
def test_add_config_grammar_parses_or_fails_with_one_line(text):
    try:
        parsed = parse_add_config(text)
    except KconfigsError as err:
        assert "\n" not in str(err)
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in parsed.items())


@CASES
@given(hostile_text)
def test_properties_files_parse_whatever_they_contain(text):
    try:
        props = parse_properties(text)
    except ValidationError as err:  # Properties.load refuses a malformed \uXXXX escape too
        assert "\\u" in text and "\n" not in str(err)
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in props.items())


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "quotas.db"
    SqliteStore(path).close()
    return path


def _state(path) -> list:
    store = SqliteStore(path)
    try:
        return sorted((r.entity.path, tuple(r.configs.items())) for r in store.describe(MATCH_ALL))
    finally:
        store.close()


@CASES
@given(
    entity_flag=st.sampled_from(["--user", "--client", "--ip"]),
    name=hostile_text,
    key=st.sampled_from(KEYS),
    value=value_text,
)
def test_compat_alter_with_hostile_names_and_values_never_half_writes(store_path, entity_flag, name, key, value):
    before = _state(store_path)
    code, out, err = run_main(
        "--store", str(store_path), "--alter", entity_flag, name, "--add-config", f"{key}={value}"
    )
    assert "Traceback" not in err
    if code != 0:
        assert out == "" and err.count("\n") >= 1 and _state(store_path) == before
    else:
        assert out.startswith("Completed updating config for entity: ")


@CASES
@given(
    name=hostile_text,
    args=st.lists(
        st.sampled_from(
            [
                "--describe",
                "--alter",
                "--entity-type",
                "users",
                "clients",
                "ips",
                "topics",
                "--entity-name",
                "--entity-default",
                "--user",
                "--client-defaults",
                "--delete-config",
                "--add-config",
                "a=1",
                "--ip",
                "--bootstrap-server",
                "--zookeeper",
                "--all",
                "-",
                "--",
                "--add-config-file",
                "/nonexistent",
            ]
        ),
        max_size=8,
    ),
)
def test_any_compat_argv_fails_cleanly(store_path, name, args):
    before = _state(store_path)
    code, _out, err = run_main("--store", str(store_path), *args, name)
    assert "Traceback" not in err
    if code != 0:
        assert _state(store_path) == before


trace_rows = st.lists(
    st.tuples(
        st.one_of(st.integers(-5, 10**6).map(str), hostile_text),
        st.sampled_from(["alice", "bob", "", "é"]),
        st.sampled_from(["c1", "c2", ""]),
        st.sampled_from(["127.0.0.1", "::1", "x", ""]),
        st.one_of(st.sampled_from(["produce", "fetch", "request", "connection", "producer_id"]), hostile_text),
        st.one_of(st.integers(-10, 10**9).map(str), hostile_text),
    ),
    max_size=6,
)


@CASES
@given(rows=trace_rows, header=st.booleans())
def test_trace_files_replay_or_fail_with_the_line_number(tmp_path_factory, rows, header):
    from kconfigs_enforcement.commands.simulate import parse_trace

    lines = (["time_ms,user,client_id,ip,kind,value"] if header else []) + [",".join(r) for r in rows]
    try:
        events = parse_trace("\n".join(lines) + "\n", "trace.csv")
    except KconfigsError as err:
        assert str(err).startswith("trace.csv:") and "\n" not in str(err)
        return
    assert len(events) <= len(rows)


quota_docs = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-2, 2**64),
        st.floats(allow_nan=True),
        hostile_text,
        st.sampled_from(KEYS + ["user", "client-id", "ip", "entity", "quota", "default"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(KEYS + ["user", "client-id", "ip", "entity", "quota", "default"]), inner, max_size=4
        ),
    ),
    max_leaves=12,
)


@CASES
@given(doc=quota_docs)
def test_quota_files_load_or_fail_with_one_line(doc):
    import json

    from kconfigs.quotafile import parse_quota_text

    try:
        text = json.dumps(doc)
    except ValueError:
        return
    try:
        parse_quota_text(text, "json", "q.json")
    except KconfigsError as err:
        assert "\n" not in str(err)
