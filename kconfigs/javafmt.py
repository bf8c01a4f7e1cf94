"""Java's ``Double.toString`` and ``Double.parseDouble``, as pure functions.

kafka-configs prints quota values with ``Double.toString`` (``1024.0``, ``1.048576E7``) and
parses ``--add-config`` values with Scala's ``String.toDouble`` (= ``Double.parseDouble``).
Python's ``repr``/``float`` differ in both directions (``1e7`` vs ``1.0E7``; ``float`` accepts
``inf``/``1_000`` and rejects ``1.5d``), so both are written out here.

Digits: Python's ``repr`` gives the shortest digit string that round-trips, which is what
``Double.toString`` produces since JDK 19 (JDK-4511638). JDK <= 18 sometimes printed one digit
too many (e.g. ``2.0E-3`` cases around powers of ten); quota values are integers or short
decimals, where all JDKs agree.
"""

from __future__ import annotations

import math
import re

# Double.toString uses plain notation for 10^-3 <= |d| < 10^7, else computerized scientific.
_PLAIN_MIN = 1e-3
_PLAIN_MAX = 1e7
_DOUBLE_MIN_VALUE = 5e-324

# Double.parseDouble grammar (java.lang.Double.valueOf javadoc), after String.trim(). Its digits
# are ASCII only ("٥", the Arabic-Indic 5, is a NumberFormatException), where Python's \d and
# float() take every Unicode decimal digit: the classes are spelt out.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?")
_HEX = re.compile(r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?")
_SPECIAL = {
    "NaN": math.nan,
    "+NaN": math.nan,
    "-NaN": math.nan,
    "Infinity": math.inf,
    "+Infinity": math.inf,
    "-Infinity": -math.inf,
}


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip digits of a positive finite ``value`` and its decimal exponent
    ``e`` such that value = d.ddd x 10^e. Example: 10485760.0 -> ("1048576", 7)."""
    from decimal import Decimal  # only when a double is printed: a describe of stored text needs none

    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    exponent += len(digit_tuple) - len(digits)  # leading zeros removed don't move the value
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    # value = int(stripped) * 10^exponent = d.ddd * 10^(exponent + len - 1)
    return stripped, exponent + len(stripped) - 1


def double_to_string(value: float) -> str:
    """Java ``Double.toString(value)``: ``1024.0``, ``0.001``, ``1.048576E7``, ``1.0E-4``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    if abs(value) == _DOUBLE_MIN_VALUE:
        # every JDK prints Double.MIN_VALUE as 4.9E-324 (repr's shortest form is 5e-324)
        return ("-" if value < 0 else "") + "4.9E-324"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    digits, exp10 = _shortest_digits(magnitude)
    if _PLAIN_MIN <= magnitude < _PLAIN_MAX:
        if exp10 >= 0:
            integer = digits[: exp10 + 1].ljust(exp10 + 1, "0")
            fraction = digits[exp10 + 1 :] or "0"
        else:
            integer, fraction = "0", "0" * (-exp10 - 1) + digits
        return f"{sign}{integer}.{fraction}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp10}"


def parse_java_double(text: str) -> float:
    """Java ``Double.parseDouble(text)``.

    Accepts what Java accepts (surrounding whitespace/control chars, a ``d``/``f`` suffix,
    ``NaN``, ``Infinity``, hex floats ``0x1p3``) and nothing else (no ``inf``, no ``1_000``).
    :raises ValueError: where Java throws NumberFormatException.
    """
    trimmed = java_trim(text)
    if trimmed in _SPECIAL:
        return _SPECIAL[trimmed]
    if _DECIMAL.fullmatch(trimmed):
        return float(trimmed.rstrip("fFdD"))
    hex_match = _HEX.fullmatch(trimmed)
    if hex_match:
        magnitude = float.fromhex("0x" + hex_match.group(2))
        return -magnitude if hex_match.group(1) == "-" else magnitude
    raise ValueError(f'For input string: "{text}"')


#: Long.parseLong / Integer.parseInt syntax, ASCII digits only: Java's Character.digit also takes
#: other Unicode decimal digits (``٥`` as 5), which kconfigs refuses (README: deliberate differences)
_INTEGER = re.compile(r"[+-]?[0-9]+")


def parse_java_integer(text: str, max_value: int) -> int:
    """``Long.parseLong`` (``max_value`` 2**63 - 1) or ``Integer.parseInt`` (2**31 - 1) of
    ``text`` after ``String.trim()``, as Kafka's ConfigDef parses LONG and INT values: no ``_``,
    no other spaces. :raises ValueError: where Java throws NumberFormatException."""
    trimmed = java_trim(text)
    if not _INTEGER.fullmatch(trimmed) or not -max_value - 1 <= int(trimmed) <= max_value:
        raise ValueError(f'For input string: "{text}"')
    return int(trimmed)


def java_trim(text: str) -> str:
    """``String.trim()`` strips every char <= U+0020 (not Unicode whitespace)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]
