"""Numbers read from a user, parsed as kafka-configs parses them, over generated strings:
Unicode digits, ``_``, whitespace, signs, exponents, hex floats, ``NaN``/``Infinity`` and the
``d``/``f`` suffixes, against the real parsers on the suite's JDK (Double.parseDouble, which the
``--bootstrap-server`` path uses as Scala's ``toDouble``, and Kafka's own ConfigDef, which ZooKeeper
mode validates ``--add-config`` values with). Python's ``float``/``int`` accept Unicode digits,
``_`` separators and Unicode spaces, so every difference shows up here."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest
from compat_support import jvm_examples
from hypothesis import example, given
from hypothesis import strategies as st

from harness.javac import java_program_command
from harness.versions import KAFKA_ZK_TOOL_VERSION
from kconfigs.errors import ValidationError
from kconfigs.javafmt import parse_java_double
from kconfigs.kafka_admin.quota_values import parse_quota_value
from kconfigs.keys import QUOTA_KEYS, ValueType, parse_value

pytestmark = pytest.mark.integration
PARSE_NUMBERS = Path(__file__).resolve().parent / "java" / "ParseNumbers.java"

#: pieces a number is written with, and the look-alikes Python's parsers also take
PIECES = [
    *"0123456789",
    "٥",  # ARABIC-INDIC DIGIT FIVE
    "０",  # FULLWIDTH DIGIT ZERO
    "१",  # DEVANAGARI DIGIT ONE
    "_",
    " ",
    "\t",
    "\n",
    "\x0b",
    "\x00",
    "\u00a0",
    "\u2003",
    "+",
    "-",
    ".",
    "e",
    "E",
    "0x",
    "0X",
    "p",
    "P",
    "a",
    "F",
    "d",
    "D",
    "f",
    "NaN",
    "Infinity",
    "inf",
    "nan",
]
NUMBERISH = st.lists(st.sampled_from(PIECES), min_size=0, max_size=8).map("".join)


@pytest.fixture(scope="module")
def java_parse():
    """The Java parsers, one JVM for the module: a string in, (double, ConfigDef LONG,
    ConfigDef DOUBLE) out, each the value (doubles as doubleToLongBits) or None."""
    process = subprocess.Popen(
        java_program_command(PARSE_NUMBERS, KAFKA_ZK_TOOL_VERSION, []),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )

    def parse(text: str) -> tuple[int | None, int | None, int | None]:
        process.stdin.write(text.encode("utf-8").hex() + "\n")
        process.stdin.flush()
        as_double, as_long, as_config_double = process.stdout.readline().split()
        return (
            None if as_double == "ERR" else int(as_double, 16),
            None if as_long == "ERR" else int(as_long),
            None if as_config_double == "ERR" else int(as_config_double, 16),
        )

    yield parse
    process.stdin.close()
    process.wait(timeout=30)


def double_bits(value: float) -> int:
    """Java's ``Double.doubleToLongBits``: every NaN is the one canonical NaN."""
    if value != value:
        return 0x7FF8000000000000
    return struct.unpack(">q", struct.pack(">d", value))[0] & 0xFFFFFFFFFFFFFFFF


def ours_double(text: str) -> int | None:
    try:
        return double_bits(parse_java_double(text))
    except ValueError:
        return None


def bits_value(bits: int) -> float:
    return struct.unpack(">d", struct.pack(">Q", bits))[0]


@jvm_examples(600)
@given(text=NUMBERISH)
@example("٥")
@example("1_000")
@example(" 5 ")
@example("\u00a05")
@example("0x1p3d")
@example("-Infinity")
@example("+NaN")
@example("1e400")
@example("٥.0")
def test_a_generated_number_parses_as_javas_parse_double(java_parse, text):
    """The --bootstrap-server path (``toDouble``) and everything else that mirrors it."""
    java_double, _, _ = java_parse(text)
    assert ours_double(text) == java_double, repr(text)
    try:
        wire = double_bits(parse_quota_value("producer_byte_rate", text))
    except ValidationError:
        wire = None
    assert wire == java_double, repr(text)


@jvm_examples(600)
@given(text=NUMBERISH, key=st.sampled_from(sorted(QUOTA_KEYS)))
@example("٥", "producer_byte_rate")
@example("1_000", "producer_byte_rate")
@example("+7", "producer_byte_rate")
@example("\t7\n", "connection_creation_rate")
@example("7.5d", "request_percentage")
def test_a_generated_value_is_checked_as_kafkas_config_def_parses_it(java_parse, text, key):
    """ZooKeeper mode: ConfigDef parses LONG/INT values with Long.parseLong, DOUBLE ones with
    Double.parseDouble, after String.trim(). kconfigs accepts what they accept, with the same
    value, except (deliberately) digits that are not ASCII: Long.parseLong takes ``٥`` as 5, but a
    znode holding ``٥`` would be refused by every kafka-configs over --bootstrap-server, and the
    non-finite and non-positive values kconfigs refuses in ZooKeeper mode."""
    _, java_long, java_config_double = java_parse(text)
    spec = QUOTA_KEYS[key]
    try:
        ours: int | float | None = parse_value(key, text)
    except ValidationError:
        ours = None
    if spec.value_type is ValueType.DOUBLE:
        java = None if java_config_double is None else bits_value(java_config_double)
    else:
        java = java_long
        if java is not None and not text.isascii():
            java = None  # the deliberate difference: non-ASCII digits
    if java is not None and (java != java or java in (float("inf"), float("-inf")) or java < 0):
        java = None  # refused by kconfigs in one line (README: deliberate differences)
    if java == 0 and not spec.zero_allowed:
        java = None
    assert ours == java, repr(text)
    if ours is not None:
        assert type(ours) is (float if spec.value_type is ValueType.DOUBLE else int)
