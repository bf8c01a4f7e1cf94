"""Java ``.properties`` parsing, as ``java.util.Properties.load`` does it: the one reader for
``--command-config``, ``--add-config-file`` and ``--zk-tls-config-file``.

kafka-configs reads ``--command-config`` with ``Utils.loadProps`` = ``Properties.load(InputStream)``,
which decodes the file as ISO-8859-1. Python has no parser for this format (configparser needs
sections and handles neither escapes nor continuations), so it is written out here.

Rules (java.util.Properties#load javadoc):
- natural lines end with ``\\n``, ``\\r`` or ``\\r\\n``; an odd number of backslashes at the end
  continues the logical line, and the next line's leading whitespace is skipped;
- a line whose first non-blank char is ``#`` or ``!`` is a comment (and never continues), and so
  is a continued line when its logical line holds nothing yet (``\\`` alone, then ``# note``:
  JDK 17's reader tests for a comment while the logical line is empty, not at each line start);
- the key ends at the first unescaped ``=``, ``:`` or blank (space, tab, form feed); blanks
  then at most one ``=``/``:`` then blanks separate it from the value;
- escapes ``\\t \\n \\r \\f \\uXXXX``; any other ``\\c`` is ``c``;
- a repeated key: the last one wins.
"""

from __future__ import annotations

import re

from kconfigs.errors import ValidationError

_BLANKS = " \t\f"
_SEPARATORS = "=:"
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def read_properties(path: str) -> dict[str, str]:
    """Read a properties file like ``Utils.loadProps``: its bytes as ISO-8859-1, line ends as
    written. :raises OSError: unreadable (callers name the file their own way).
    :raises ValidationError: a bad ``\\u`` escape."""
    with open(path, "rb") as handle:
        return parse_properties(handle.read().decode("iso-8859-1"))


def load_properties_file(path: str) -> dict[str, str]:
    """:func:`read_properties`. :raises ValidationError: unreadable/bad."""
    try:
        return read_properties(path)
    except OSError as err:
        raise ValidationError(f"Cannot read properties file {path}: {err.strerror}") from None


def parse_properties(text: str) -> dict[str, str]:
    """Parse properties text into an ordered dict. :raises ValidationError: bad ``\\u`` escape."""
    result: dict[str, str] = {}
    for logical in _logical_lines(text):
        key, value = _split_key_value(logical)
        result[_unescape(key)] = _unescape(value)
    return result


def _natural_lines(text: str) -> list[tuple[str, str]]:
    """(line, its terminator) for \\n, \\r, \\r\\n (not the other separators str.splitlines
    knows); the last line's terminator is "" (it may itself be "" after a final terminator)."""
    pieces = re.split(r"(\r\n|\r|\n)", text)
    return [(pieces[i], pieces[i + 1] if i + 1 < len(pieces) else "") for i in range(0, len(pieces), 2)]


def _ends_with_continuation(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _logical_lines(text: str) -> list[str]:
    """Join continued lines; drop blank and comment lines.

    Java reads the file as a stream, so a backslash that continues into the end of the file
    behaves by how the file ends: a line of nothing but that backslash is an empty key when the
    backslash or its one-character line end (\\n or \\r) is the file's last character, and no
    line when \\r\\n or more blank text follows.
    """
    logical: list[str] = []
    lines = _natural_lines(text)
    index = 0
    while index < len(lines):
        line, end = lines[index]
        index += 1
        stripped = line.lstrip(_BLANKS)
        if not stripped or stripped[0] in "#!":
            continue
        keep_empty = False
        while _ends_with_continuation(stripped):
            stripped = stripped[:-1]  # the backslash that escapes the line end
            if end == "" or (end != "\r\n" and index == len(lines) - 1 and lines[index] == ("", "")):
                keep_empty = True  # the stream ended at the backslash or its line end
                break
            following, end = lines[index]
            index += 1
            following = following.lstrip(_BLANKS)
            if not stripped and following[:1] in ("#", "!"):
                break  # the logical line is still empty: JDK 17's reader takes this for a comment
            stripped += following
        if stripped or keep_empty:
            logical.append(stripped)
    return logical


def _split_key_value(line: str) -> tuple[str, str]:
    """Split one logical line (escapes still in place) into raw key and raw value."""
    index, escaped = 0, False
    while index < len(line):
        char = line[index]
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in _SEPARATORS or char in _BLANKS:
            break
        index += 1
    key, rest = line[:index], line[index:]
    rest = rest.lstrip(_BLANKS)
    if rest and rest[0] in _SEPARATORS:
        rest = rest[1:].lstrip(_BLANKS)
    return key, rest


def _unescape(raw: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(raw):
        char = raw[index]
        index += 1
        if char != "\\" or index >= len(raw):
            out.append(char if char != "\\" else "")
            continue
        code = raw[index]
        index += 1
        if code == "u":
            hex_digits = raw[index : index + 4]
            if len(hex_digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in hex_digits):
                raise ValidationError("Malformed \\uxxxx encoding.")
            out.append(chr(int(hex_digits, 16)))
            index += 4
        else:
            out.append(_SIMPLE_ESCAPES.get(code, code))
    return "".join(out)
