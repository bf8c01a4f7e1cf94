"""The Store protocol: what every quota store (ZooKeeper, embedded SQLite, Kafka admin API) offers.

Stores return model types only and every write is all-or-nothing. The read-merge-write of an
alter is a compare-and-set: the store reads the current configs with their version, calls the
caller's pure ``update`` function, and writes only if nobody wrote in between (retrying
otherwise), so concurrent alters of different keys never lose one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Protocol

from kconfigs.errors import KconfigsError, PartialFailure
from kconfigs.model import EntityFilter, QuotaEntity, QuotaRecord

# Pure function from the current configs of an entity to its new configs. It may raise a
# KconfigsError (e.g. "Invalid config(s): k"), which aborts the alter with nothing written.
ConfigUpdate = Callable[[Mapping[str, str]], Mapping[str, str]]


@dataclass(frozen=True)
class StoreChange:
    """Entities whose configs changed; an empty ``configs`` means the entity has no quotas now."""

    records: tuple[QuotaRecord, ...]
    full_snapshot: bool = False  # True on the first delivery and after a resync


class Watch(Protocol):
    def close(self) -> None: ...


class Store(Protocol):
    """A quota store. Implementations: ZooKeeperStore, SqliteStore, AdminApiStore."""

    #: "zookeeper" | "sqlite" | "admin-api": renderers use it to pick kafka-configs' text style.
    kind: str

    def describe(self, entity_filter: EntityFilter) -> list[QuotaRecord]:
        """Entities that exist in the store and match, with their raw configs (may be empty).

        :raises StoreUnavailable, CorruptData:
        """

    def alter(self, entity: QuotaEntity, update: ConfigUpdate, *, validate_only: bool = False) -> QuotaRecord:
        """Atomically replace ``entity``'s configs with ``update(current)`` and notify brokers.

        An empty result removes the entity's configs (Kafka 3.5+ deletes the empty znode).
        :raises StoreUnavailable, VersionConflict, and whatever ``update`` raises:
        """

    def alter_many(self, changes: Iterable[tuple[QuotaEntity, ConfigUpdate]]) -> list[QuotaRecord]:
        """Apply several alters, each atomic per entity; on failure raises PartialFailure
        naming what was and was not applied."""

    def watch(self, on_change: Callable[[StoreChange], None], on_state: Callable[[str], None] | None = None) -> Watch:
        """Call ``on_change`` with a full snapshot, then with every change until closed.

        ``on_state`` receives "connected" / "lost" / "resynced" so callers can log; while lost
        the caller keeps its last snapshot.
        """

    def close(self) -> None: ...


class AlterManyFailed(PartialFailure):
    """``alter_many`` applied some entities and not others, and says exactly which.

    ``applied``: records written (or already as wanted); ``failed``: (entity, error) not written;
    ``unknown``: entities whose write was sent when the connection was lost (it may or may not
    have happened; a re-run converges); ``not_attempted``: entities never tried; ``store_lost``:
    the store itself became unreachable (callers should not send more).
    """

    def __init__(self, applied, failed=(), unknown=(), not_attempted=(), store_lost: bool = False):
        self.store_lost = store_lost
        self.applied = tuple(applied)
        self.failed = tuple(failed)
        self.unknown = tuple(unknown)
        self.not_attempted = tuple(not_attempted)
        total = len(self.applied) + len(self.failed) + len(self.unknown) + len(self.not_attempted)
        parts = [f"Applied {len(self.applied)} of {total} changes"]
        if self.failed:
            entity, err = self.failed[0]
            parts.append(f"failed: {_paths(e for e, _ in self.failed)} (first: {entity.path}: {err})")
        if self.unknown:
            parts.append(f"outcome unknown (connection lost): {_paths(self.unknown)}")
        if self.not_attempted:
            parts.append(f"not attempted: {_paths(self.not_attempted)}")
        super().__init__("; ".join(parts))


def _paths(entities: Iterable[QuotaEntity], limit: int = 5) -> str:
    paths = [e.path for e in entities]
    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
    return ", ".join(paths[:limit]) + more


def alter_each(
    alter: Callable[[QuotaEntity, ConfigUpdate], QuotaRecord], changes: Iterable[tuple[QuotaEntity, ConfigUpdate]]
) -> list[QuotaRecord]:
    """Apply alters one entity at a time (each atomic); a failure after the first success is a
    PartialFailure naming exactly what was and was not applied, so a re-run can converge."""
    done: list[QuotaRecord] = []
    changes = list(changes)
    for index, (entity, update) in enumerate(changes):
        try:
            done.append(alter(entity, update))
        except KconfigsError as err:
            if not done:
                raise
            raise AlterManyFailed(done, [(entity, err)], not_attempted=[e for e, _ in changes[index + 1 :]]) from None
    return done
