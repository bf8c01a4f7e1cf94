"""kafka-configs ``--bootstrap-server`` SCRAM credentials (KIP-554), as pure functions.

Texts are ConfigCommand's (3.9.2, 4.3.1 and 4.4.0 print the same): the value grammar
``[iterations=<n>,]password=<pw>`` (``-1`` or no iterations = 4096), its two refusals, the
describe line, and the error for an alter that names no key and more than one entity.
The admin client refuses an empty password; the broker checks the rest (``Too many
iterations``, one change per user and request) and kconfigs passes its answer on verbatim.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from kconfigs.errors import KconfigsError, UsageError, ValidationError
from kconfigs.refused_keys import tool_keys
from kconfigs.scram import ScramUpsertion, UserScramDescription

DEFAULT_ITERATIONS = 4096
MIN_ITERATIONS = 4096  # ScramMechanism.minIterations, both mechanisms
# Java's "." stops at any line terminator, not only "\n".
_ANY = r"[^\n\r\u0085\u2028\u2029]"
_VALUE = re.compile(rf"(?:iterations=(-?[0-9]*),)?password=({_ANY}*)")
_INT_MAX = 2**31 - 1


def scram_upsertion(mechanism: str, value: str) -> ScramUpsertion:
    """ConfigCommand.alterUserScramCredentialConfigs' parse of ``SCRAM-SHA-256=[...]``.

    :raises UsageError: ``Invalid credential property SCRAM_SHA_256=<value>`` (the enum name) or
        ``Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256``;
        ValidationError: ``For input string: "<n>"`` (Scala ``toInt`` of an empty or too large number).
    """
    match = _VALUE.fullmatch(value)
    if match is None:
        raise UsageError(f"Invalid credential property {mechanism.replace('-', '_')}={value}")
    digits, password = match.groups()
    iterations = DEFAULT_ITERATIONS if digits in (None, "-1") else _java_int(digits)
    if iterations < MIN_ITERATIONS:
        raise UsageError(f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} required for {mechanism}")
    return ScramUpsertion(mechanism, iterations, password)


def check_passwords(upsertions: Sequence[ScramUpsertion]) -> None:
    """The Java admin client's own check, after the tool parsed every value (the broker only
    ever sees a salted password). :raises ValidationError: ``Password must not be empty``."""
    if any(not upsertion.password for upsertion in upsertions):
        raise ValidationError("Password must not be empty")


def _java_int(digits: str) -> int:
    """``Integer.parseInt``. :raises ValidationError: its NumberFormatException message."""
    if digits in ("", "-") or not -_INT_MAX - 1 <= int(digits) <= _INT_MAX:
        raise ValidationError(f'For input string: "{digits}"')
    return int(digits)


def describes_scram(types: Sequence[str], names: Sequence[str]) -> bool:
    """SCRAM lines follow the quota lines only for users, without clients and without a default."""
    return types[0] == "users" and "clients" not in types and "" not in names


def scram_describe_lines(descriptions: Iterable[UserScramDescription]) -> list[str]:
    """``SCRAM credential configs for user-principal 's1' are SCRAM-SHA-256=iterations=8192``."""
    lines = []
    for described in descriptions:
        if described.error is not None:
            lines.append(
                f"Error retrieving SCRAM credential configs for user-principal '{described.user}': "
                f"ExecutionException: {_java_exception(described.error)}"
            )
            continue
        pairs = ", ".join(f"{mechanism}=iterations={iterations}" for mechanism, iterations in described.credentials)
        lines.append(f"SCRAM credential configs for user-principal '{described.user}' are {pairs}")
    return lines


def _java_exception(error: KconfigsError) -> str:
    from kconfigs.kafka_admin.error_codes import java_exception_name

    return f"org.apache.kafka.common.errors.{java_exception_name(error.kafka_error_code)}: {error}"


def check_keyless_alter(names: Sequence[str], java_tool: bool = False) -> None:
    """An alter of users/clients with no key (an empty ``--add-config-file``) takes Kafka's SCRAM
    path with nothing to change: fine for one entity, an IllegalStateException for a
    (user, client) pair, whose names print as a Scala or a Java list.
    :raises ValidationError: that exception's text."""
    if len(names) != 1:
        raise ValidationError(
            "Altering user SCRAM credentials should never occur for more zero or multiple "
            f"users: {tool_keys(java_tool, (), ()).names_text(names)}"
        )
