"""The one loader of quota records: the quotas of a quota file or of a store, as the
``(entity JSON, {quota key: float})`` records that ``kconfigs_enforcement.QuotaSnapshot`` resolves.

``resolve``, ``simulate``, ``analyze`` and the gateway read quotas through it, so a file or a store
means the same to each of them:

- a quota file is ``kconfigs.quotafile``'s (TOML, JSON or YAML by its suffix, docs/quota-file.md),
  every entry validated before any record is made;
- a store entry gives its quota keys (a user's SCRAM credentials share the entry and are left out
  unread); an entity with no quota key gives no record.

A stored value is read by one of two rules, each defined here once:

- :data:`STRICT` (one-shot commands): the exact number ``quotafile.number_from_store`` reads; a value
  that is not a finite number fails the command in one line naming the entity, key and value, since
  no report or file can say what it would mean;
- :data:`AS_BROKER` (the gateway, which must keep serving): read as Java's ``Double.parseDouble``
  reads it, as a broker does (``Infinity`` is no limit); a value even that cannot read keeps the
  value the entity had before (what a ZooKeeper-mode broker does with a change it cannot parse), or
  is left out when there was none; ``on_unreadable`` is told either way.
"""

from __future__ import annotations

from typing import Callable, Mapping

from kconfigs.keys import numeric_quotas, quota_configs
from kconfigs.model import QuotaEntity

#: (entity {"user"/"client-id"/"ip": name, None = default}, {quota key: value})
QuotaRecordTuple = tuple[dict[str, "str | None"], dict[str, float]]
#: told (entity, key, stored value, the value kept or None) for a value the broker rule cannot read
OnUnreadable = Callable[[QuotaEntity, str, str, "float | None"], None]

STRICT, AS_BROKER = "strict", "as-broker"


def records_from_file(path: str, fmt: str | None = None) -> list[QuotaRecordTuple]:
    """The records of the quota file at ``path`` (``fmt`` or its suffix's format, TOML by default).

    :raises UsageError: unreadable; :raises ValidationError: not a valid quota file
    """
    from kconfigs.quotafile import read_quota_file, snapshot_records

    return snapshot_records(read_quota_file(path, fmt))


def records_from_store(store) -> list[QuotaRecordTuple]:
    """The records of every entity in an open kconfigs Store, read by the :data:`STRICT` rule.

    :raises CorruptData: a stored quota that is not a finite number
    """
    from kconfigs.model import MATCH_ALL

    return records_of(quota_numbers({record.entity: record.configs for record in store.describe(MATCH_ALL)}))


def quota_numbers(
    view: Mapping[QuotaEntity, Mapping[str, str]],
    rule: str = STRICT,
    previous: Mapping[QuotaEntity, Mapping[str, float]] | None = None,
    on_unreadable: OnUnreadable | None = None,
) -> dict[QuotaEntity, dict[str, float]]:
    """The quota keys of each entity's stored configs as numbers; entities without one left out.

    :raises CorruptData: (:data:`STRICT` only) a value that is not a finite number
    """
    read = _read_strict if rule == STRICT else _reader_as_broker(previous or {}, on_unreadable)
    numbers: dict[QuotaEntity, dict[str, float]] = {}
    for entity, configs in view.items():
        quotas: dict[str, float] = {}
        for key, raw in quota_configs(configs).items():
            value = read(entity, key, raw)
            if value is not None:
                quotas[key] = value
        if quotas:
            numbers[entity] = quotas
    return numbers


def _read_strict(entity: QuotaEntity, key: str, raw: str) -> float:
    from kconfigs.quotafile import number_from_store

    return float(number_from_store(entity, key, raw))


def _reader_as_broker(
    previous: Mapping[QuotaEntity, Mapping[str, float]], on_unreadable: OnUnreadable | None
) -> Callable[[QuotaEntity, str, str], "float | None"]:
    def read(entity: QuotaEntity, key: str, raw: str) -> float | None:
        try:
            return float(numeric_quotas({key: raw})[key])
        except (TypeError, ValueError, OverflowError):
            kept = previous.get(entity, {}).get(key)
            if on_unreadable is not None:
                on_unreadable(entity, key, raw, kept)
            return kept

    return read


def records_of(numbers: Mapping[QuotaEntity, Mapping[str, float]]) -> list[QuotaRecordTuple]:
    """``(entity JSON, quotas)`` records of :func:`quota_numbers`' result."""
    return [(entity.to_json(), dict(quotas)) for entity, quotas in numbers.items()]
