"""``--add-config`` / ``--delete-config`` grammar and Java properties (spec §2.1).

The expected results were produced by running kafka-configs 2.8.2's own expressions on JDK 17:
``s.split(",(?=[^\\]]*(?:\\[|$))")``, each piece ``.split("\\s*=\\s*(?=[^\\]]*(?:\\[|$))", -1)``,
key ``.trim()``, value ``.replaceAll("\\[?\\]?", "").trim()``.
"""

from pathlib import Path

import pytest

from kconfigs.config_grammar import load_properties, parse_add_config, parse_delete_config
from kconfigs.errors import UsageError

BAD_FORMAT = 'requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".'
GOLDEN = Path(__file__).parents[2] / "fixtures" / "golden" / "properties"

JDK_PARSED = [
    ("a=b,c=[d,e ,f],g=[h,i]", {"a": "b", "c": "d,e ,f", "g": "h,i"}),
    (
        "producer_byte_rate=1024, consumer_byte_rate = 2048",
        {"producer_byte_rate": "1024", "consumer_byte_rate": "2048"},
    ),
    ("k=", {"k": ""}),
    ("=v", {"": "v"}),
    ("k=[a]b]", {"k": "ab"}),
    ("k=[v1,v2]x,y=1", {"k": "v1,v2x", "y": "1"}),
    ("SCRAM-SHA-256=[iterations=8192,password=a=b]", {"SCRAM-SHA-256": "iterations=8192,password=a=b"}),
    ("a=b,", {"a": "b"}),
    ("a=b,,", {"a": "b"}),
    (",", {}),
    (",,", {}),
    ("a=b,c=,d=e,f=", {"a": "b", "c": "", "d": "e", "f": ""}),
    ("a = b , c= d", {"a": "b", "c": "d"}),
    (" a=b", {"a": "b"}),
    ("a=1,a=2", {"a": "2"}),  # Properties.setProperty: the last one wins
    ("k=[x=y]", {"k": "x=y"}),
    ("k=[]", {"k": ""}),
    ("[k]=v", {"[k]": "v"}),  # brackets are only stripped from values
    ("k = [ a , b ]", {"k": "a , b"}),
    ("x=[a,b],y=[c", {"x": "a,b", "y": "c"}),
    ("k=[[v]]", {"k": "v"}),
]

JDK_REJECTED = ["a==", "k=v=w", "a=[b,c,d=e", "a=b,,c=d", ",a=b", "a=]b[,c=d", "", " ", "a=b]c,d=e", "a=b, "]


@pytest.mark.parametrize("text, expected", JDK_PARSED)
def test_add_config_splits_like_kafka(text, expected):
    assert parse_add_config(text) == expected


def test_add_config_keeps_command_line_order():
    assert list(parse_add_config("b=1,a=2,c=3")) == ["b", "a", "c"]


@pytest.mark.parametrize("text", JDK_REJECTED)
def test_malformed_add_config_fails_with_kafkas_message(text):
    with pytest.raises(UsageError) as err:
        parse_add_config(text)
    assert str(err.value) == BAD_FORMAT


@pytest.mark.parametrize(
    "values, keys",
    [
        (["a,b,c"], ["a", "b", "c"]),
        (["missing_config1, missing_config2"], ["missing_config1", "missing_config2"]),
        (["a", " b "], ["a", "b"]),
    ],
)
def test_delete_config_splits_on_commas_and_trims(values, keys):
    assert parse_delete_config(values) == keys


def test_properties_file_matches_jdk_properties_load():
    text = (GOLDEN / "tricky.properties").read_bytes().decode("latin-1")
    expected = {}
    for line in (GOLDEN / "tricky.expected").read_text(encoding="utf-8").splitlines():
        key, _, value = line[1:-1].partition("]=[")
        expected[key.replace("\\t", "\t").replace("\\n", "\n")] = value.replace("\\t", "\t").replace("\\n", "\n")
    assert load_properties(text) == expected


def test_add_config_file_values_are_verbatim_as_in_config_command_test():
    # ConfigCommandTest.shouldParseConfigsFromFile (spec §8 case 4)
    text = 'a=b\nc = d\njson = {"key": "val"}\nnested = [[1, 2], [3, 4]]\n'
    assert load_properties(text) == {"a": "b", "c": "d", "json": '{"key": "val"}', "nested": "[[1, 2], [3, 4]]"}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("# only a comment\n", {}),
        ("k=v1\nk=v2\n", {"k": "v2"}),
        ("k\\\n  v\n", {"kv": ""}),
        ("producer_byte_rate : 10\n", {"producer_byte_rate": "10"}),
        ("a\\:b=c\n", {"a:b": "c"}),
    ],
)
def test_properties_edge_cases(text, expected):
    assert load_properties(text) == expected
