"""Use cases over a Store: the alter update function and describe queries. No printing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from kconfigs.errors import ValidationError, VersionConflict
from kconfigs.keys import QUOTA_KEYS, SCRAM_KEYS, check_keys, parse_value, quota_configs
from kconfigs.model import EntityFilter, QuotaEntity, QuotaRecord
from kconfigs.render import zk_entity_text
from kconfigs.stores.base import ConfigUpdate, Store


@dataclass(frozen=True)
class ConfigChange:
    """What an alter asks for: keys to set (raw strings, in order) and keys to remove."""

    add: Mapping[str, str]
    delete: Sequence[str] = ()


def prepare_add(entity: QuotaEntity, add: Mapping[str, str], salt: Callable[[], bytes]) -> dict[str, str]:
    """Turn SCRAM passwords into stored credentials whenever the entity's first type is users, as
    kafka-configs' ZK mode does before anything else is checked: a bad password value is the
    error even for a (user, client) entity or the default user, whose keys are checked next and
    refuse SCRAM keys as unknown."""
    if entity.user is None:
        return dict(add)
    prepared = dict(add)
    for mechanism in SCRAM_KEYS:  # in the enum's order, whatever the command line's
        if mechanism in add:
            from kconfigs.scram import credential  # a quota-only alter loads no SCRAM code

            prepared[mechanism] = credential(mechanism, add[mechanism], salt())
    return prepared


def merge_update(entity: QuotaEntity, change: ConfigChange) -> ConfigUpdate:
    """The pure read-merge step of an alter, run by the store inside its compare-and-set.

    Like kafka-configs: deleting a key that is not set fails with ``Invalid config(s): k1,k2``;
    adds are merged, deletes removed, and the merged key set is validated for the entity. Values
    being added are checked strictly (whole numbers for LONG/INT keys, > 0, finite); values
    already stored are left alone so an old odd value never blocks an unrelated change.
    """

    def update(current: Mapping[str, str]) -> Mapping[str, str]:
        missing = [k for k in change.delete if k not in current]
        if missing:
            raise ValidationError(f"Invalid config(s): {','.join(missing)}")
        merged = dict(current)
        merged.update(change.add)
        for key in change.delete:
            merged.pop(key, None)
        check_keys(entity, list(merged))
        for key in QUOTA_KEYS:  # Kafka's ConfigDef order: its first bad value is the one named
            if key in change.add:
                parse_value(key, change.add[key])
        return merged

    return update


def keys_to_delete(entity: QuotaEntity, current: Mapping[str, str], named: Sequence[str]) -> dict[str, str]:
    """What ``kconfigs delete`` removes, with the values it removes: the ``named`` keys, or with
    none named every quota key -- never the user's SCRAM credentials, which share the user's
    znode but are not quotas (deleting a user's quotas must not lock the user out).

    :raises ValidationError: a named key is not set (kafka-configs' text), or the entity has no
        quotas (a mistyped name must not read as a successful delete).
    """
    if named:
        missing = [k for k in dict.fromkeys(named) if k not in current]
        if missing:
            raise ValidationError(f"Invalid config(s): {','.join(missing)}")
        return {k: current[k] for k in dict.fromkeys(named)}
    quotas = quota_configs(current)
    if not quotas:
        raise ValidationError(f"{zk_entity_text(entity)} has no quotas: nothing deleted")
    return quotas


def deletion_update(entity: QuotaEntity, removing: Mapping[str, str]) -> ConfigUpdate:
    """The update function that removes ``removing``'s keys while they still hold the values the
    user confirmed; keys written since the read are kept, a key already gone is fine.

    :raises VersionConflict: a key to remove was given another value since it was read.
    """

    def update(current: Mapping[str, str]) -> Mapping[str, str]:
        for key, seen in removing.items():
            if key in current and current[key] != seen:
                raise VersionConflict(
                    f"{zk_entity_text(entity)}: {key} was changed by someone else since it was read; "
                    f"nothing deleted, re-run to see its new value"
                )
        return {k: v for k, v in current.items() if k not in removing}

    return update


def alter(store: Store, entity: QuotaEntity, change: ConfigChange, *, dry_run: bool = False) -> QuotaRecord:
    return store.alter(entity, merge_update(entity, change), validate_only=dry_run)


def describe(store: Store, entity_filter: EntityFilter) -> list[QuotaRecord]:
    return store.describe(entity_filter)
