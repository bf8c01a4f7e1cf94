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
from typing import Any, Callable

from kconfigs.keys import quota_configs
from kconfigs.model import QuotaEntity
from kconfigs.stores.base import StoreChange

log = logging.getLogger("kconfigs.gateway")
Records = list[tuple[dict, dict[str, float]]]


def records_from_view(view: dict[QuotaEntity, dict[str, str]]) -> Records:
    """Store view -> enforcement records, dropping (and logging) quota values that are not
    numbers. A user's SCRAM credentials share its entry: they are left out unread, never logged."""
    records: Records = []
    for entity, configs in view.items():
        quotas: dict[str, float] = {}
        for key, raw in quota_configs(configs).items():
            try:
                quotas[key] = float(raw)
            except (TypeError, ValueError):
                log.warning("ignoring non-numeric quota %s=%r for %s", key, raw, entity.to_json())
        if quotas:
            records.append((entity.to_json(), quotas))
    return records


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
            records = records_from_view(self._view)
        self._loop.call_soon_threadsafe(self._apply, records, change.full_snapshot)

    def _apply(self, records: Records, full: bool) -> None:
        try:
            self._install(records)
        except ValueError as err:  # an invalid entity/value: keep the previous snapshot
            log.error("quota change rejected, keeping the previous quotas: %s", err)
            return
        log.info("quotas %s: %d entities", "loaded" if full else "changed", len(records))
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

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
