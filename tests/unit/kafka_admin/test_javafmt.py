"""Java Double.toString / Double.parseDouble. Vectors were printed by JDK 17
(``Double.toString(Double.parseDouble(s))``); "NFE" = NumberFormatException."""

import math

import pytest

from kconfigs.javafmt import double_to_string, parse_java_double

JDK_VECTORS = [
    ("1024", "1024.0"),
    ("200", "200.0"),
    ("10485760", "1.048576E7"),
    ("2147483647", "2.147483647E9"),
    ("9223372036854775807", "9.223372036854776E18"),
    ("0.001", "0.001"),
    ("0.0009999", "9.999E-4"),
    ("1e-4", "1.0E-4"),
    ("1e7", "1.0E7"),
    ("9999999", "9999999.0"),
    ("9999999.5", "9999999.5"),
    ("123.456", "123.456"),
    ("-0.0", "-0.0"),
    ("0", "0.0"),
    ("-5", "-5.0"),
    ("NaN", "NaN"),
    ("Infinity", "Infinity"),
    ("-Infinity", "-Infinity"),
    ("1.5d", "1.5"),
    ("2f", "2.0"),
    (" 12 ", "12.0"),
    ("0x1p3", "8.0"),
    ("0x.8p1", "1.0"),
    ("1_000", "NFE"),
    ("inf", "NFE"),
    ("", "NFE"),
    (".", "NFE"),
    ("1e", "NFE"),
    ("1.0E-10", "1.0E-10"),
    ("1e21", "1.0E21"),
    ("1e22", "1.0E22"),
    ("4.9e-324", "4.9E-324"),
    ("1.7976931348623157E308", "1.7976931348623157E308"),
    ("0.1", "0.1"),
    ("100.25", "100.25"),
    ("12345678.9", "1.23456789E7"),
    ("1e300", "1.0E300"),
    ("0.000123", "1.23E-4"),
    ("+1", "1.0"),
    ("+NaN", "NaN"),
]


@pytest.mark.parametrize("text,expected", JDK_VECTORS)
def test_matches_jdk(text, expected):
    try:
        got = double_to_string(parse_java_double(text))
    except ValueError:
        got = "NFE"
    assert got == expected


def test_plain_notation_boundaries():
    # 10^-3 <= |d| < 10^7 prints plain; outside, computerized scientific notation.
    assert double_to_string(1e-3) == "0.001"
    assert double_to_string(9.99e-4) == "9.99E-4"
    assert double_to_string(9999999.999) == "9999999.999"
    assert double_to_string(-1e7) == "-1.0E7"


def test_parse_rejects_python_only_spellings():
    for text in ("inf", "nan", "1_0", "infinity", "0x10"):
        with pytest.raises(ValueError):
            parse_java_double(text)
    assert math.isnan(parse_java_double("NaN"))
