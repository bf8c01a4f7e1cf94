"""kafka-configs' ``--add-config`` / ``--delete-config`` grammar and Java ``.properties`` files.

Pure. The ``--add-config`` split is Kafka's bracket-aware regex: a comma or ``=`` splits only
when it is not inside ``[...]``; every ``[`` and ``]`` is then removed from the value.
"""

from __future__ import annotations

import re

from kconfigs.errors import UsageError

# L = (?=[^\]]*(?:\[|$)): "not inside a [...] group" (Kafka ConfigCommand.parseConfigsToBeAdded).
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
_PAIR_SPLIT = re.compile("," + _OUTSIDE_BRACKETS)
_KEY_VALUE_SPLIT = re.compile(r"\s*=\s*" + _OUTSIDE_BRACKETS)
_BAD_FORMAT = 'requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".'


def _java_split(pattern: re.Pattern[str], text: str) -> list[str]:
    """``String.split(regex)``: trailing empty strings are dropped (limit 0), except that an
    input with no match at all comes back whole, even when empty (``"".split(",")`` is ``[""]``)."""
    parts = pattern.split(text)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_add_config(text: str) -> dict[str, str]:
    """Parse ``k1=v1,k2=[a,b]`` into an ordered dict; a repeated key keeps its last value.

    :raises UsageError: with kafka-configs' exact message when a piece is not ``key=val``.
    """
    configs: dict[str, str] = {}
    for piece in _java_split(_PAIR_SPLIT, text):
        key_value = _KEY_VALUE_SPLIT.split(piece)  # limit -1: keeps empty trailing parts
        if len(key_value) != 2:
            raise UsageError(_BAD_FORMAT)
        key, value = key_value
        configs[key.strip()] = re.sub(r"[\[\]]", "", value).strip()
    return configs


def parse_delete_config(values: list[str]) -> list[str]:
    """Each ``--delete-config`` value is split on ``,`` and each key trimmed."""
    return [key.strip() for value in values for key in value.split(",")]


def load_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text as ``java.util.Properties.load`` does.

    Hand-written because no maintained PyPI package reproduces Properties.load exactly
    (continuation lines, ``\\uXXXX`` escapes, ``:``/``=``/whitespace separators, ``#``/``!``).
    """
    props: dict[str, str] = {}
    for logical in _logical_lines(text):
        key, value = _split_key_value(logical)
        props[_unescape(key)] = _unescape(value)
    return props


def _logical_lines(text: str):
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes continues the line
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _split_key_value(line: str) -> tuple[str, str]:
    """The key ends at the first unescaped ``=``, ``:`` or whitespace; one ``=``/``:`` after
    optional whitespace is part of the separator."""
    i, n = 0, len(line)
    while i < n and line[i] not in "=: \t\f":
        i += 2 if line[i] == "\\" else 1
    key, rest = line[:i], line[i:]
    stripped = rest.lstrip(" \t\f")
    if stripped[:1] in ("=", ":"):
        stripped = stripped[1:].lstrip(" \t\f")
    return key, stripped


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6] or ""):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)
