"""Quota values between the admin API (float64) and kconfigs' raw strings (pure).

The wire carries doubles. kconfigs stores raw strings, formatted as a ZooKeeper-backed Kafka
stores them (``ZkAdminManager.alterClientQuotas``): LONG and INT keys as integers (``"1024"``),
DOUBLE keys with Java ``Double.toString`` (``"200.0"``, ``"1.0E7"``). So the same quota reads
back identically from every store. Types: Kafka's QuotaConfigs (spec 2.2).
"""

from __future__ import annotations

from kconfigs.errors import ValidationError
from kconfigs.javafmt import double_to_string, parse_java_double
from kconfigs.keys import WHOLE_NUMBER_KEYS

_LONG_RANGE = 2**63


def format_stored_value(key: str, value: float) -> str:
    """Wire double -> stored string: ``("producer_byte_rate", 1024.0) -> "1024"``."""
    if key in WHOLE_NUMBER_KEYS and value.is_integer() and abs(value) < _LONG_RANGE:
        return str(int(value))
    return double_to_string(value)


def parse_quota_value(key: str, text: str) -> float:
    """Stored/typed string -> wire double, as ``value.toDouble`` in kafka-configs.

    :raises ValidationError: ``Cannot parse quota configuration value for k: v``.
    """
    try:
        return parse_java_double(text)
    except ValueError:
        raise ValidationError(f"Cannot parse quota configuration value for {key}: {text}") from None
