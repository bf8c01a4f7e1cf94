"""Live reload: a kconfigs Store's watch feeds quota snapshots to the gateway's event loop.

The store calls back on its own thread (kazoo's, or the SQLite change-log poller). Each change
is merged into a full view of the store, converted to ``enforcement`` records (store values are
strings: parsed with float()), and handed to the event loop with ``call_soon_threadsafe`` so the
next request is judged by the new quotas; connections are never dropped. While the store is
lost the last snapshot stays in force; the store resyncs with a full snapshot on recovery.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable

from kconfigs.model import QuotaEntity
from kconfigs.quota_records import AS_BROKER, quota_numbers
from kconfigs.stores.base import StoreChange

log = logging.getLogger("kconfigs.gateway")
Records = list[tuple[dict, dict[str, float]]]


def parsed_quotas(
    view: dict[QuotaEntity, dict[str, str]], previous: dict[QuotaEntity, dict[str, float]] | None = None
) -> dict[QuotaEntity, dict[str, float]]:
    """The quota keys of a store view as numbers, by entity (entities without quotas left out),
    read as a broker reads them (``kconfigs.quota_records.AS_BROKER``, the loader every command uses).

    A value that is not a number (a hand-edited znode) keeps the value ``previous`` had for that
    entity and key, as a ZooKeeper-mode broker keeps its quota when it fails to parse a change;
    with none before it is left out. Either way it is logged. A user's SCRAM credentials share
    its entry: they are left out unread, never logged."""
    return quota_numbers(view, AS_BROKER, previous, _log_unreadable)


def _log_unreadable(entity: QuotaEntity, key: str, raw: str, kept: float | None) -> None:
    if kept is None:
        log.error("non-numeric quota %s=%r for %s: ignored", key, raw, entity.to_json())
    else:
        log.error("non-numeric quota %s=%r for %s: keeping its previous value %s", key, raw, entity.to_json(), kept)


@dataclass(frozen=True)
class QuotaChangeCounts:
    """How many entities a reload added, changed (a quota key set, altered or removed) and removed."""

    added: int
    changed: int
    removed: int

    @classmethod
    def between(
        cls, before: dict[QuotaEntity, dict[str, float]], after: dict[QuotaEntity, dict[str, float]]
    ) -> "QuotaChangeCounts":
        return cls(
            added=sum(1 for entity in after if entity not in before),
            changed=sum(1 for entity, quotas in after.items() if entity in before and before[entity] != quotas),
            removed=sum(1 for entity in before if entity not in after),
        )

    @property
    def total(self) -> int:
        return self.added + self.changed + self.removed

    def __str__(self) -> str:
        noun = "entity" if self.total == 1 else "entities"
        return f"{self.total} {noun} ({self.added} added, {self.changed} changed, {self.removed} removed)"


class QuotaReloader:
    """Subscribes to ``store.watch`` and installs every change through ``install(records)``."""

    def __init__(
        self,
        store: Any,
        loop: asyncio.AbstractEventLoop,
        install: Callable[[Records], None],
        on_state: Callable[[str], None] | None = None,
    ):
        """``on_state``: also told each store state ("lost", "resynced" ...), from the watch's thread."""
        self._store = store
        self._observe_state = on_state
        self._loop = loop
        self._install = install
        self._view: dict[QuotaEntity, dict[str, str]] = {}
        #: the quotas last handed to ``install``, by entity: what a non-numeric change keeps
        self._installed: dict[QuotaEntity, dict[str, float]] = {}
        #: each installed entity as ``install`` takes it (``QuotaEntity.to_json``), kept between changes
        self._wire: dict[QuotaEntity, dict] = {}
        self._lock = threading.Lock()
        self._watch: Any = None
        self.first_snapshot = asyncio.Event()
        self.state = "starting"

    def start(self) -> None:
        """:raises StoreUnavailable: if the store cannot be watched at all."""
        self._watch = self._store.watch(self._on_change, self._on_state)

    def _on_change(self, change: StoreChange) -> None:
        with self._lock:
            if change.full_snapshot:
                self._view = {}
            for record in change.records:
                if record.configs:
                    self._view[record.entity] = dict(record.configs)
                else:
                    self._view.pop(record.entity, None)
            counts = self._reparse_full() if change.full_snapshot else self._reparse({r.entity for r in change.records})
            records = [(self._wire[entity], quotas) for entity, quotas in self._installed.items()]
        if change.full_snapshot or counts.total:  # a notification that changed no quota changes nothing
            self._loop.call_soon_threadsafe(self._apply, records, change.full_snapshot, counts)

    def _reparse_full(self) -> "QuotaChangeCounts":
        before, self._installed = self._installed, parsed_quotas(self._view, self._installed)
        self._wire = {entity: entity.to_json() for entity in self._installed}
        return QuotaChangeCounts.between(before, self._installed)

    def _reparse(self, touched: set[QuotaEntity]) -> "QuotaChangeCounts":
        """Parse only the entities a change names: with 100,000 entities, parsing and converting
        them all again cost a second per change."""
        before = self._installed
        parsed = parsed_quotas({e: self._view[e] for e in touched if e in self._view}, before)
        self._installed = {e: quotas for e, quotas in before.items() if e not in touched} | parsed
        for entity in touched:
            if entity in parsed:
                self._wire.setdefault(entity, entity.to_json())
            else:
                self._wire.pop(entity, None)
        return QuotaChangeCounts.between({e: before[e] for e in touched if e in before}, parsed)

    def _apply(self, records: Records, full: bool, counts: "QuotaChangeCounts") -> None:
        try:
            self._install(records)
        except ValueError as err:  # an invalid entity/value: keep the previous snapshot
            log.error("quota change rejected, keeping the previous quotas: %s", err)
            return
        if full:
            log.info("quotas loaded: %d entities", len(records))
        else:
            log.info("quotas changed: %s; %d entities in force", counts, len(records))
        if full and not records:
            log.warning("the quota store holds no quotas: no client is throttled until one is added")
        self.first_snapshot.set()

    def _on_state(self, state: str) -> None:
        self.state = state
        if self._observe_state is not None:
            self._observe_state(state)
        if state == "lost":
            self._loop.call_soon_threadsafe(log.warning, "quota store connection lost: enforcing the last known quotas")
        else:
            self._loop.call_soon_threadsafe(log.info, "quota store %s", state)

    def close(self, wait_s: float | None = None) -> bool:
        """Stop watching. ``wait_s``: wait at most this long (a poll of a cluster that does not
        answer runs until its request timeout, 30 s by default, and a stopping gateway must not
        wait for it); returns whether the watch has stopped."""
        if self._watch is None:
            return True
        if wait_s is None:
            self._watch.close()
            return True
        closer = threading.Thread(target=self._watch.close, name="kconfigs-watch-close", daemon=True)
        closer.start()
        closer.join(wait_s)
        return not closer.is_alive()
