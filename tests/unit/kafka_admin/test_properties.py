"""java.util.Properties parsing, checked against what JDK 17 returned for the same file."""

from pathlib import Path

import pytest

from kconfigs.errors import ValidationError
from kconfigs.java_properties import load_properties_file, parse_properties

GOLDEN = Path(__file__).parents[2] / "fixtures" / "golden" / "properties"


def _show(text):
    return text.replace("\n", "\\n").replace("\t", "\\t")


def test_tricky_file_matches_jdk_properties_load():
    # Expected output came from: Properties p = new Properties(); p.load(new FileInputStream(f));
    # then "[" + k + "]=[" + v + "]" for each key sorted.
    parsed = load_properties_file(str(GOLDEN / "tricky.properties"))
    lines = [f"[{_show(k)}]=[{_show(v)}]" for k, v in sorted(parsed.items())]
    assert lines == (GOLDEN / "tricky.expected").read_text(encoding="utf-8").splitlines()


def test_jaas_config_continued_over_lines_joins_with_single_spaces():
    text = (
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="admin" \\\n    password="admin-secret";\n'
    )
    assert parse_properties(text)["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
    )


def test_separators_and_escaped_separator_in_key():
    assert parse_properties("a=b\nc : d\ne f\nk\\:x=1\n") == {"a": "b", "c": "d", "e": "f", "k:x": "1"}


def test_file_is_read_as_iso_8859_1_like_java():
    # Properties.load(InputStream) decodes bytes as ISO-8859-1: UTF-8 "é" becomes two chars.
    assert parse_properties("k=caf\u00c3\u00a9") == {"k": "caf\u00c3\u00a9"}


def test_last_duplicate_wins_and_comment_does_not_continue():
    assert parse_properties("# c \\\nx=1\nx=2\n! also\n") == {"x": "2"}


def test_malformed_unicode_escape_is_one_clear_error():
    with pytest.raises(ValidationError, match=r"Malformed \\uxxxx encoding."):
        parse_properties("k=\\u12")


def test_missing_file_is_one_clear_error(tmp_path):
    with pytest.raises(ValidationError, match="Cannot read properties file .*nope.properties"):
        load_properties_file(str(tmp_path / "nope.properties"))


def test_a_backslash_continued_into_the_end_of_the_file_reads_as_java_streams_it():
    # Kafka 2.8.2 and 3.9.2 read these with Properties.load: a lone backslash is an empty key
    # when it, or its one-character line end, ends the file; no line when \r\n or blanks follow.
    assert parse_properties("a=1\\\n 2\r\n\\\r\n") == {"a": "12"}
    assert parse_properties("a=1\n\\") == {"a": "1", "": ""}
    assert parse_properties("a=1\n\\\n") == {"a": "1", "": ""}
    assert parse_properties("\\\n\nb=3\n\\\n   ") == {"b": "3"}
    assert parse_properties("b=3\\") == {"b": "3"}
    # a comment: JDK 17's Properties.load tests for one while the logical line is still empty,
    # and a comment never continues
    assert parse_properties("\\\n#x=1") == {}
    assert parse_properties("\\\n  !x\\\nk=v\n") == {"k": "v"}
