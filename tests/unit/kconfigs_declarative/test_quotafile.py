"""kconfigs.quotafile: the one quota-file format (docs/quota-file.md)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconfigs.errors import ValidationError
from kconfigs.model import DEFAULT, QuotaEntity, QuotaRecord
from kconfigs.quotafile import (
    DesiredQuota,
    desired_from_records,
    entity_sort_key,
    format_for_path,
    parse_quota_text,
    render_quota_text,
)

SAMPLE = """
[[quota]]
entity = { user = "CN=alice,OU=x", client-id = { default = true } }
producer_byte_rate = 1e6
request_percentage = 200

[[quota]]
entity = { user = { default = true } }
consumer_byte_rate = 9223372036854775807

[[quota]]
entity = { user = { name = "<default>" } }
producer_byte_rate = 1

[[quota]]
entity = { ip = "10.0.0.1" }
connection_creation_rate = 0
"""


def _one_error(text: str, fmt: str = "toml") -> str:
    with pytest.raises(ValidationError) as info:
        parse_quota_text(text, fmt, "q.toml")
    return str(info.value)


def test_parse_reads_names_defaults_and_numbers_exactly():
    desired = {d.entity: dict(d.quotas) for d in parse_quota_text(SAMPLE, "toml", "q.toml")}
    assert desired == {
        QuotaEntity(user="CN=alice,OU=x", client_id=DEFAULT): {
            "producer_byte_rate": 1000000,
            "request_percentage": 200.0,
        },
        QuotaEntity(user=DEFAULT): {"consumer_byte_rate": 2**63 - 1},
        QuotaEntity(user="<default>"): {"producer_byte_rate": 1},
        QuotaEntity(ip="10.0.0.1"): {"connection_creation_rate": 0},
    }
    assert isinstance(desired[QuotaEntity(user=DEFAULT)]["consumer_byte_rate"], int)


def test_bare_default_string_is_refused_as_ambiguous():
    message = _one_error('[[quota]]\nentity = { client-id = "<default>" }\nproducer_byte_rate = 1\n')
    assert message == (
        'q.toml: [[quota]] #1: client-id = "<default>" is ambiguous: write { default = true } for '
        'the default client-id, or { name = "<default>" } for one literally named <default>'
    )


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            'entity = { user = "x" }\nproducer_byte_rate = -1',
            "q.toml: [[quota]] #1 (user-principal 'x'): producer_byte_rate: Invalid value -1 for configuration "
            "producer_byte_rate: Value must be at least 0",
        ),
        (
            'entity = { user = "x" }\nproducer_byte_rate = 1.5',
            "q.toml: [[quota]] #1 (user-principal 'x'): producer_byte_rate: Invalid value 1.5 for configuration "
            "producer_byte_rate: Not a number of type LONG",
        ),
        (
            'entity = { user = "x" }\nproducer_byte_rate = "fast"',
            "q.toml: [[quota]] #1 (user-principal 'x'): producer_byte_rate must be a number, not 'fast'",
        ),
        (
            'entity = { client-id = "c" }\nproducer_ids_rate = 1',
            "q.toml: [[quota]] #1 (client-id 'c'): producer_ids_rate is not a quota key of this entity (valid: "
            "producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate)",
        ),
        (
            'entity = { ip = "not-an-ip" }\nconnection_creation_rate = 1',
            "q.toml: [[quota]] #1: not-an-ip is not a valid IP address literal",
        ),
        (
            'entity = { user = "x", ip = "1.2.3.4" }\nconnection_creation_rate = 1',
            "q.toml: [[quota]] #1: Invalid quota entity combination, IP entity should not be used with "
            "user/client ID entity.",
        ),
        (
            'entity = { group = "g" }\nproducer_byte_rate = 1',
            "q.toml: [[quota]] #1: unknown entity type(s) group (use user, client-id, ip)",
        ),
        (
            'entity = { user = "x" }',
            "q.toml: [[quota]] #1 (user-principal 'x'): no quota keys (leave the entity out, and use --prune, "
            "to remove its quotas)",
        ),
        (
            'entity = { user = "x" }\nrequest_percentage = inf',
            "q.toml: [[quota]] #1 (user-principal 'x'): request_percentage: Invalid value inf for configuration "
            "request_percentage: Not a number of type DOUBLE",
        ),
    ],
)
def test_bad_entries_fail_with_one_line_naming_file_entity_and_key(body, expected):
    assert _one_error("[[quota]]\n" + body + "\n") == expected


def test_repeated_entity_names_both_entries():
    text = '[[quota]]\nentity = {user = "a"}\nproducer_byte_rate = 1\n' * 2
    assert _one_error(text) == "q.toml: [[quota]] #2 (user-principal 'a') repeats [[quota]] #1"


def test_json_may_write_null_for_the_default_as_kafkas_api_does():
    text = '{"quota": [{"entity": {"user": null, "client-id": "c"}, "producer_byte_rate": 5}]}'
    assert parse_quota_text(text, "json") == [
        DesiredQuota(QuotaEntity(user=DEFAULT, client_id="c"), {"producer_byte_rate": 5})
    ]


def test_bad_toml_and_json_syntax_are_one_line_errors():
    assert _one_error("[[quota]\n").startswith("q.toml: not valid TOML: ")
    assert _one_error("{", "json").startswith("q.toml: not valid JSON: ")


@pytest.mark.parametrize("fmt", ["toml", "json", "yaml"])
def test_render_then_parse_is_identity_in_every_format(fmt):
    desired = sorted(parse_quota_text(SAMPLE, "toml"), key=lambda d: entity_sort_key(d.entity))
    text = render_quota_text(desired, fmt)
    assert parse_quota_text(text, fmt) == desired
    assert render_quota_text(parse_quota_text(text, fmt), fmt) == text


def test_render_is_sorted_and_one_line_per_entity():
    text = render_quota_text(parse_quota_text(SAMPLE, "toml"))
    assert text == (
        "[[quota]]\nentity = { user = { default = true } }\nconsumer_byte_rate = 9223372036854775807\n\n"
        '[[quota]]\nentity = { user = { name = "<default>" } }\nproducer_byte_rate = 1\n\n'
        '[[quota]]\nentity = { user = "CN=alice,OU=x", client-id = { default = true } }\n'
        "producer_byte_rate = 1000000\nrequest_percentage = 200.0\n\n"
        '[[quota]]\nentity = { ip = "10.0.0.1" }\nconnection_creation_rate = 0\n'
    )


def test_export_of_store_records_drops_scram_and_reads_longs_exactly():
    records = [
        QuotaRecord(
            QuotaEntity(user="u"),
            {"SCRAM-SHA-256": "salt=...", "producer_byte_rate": "9007199254740993", "consumer_byte_rate": "1048576.0"},
        ),
        QuotaRecord(QuotaEntity(user="empty"), {}),
    ]
    assert desired_from_records(records) == [
        DesiredQuota(QuotaEntity(user="u"), {"producer_byte_rate": 9007199254740993, "consumer_byte_rate": 1048576})
    ]


def test_format_follows_the_suffix_unless_given():
    assert [format_for_path(p) for p in ("a.toml", "a.JSON", "a.yml", "a.yaml", "a", "-")] == [
        "toml",
        "json",
        "yaml",
        "yaml",
        "toml",
        "toml",
    ]
    assert format_for_path("a.toml", "json") == "json"


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
_component = st.one_of(_names, st.just(DEFAULT), st.just("<default>"))
_entities = st.one_of(
    st.builds(lambda u: QuotaEntity(user=u), _component),
    st.builds(lambda c: QuotaEntity(client_id=c), _component),
    st.builds(lambda u, c: QuotaEntity(user=u, client_id=c), _component, _component),
    st.builds(lambda a: QuotaEntity(ip=a), st.one_of(st.ip_addresses(v=4).map(str), st.just(DEFAULT))),
)
_long = st.integers(min_value=1, max_value=2**63 - 1)
_double = st.floats(min_value=1e-9, max_value=1e300, allow_nan=False, allow_infinity=False)


def _quotas(entity: QuotaEntity):
    if entity.ip is not None:
        return st.fixed_dictionaries({"connection_creation_rate": st.integers(0, 2**31 - 1)})
    return st.fixed_dictionaries({}, optional={"producer_byte_rate": _long, "request_percentage": _double}).filter(bool)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        _entities.flatmap(lambda e: _quotas(e).map(lambda q: DesiredQuota(e, q))),
        max_size=8,
        unique_by=lambda d: d.entity,
    ),
    st.sampled_from(["toml", "json", "yaml"]),
)
def test_any_quota_set_round_trips(desired, fmt):
    expected = sorted(desired, key=lambda d: entity_sort_key(d.entity))
    assert parse_quota_text(render_quota_text(desired, fmt), fmt) == expected


@pytest.mark.parametrize("fmt", ["toml", "json", "yaml"])
@pytest.mark.parametrize("where", ["quota key", "entity component"])
def test_a_key_given_twice_is_refused_in_every_format(fmt, where):
    """TOML refuses it; JSON and YAML parsers kept the last value in silence, so one of two
    conflicting quotas (or users) was applied unannounced."""
    repeated = "producer_byte_rate" if where == "quota key" else "user"
    text = {
        ("toml", "quota key"): '[[quota]]\nentity = { user = "a" }\nproducer_byte_rate = 1\nproducer_byte_rate = 2\n',
        ("toml", "entity component"): '[[quota]]\nentity = { user = "a", user = "b" }\nproducer_byte_rate = 1\n',
        (
            "json",
            "quota key",
        ): '{"quota": [{"entity": {"user": "a"}, "producer_byte_rate": 1, "producer_byte_rate": 2}]}',
        ("json", "entity component"): '{"quota": [{"entity": {"user": "a", "user": "b"}, "producer_byte_rate": 1}]}',
        ("yaml", "quota key"): "quota:\n  - entity: {user: a}\n    producer_byte_rate: 1\n    producer_byte_rate: 2\n",
        ("yaml", "entity component"): "quota:\n  - entity: {user: a, user: b}\n    producer_byte_rate: 1\n",
    }[(fmt, where)]
    with pytest.raises(ValidationError) as refused:
        parse_quota_text(text, fmt, "q")
    assert str(refused.value).startswith(f"q: not valid {fmt.upper()}: ")
    assert fmt == "toml" or repeated in str(refused.value)  # tomllib: "Cannot overwrite a value"


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_the_same_key_in_different_objects_is_fine(fmt):
    text = {
        "json": '{"quota": [{"entity": {"user": "a"}, "producer_byte_rate": 1}, '
        '{"entity": {"user": "b"}, "producer_byte_rate": 2}]}',
        "yaml": "quota:\n  - entity: {user: a}\n    producer_byte_rate: 1\n"
        "  - entity: {user: b}\n    producer_byte_rate: 2\n",
    }[fmt]
    assert [(d.entity.user, d.quotas) for d in parse_quota_text(text, fmt, "q")] == [
        ("a", {"producer_byte_rate": 1}),
        ("b", {"producer_byte_rate": 2}),
    ]
