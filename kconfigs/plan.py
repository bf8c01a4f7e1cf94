"""Desired quotas (a quota file) vs the store's quotas → an ordered plan of per-entity changes.

Pure: no I/O. Only quota keys are planned; other keys an entity may hold (SCRAM credentials on a
user's znode) are never touched. Keys and entities that are in the store but not in the file are
removed only with ``prune``; without it they are counted in ``Plan.left_alone``.

Each entity's change is applied through ``Store.alter`` with :func:`cas_update`, which re-checks
the keys it touches against what the plan saw, so a concurrent change is reported, not clobbered,
and an entity that already has the desired values is left as it is (a re-run converges).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping

from kconfigs.errors import VersionConflict
from kconfigs.keys import QUOTA_KEYS
from kconfigs.model import QuotaEntity, QuotaRecord
from kconfigs.quotafile import DesiredQuota, Number, entity_sort_key, number_from_store, store_value
from kconfigs.render import zk_entity_text
from kconfigs.stores.base import ConfigUpdate


class Action(str, Enum):
    ADD = "add"
    CHANGE = "change"
    REMOVE = "remove"


@dataclass(frozen=True)
class KeyChange:
    """One key: ``old`` None = absent before (add); ``new`` None = removed."""

    key: str
    old: Number | None
    new: Number | None

    @property
    def action(self) -> Action:
        if self.old is None:
            return Action.ADD
        return Action.REMOVE if self.new is None else Action.CHANGE


@dataclass(frozen=True)
class EntityPlan:
    """The changes of one entity; applied atomically."""

    entity: QuotaEntity
    changes: tuple[KeyChange, ...]
    had_quotas: bool  # the entity had quota keys when the plan was made
    removes_everything: bool = False  # pruned: every quota key of the entity goes

    @property
    def action(self) -> Action:
        if not self.had_quotas:
            return Action.ADD
        return Action.REMOVE if self.removes_everything else Action.CHANGE


@dataclass(frozen=True)
class Plan:
    entities: tuple[EntityPlan, ...]
    left_alone: int = 0  # keys in the store, absent from the file, kept because prune was off

    @property
    def in_sync(self) -> bool:
        return not self.entities

    def key_counts(self) -> dict[str, int]:
        counts = {a.value: 0 for a in Action}
        for item in self.entities:
            for change in item.changes:
                counts[change.action.value] += 1
        return counts

    def entity_counts(self) -> dict[str, int]:
        counts = {a.value: 0 for a in Action}
        for item in self.entities:
            counts[item.action.value] += 1
        return counts


def current_quotas(records: Iterable[QuotaRecord]) -> dict[QuotaEntity, dict[str, Number]]:
    """Quota keys of each stored entity, as numbers. :raises CorruptData:"""
    out: dict[QuotaEntity, dict[str, Number]] = {}
    for record in records:
        quotas = {k: number_from_store(record.entity, k, v) for k, v in record.configs.items() if k in QUOTA_KEYS}
        if quotas:
            out[record.entity] = quotas
    return out


def build_plan(desired: Iterable[DesiredQuota], actual: Iterable[QuotaRecord], *, prune: bool) -> Plan:
    """Changes that make the store hold ``desired``: adds and changes first, pure removals last,
    each group in the export order (so an interrupted apply has added before it deleted)."""
    current = current_quotas(actual)
    wanted = {d.entity: dict(d.quotas) for d in desired}
    plans: list[EntityPlan] = []
    left_alone = 0
    for entity in sorted(set(current) | set(wanted), key=entity_sort_key):
        have, want = current.get(entity, {}), wanted.get(entity, {})
        changes = [KeyChange(k, have.get(k), v) for k, v in want.items() if have.get(k) != v]
        extra = [KeyChange(k, have[k], None) for k in sorted(set(have) - set(want))]
        if prune:
            changes += extra
        else:
            left_alone += len(extra)
        if changes:
            plans.append(
                EntityPlan(entity, tuple(changes), had_quotas=bool(have), removes_everything=prune and not want)
            )
    plans.sort(key=lambda p: p.action is Action.REMOVE)  # stable: keeps the export order inside groups
    return Plan(tuple(plans), left_alone)


def cas_update(item: EntityPlan) -> ConfigUpdate:
    """The update function for ``store.alter``: apply ``item`` if the keys it touches still hold
    what the plan saw; do nothing if they already hold the new values.

    :raises VersionConflict: a key was changed by someone else since the plan was made.
    """

    def update(current: Mapping[str, str]) -> Mapping[str, str]:
        now = {c.key: _number_or_none(item.entity, c.key, current.get(c.key)) for c in item.changes}
        if all(now[c.key] == c.new for c in item.changes):
            return current  # already as desired (a re-run, or someone made the same change)
        moved = [c for c in item.changes if now[c.key] != c.old]
        if moved:
            first = moved[0]
            raise VersionConflict(
                f"{zk_entity_text(item.entity)} changed while applying: {first.key} was "
                f"{_show(first.old)} in the plan, is now {_show(now[first.key])}; not overwritten, re-run to re-plan"
            )
        result = dict(current)
        for change in item.changes:
            if change.new is None:
                result.pop(change.key, None)
            else:
                result[change.key] = store_value(change.key, change.new)
        return result

    return update


def _number_or_none(entity: QuotaEntity, key: str, raw: str | None) -> Number | None:
    return None if raw is None else number_from_store(entity, key, raw)


def _show(value: Number | None) -> str:
    return "absent" if value is None else str(value)
