"""Follow the embedded store's change log from a background thread (polling: SQLite has no
cross-process notifications). A gap in the log (purged entries) triggers a full resync."""

from __future__ import annotations

import logging
import threading
from typing import Callable

from kconfigs.errors import KconfigsError
from kconfigs.model import QuotaEntity
from kconfigs.stores.base import StoreChange
from kconfigs.znode_codec import decode_notification

log = logging.getLogger("kconfigs.watch")


class SqliteQuotaWatch:
    def __init__(
        self,
        store,
        on_change: Callable[[StoreChange], None],
        on_state: Callable[[str], None] | None,
        poll_interval_s: float,
    ):
        self._store = store
        self._on_change = on_change
        self._on_state = on_state or (lambda state: None)
        self._interval = poll_interval_s
        self._stop = threading.Event()
        self._last_seq = store.last_change()
        on_change(StoreChange(records=tuple(store.snapshot()), full_snapshot=True))
        self._thread = threading.Thread(target=self._run, name="kconfigs-sqlite-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        failing = False
        while not self._stop.wait(self._interval):
            try:
                self._poll()
                if failing:
                    failing = False
                    self._on_state("resynced")
            except KconfigsError as err:
                if not failing:
                    failing = True
                    log.warning("embedded store unreadable, keeping last quotas: %s", err)
                    self._on_state("lost")

    def _poll(self) -> None:
        if self._store.placeholder:
            self._open_when_written()
            return
        rows, gap = self._store.changes_since(self._last_seq)
        if gap:
            self._last_seq = self._store.last_change()
            self._on_change(StoreChange(records=tuple(self._store.snapshot()), full_snapshot=True))
            return
        entities = {}
        for seq, data in rows:
            path = decode_notification(data)
            if path is not None:
                entities[path] = QuotaEntity.from_path(path)
            self._last_seq = seq
        if entities:
            records = tuple(self._store.read_entity(e) for e in entities.values())
            self._on_change(StoreChange(records=records))

    def _open_when_written(self) -> None:
        """A read-only watch of a store not yet written: once a writer has created the tables,
        follow the real file from its whole current content."""
        store = self._store.reopened()
        if store.placeholder:
            store.close()
            return
        self._store.close()
        self._store = store
        self._last_seq = store.last_change()
        self._on_change(StoreChange(records=tuple(store.snapshot()), full_snapshot=True))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._store.close()
