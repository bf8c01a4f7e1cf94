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


class AddConfigFormatError(UsageError):
    """A piece of ``--add-config`` is not ``key=val`` (the message is kafka-configs 2.8/3.x's;
    4.x words it differently, so compat mode may reword it)."""


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
    """Parse ``k1=v1,k2=[a,b]`` into an ordered dict; a repeated key keeps its last value
    (kafka-configs' Properties do the same).

    :raises UsageError: with kafka-configs' exact message when a piece is not ``key=val``.
    """
    return dict(add_config_pairs(text))


def add_config_pairs(text: str) -> list[tuple[str, str]]:
    """The ``(key, value)`` pairs of ``k1=v1,k2=[a,b]`` in order, repeats included.

    :raises UsageError: with kafka-configs' exact message when a piece is not ``key=val``.
    """
    pairs = []
    for piece in _java_split(_PAIR_SPLIT, text):
        key_value = _KEY_VALUE_SPLIT.split(piece)  # limit -1: keeps empty trailing parts
        if len(key_value) != 2:
            raise AddConfigFormatError(_BAD_FORMAT)
        key, value = key_value
        pairs.append((key.strip(), re.sub(r"[\[\]]", "", value).strip()))
    return pairs


def parse_delete_config(values: list[str]) -> list[str]:
    """Each ``--delete-config`` value is split on ``,`` and each key trimmed.

    The split is joptsimple's ``withValuesSeparatedBy(',')``, a ``StringTokenizer``: empty
    items vanish (``k,`` / ``,k`` / ``k,,k2``), and a value with no item at all (``,`` or ``""``)
    is kept whole, so ``--delete-config ,`` asks to delete a key named ``,``.
    """
    return [key.strip() for value in values for key in (_tokens(value) or [value])]


def _tokens(value: str) -> list[str]:
    return [token for token in value.split(",") if token]
