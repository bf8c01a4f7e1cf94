"""The embedded store: one SQLite file holding Kafka's znode paths, JSON and change log.

It is the default when no ZooKeeper or Kafka cluster is named. Each alter runs in one
``BEGIN IMMEDIATE`` transaction (read, merge, write, append the change), which SQLite serialises
across processes, so concurrent alters never lose a key — the same guarantee the ZooKeeper store
gets from its compare-and-set.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from pathlib import Path
from typing import Callable, Iterable, Iterator

from kconfigs.clock import MONOTONIC as WALL_CLOCK
from kconfigs.errors import CorruptData, KconfigsError, StoreUnavailable, UsageError, nonblank
from kconfigs.model import MATCH_ALL, EntityFilter, QuotaEntity, QuotaRecord
from kconfigs.stores.base import AlterManyFailed, ConfigUpdate, StoreChange
from kconfigs.znode_codec import CONFIG_ROOT, config_znode, decode_config, encode_config, encode_notification

BUSY_TIMEOUT_S = 30.0
CHANGE_RETENTION_MS = 15 * 60 * 1000  # as brokers purge /config/changes

_SCHEMA = """
CREATE TABLE IF NOT EXISTS znode (
    path    TEXT PRIMARY KEY,          -- e.g. /config/users/CN%3Dalice/clients/<default>
    data    BLOB NOT NULL,             -- {"version":1,"config":{...}} exactly as in ZooKeeper
    version INTEGER NOT NULL           -- bumped on every write, like a znode's dataVersion
);
CREATE TABLE IF NOT EXISTS config_change (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,  -- config_change_<seq>
    data     BLOB NOT NULL,                      -- {"version":2,"entity_path":"..."}
    ctime_ms INTEGER NOT NULL
);
"""


def _file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file ``path`` names now, None when there is none."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_dev, status.st_ino


def default_store_path() -> Path:
    """``$KCONFIGS_HOME/quotas.db``, else ``$XDG_DATA_HOME/kconfigs/quotas.db``
    (``~/.local/share/kconfigs/quotas.db``)."""
    home = nonblank(os.environ.get("KCONFIGS_HOME"), "KCONFIGS_HOME")  # KCONFIGS_HOME=$DIR, DIR unset
    if home:
        return Path(home) / "quotas.db"
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "kconfigs" / "quotas.db"


class SqliteStore:
    """``SqliteStore(path)`` opens for writing (creating the file and its directory);
    ``SqliteStore(path, read_only=True)`` never creates anything: a missing file is an error, or,
    with ``missing_ok`` (the default store before its first write), an empty store."""

    kind = "sqlite"

    def __init__(self, path: str | os.PathLike | None = None, *, read_only: bool = False, missing_ok: bool = False):
        self.path = Path(path) if path else default_store_path()
        self.read_only, self.missing_ok = read_only, missing_ok
        #: True while a read-only store stands in for a file that has no quota tables yet
        self.placeholder = False
        with self._errors():
            if read_only:
                self.db = self._connect_existing(missing_ok)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(
                    self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
                )
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.executescript(f"BEGIN IMMEDIATE;\n{_SCHEMA}\nCOMMIT;")  # readers see no tables or all
            self._opened_as = _file_id(self.path)  # what _check_same_file compares the path with

    def _connect_existing(self, missing_ok: bool) -> sqlite3.Connection:
        """The file opened without creating it (``mode=rw``: WAL readers need to write the
        shared-memory index); an absent file is an in-memory empty store or an error."""
        if not self.path.exists():
            if not missing_ok:
                raise UsageError(
                    f"Embedded store {self.path} does not exist (nothing has been written there; is the path right?)"
                )
            return self._empty_store()
        if self.path.is_dir():
            raise UsageError(f"Embedded store {self.path} is a directory, not a store file")
        uri = "file:" + urllib.parse.quote(str(self.path.resolve())) + "?mode=rw"
        db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables - {"sqlite_sequence"}:  # a writer has just created the file: nothing in it yet
            db.close()
            return self._empty_store()
        if not {"znode", "config_change"} <= tables:
            db.close()
            raise CorruptData(f"Embedded store {self.path} is not a kconfigs database (no quota tables)")
        return db

    def _empty_store(self) -> sqlite3.Connection:
        self.placeholder = True
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        db.executescript(_SCHEMA)
        return db

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except KconfigsError:
            raise
        except sqlite3.DatabaseError as err:
            if "not a database" in str(err) or "malformed" in str(err):
                raise CorruptData(f"Embedded store {self.path} is not a valid kconfigs database: {err}") from None
            raise StoreUnavailable(f"Embedded store {self.path}: {err}") from None
        except OSError as err:
            raise StoreUnavailable(f"Embedded store {self.path}: {err.strerror or err}") from None

    @contextlib.contextmanager
    def _operation(self) -> Iterator[None]:
        """Each read or write: only on the file the path still names (see :meth:`_check_same_file`)."""
        with self._errors():
            self._check_same_file()
            yield

    def _check_same_file(self) -> None:
        """A file put in place of the open one (``mv new.db quotas.db``, as configuration-management
        tools deploy files; a restored backup), or removed, is an error from then on: a long-lived
        reader such as the gateway would otherwise serve the replaced file's quotas forever, and
        its writes would go to a file no one reads. The new file is not opened in its place:
        SQLite finds a database's write-ahead log by name, so a connection opened next to
        connections still holding the old file would read the old file's pages from it.
        One ``stat`` per operation.

        :raises StoreUnavailable: naming the file and the way out (a restart).
        """
        if self.placeholder or _file_id(self.path) == self._opened_as:
            return  # a placeholder has no file yet: the watch follows its first write
        raise StoreUnavailable(
            f"Embedded store {self.path} was replaced or removed while open: restart to use the file there now"
        )

    # ---- reads -------------------------------------------------------------------------
    def describe(self, entity_filter: EntityFilter) -> list[QuotaRecord]:
        with self._operation():
            rows = self.db.execute("SELECT path, data FROM znode ORDER BY path").fetchall()
        records = []
        for path, data in rows:
            entity = QuotaEntity.from_path(path[len(CONFIG_ROOT) + 1 :])
            if entity_filter.matches(entity):
                records.append(QuotaRecord(entity, decode_config(data, path)))
        return records

    def snapshot(self) -> list[QuotaRecord]:
        return [r for r in self.describe(MATCH_ALL) if r.configs]

    # ---- writes ------------------------------------------------------------------------
    def alter(self, entity: QuotaEntity, update: ConfigUpdate, *, validate_only: bool = False) -> QuotaRecord:
        with self._operation(), self._immediate_transaction() as db:
            if validate_only:
                record = QuotaRecord(entity, dict(update(self._current(db, entity))))
                db.execute("ROLLBACK")
                return record
            record = self._write_entity(db, entity, update, skip_unchanged=False)
            self._purge_changes(db)
            return record

    def _current(self, db: sqlite3.Connection, entity: QuotaEntity) -> dict[str, str]:
        path = config_znode(entity.path)
        row = db.execute("SELECT data FROM znode WHERE path = ?", (path,)).fetchone()
        return decode_config(row[0] if row else None, path)

    def _write_entity(
        self, db: sqlite3.Connection, entity: QuotaEntity, update: ConfigUpdate, skip_unchanged: bool
    ) -> QuotaRecord:
        """Read-merge-write one entity inside the caller's write transaction."""
        path = config_znode(entity.path)
        current = self._current(db, entity)
        new_configs = dict(update(current))
        if skip_unchanged and new_configs == current:
            return QuotaRecord(entity, new_configs)
        if new_configs:
            db.execute(
                "INSERT INTO znode(path, data, version) VALUES (?, ?, 0) "
                "ON CONFLICT(path) DO UPDATE SET data = excluded.data, version = version + 1",
                (path, encode_config(new_configs)),
            )
        else:  # an emptied entity is removed, as Kafka 3.5+ deletes the empty znode
            db.execute("DELETE FROM znode WHERE path = ?", (path,))
        db.execute(
            "INSERT INTO config_change(data, ctime_ms) VALUES (?, ?)",
            (encode_notification(entity.path), WALL_CLOCK.wall_ms()),
        )
        return QuotaRecord(entity, new_configs)

    @staticmethod
    def _purge_changes(db: sqlite3.Connection) -> None:
        """Drop notifications older than the retention (once per transaction: it scans the log)."""
        db.execute(
            "DELETE FROM config_change WHERE ctime_ms < ? AND seq < (SELECT MAX(seq) FROM config_change)",
            (WALL_CLOCK.wall_ms() - CHANGE_RETENTION_MS,),
        )

    @contextlib.contextmanager
    def _immediate_transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")  # takes the write lock now: read-merge-write is atomic
        try:
            yield self.db
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        else:
            if self.db.in_transaction:
                self.db.execute("COMMIT")

    def alter_many(self, changes: Iterable[tuple[QuotaEntity, ConfigUpdate]]) -> list[QuotaRecord]:
        """All entities in one write transaction (one fsync instead of one per entity), each in its
        own savepoint: an entity whose update fails is rolled back alone and the others commit.
        Unchanged entities are not rewritten. :raises AlterManyFailed: naming both sides."""
        applied, failed = [], []
        with self._operation(), self._immediate_transaction() as db:
            for entity, update in changes:
                db.execute("SAVEPOINT entity")
                try:
                    applied.append(self._write_entity(db, entity, update, skip_unchanged=True))
                except KconfigsError as err:
                    db.execute("ROLLBACK TO entity")
                    failed.append((entity, err))
                db.execute("RELEASE entity")
            self._purge_changes(db)
        if failed:
            raise AlterManyFailed(applied, failed)
        return applied

    # ---- change log --------------------------------------------------------------------
    def changes_since(self, seq: int) -> tuple[list[tuple[int, bytes]], bool]:
        """Notifications after ``seq`` and whether some were purged in between (resync needed)."""
        with self._operation():
            oldest = self.db.execute("SELECT MIN(seq) FROM config_change").fetchone()[0]
            rows = self.db.execute("SELECT seq, data FROM config_change WHERE seq > ? ORDER BY seq", (seq,)).fetchall()
        gap = oldest is not None and seq >= 0 and oldest > seq + 1
        return rows, gap

    def last_change(self) -> int:
        with self._operation():
            return self.db.execute("SELECT COALESCE(MAX(seq), -1) FROM config_change").fetchone()[0]

    def read_entity(self, entity: QuotaEntity) -> QuotaRecord:
        path = config_znode(entity.path)
        with self._operation():
            row = self.db.execute("SELECT data FROM znode WHERE path = ?", (path,)).fetchone()
        return QuotaRecord(entity, decode_config(row[0] if row else None, path))

    def watch(
        self,
        on_change: Callable[[StoreChange], None],
        on_state: Callable[[str], None] | None = None,
        poll_interval_s: float = 0.2,
    ):
        from kconfigs.stores.sqlite_watch import SqliteQuotaWatch

        return SqliteQuotaWatch(self.reopened(), on_change, on_state, poll_interval_s)

    def reopened(self) -> SqliteStore:
        """A second connection in this store's mode (a read-only store stays read-only: watching
        never creates the file)."""
        return SqliteStore(self.path, read_only=self.read_only, missing_ok=self.missing_ok)

    def close(self) -> None:
        self.db.close()
