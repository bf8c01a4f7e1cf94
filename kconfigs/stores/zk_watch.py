"""Follow quota changes in ZooKeeper the way a broker does (DynamicConfigManager).

A child watch on ``/config/changes``; each notification with a sequence number above the last
one seen names an entity, whose znode is then re-read (the notification is only a trigger).
After a lost connection the whole tree is re-read, because notifications may have been purged
meanwhile (brokers delete them after 15 minutes).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from kazoo import exceptions as kz
from kazoo.protocol.states import KazooState
from kazoo.recipe.watchers import ChildrenWatch

from kconfigs.errors import KconfigsError
from kconfigs.model import QuotaEntity, QuotaRecord
from kconfigs.stores.base import StoreChange
from kconfigs.znode_codec import CHANGE_PREFIX, CHANGES_PATH, CONFIG_ROOT, decode_config, decode_notification

log = logging.getLogger("kconfigs.watch")


def change_sequence(name: str) -> int:
    """``config_change_0000000042`` -> 42; -1 for names that are not notifications."""
    suffix = name[len(CHANGE_PREFIX) :] if name.startswith(CHANGE_PREFIX) else ""
    return int(suffix) if suffix.isdigit() else -1


class ZkQuotaWatch:
    def __init__(self, store, on_change: Callable[[StoreChange], None], on_state: Callable[[str], None] | None):
        self._store = store
        self._client = store.client
        self._on_change = on_change
        self._on_state = on_state or (lambda state: None)
        self._lock = threading.Lock()
        self._last_seq = -1
        self._closed = False
        self._lost = False
        store.ensure_changes_path()  # as a broker does, with Kafka's ACLs on a secured ZooKeeper
        self._resync()
        self._client.add_listener(self._connection_listener)
        self._watch = ChildrenWatch(self._client, CHANGES_PATH, self._on_children)

    def _resync(self) -> None:
        with self._lock:
            names = self._client.get_children(CHANGES_PATH)
            self._last_seq = max((change_sequence(n) for n in names), default=-1)
            records = tuple(self._store.snapshot())
        self._on_change(StoreChange(records=records, full_snapshot=True))

    def _on_children(self, children: list[str]) -> bool:
        if self._closed:
            return False
        try:
            self._process(children)
        except (kz.ZookeeperError, kz.ConnectionLoss, kz.SessionExpiredError, KconfigsError) as err:
            log.warning("quota change processing failed, will resync on reconnect: %s", err)
        return True

    def _process(self, children: list[str]) -> None:
        with self._lock:
            fresh = sorted((s, n) for n in children if (s := change_sequence(n)) > self._last_seq)
            records = []
            for seq, name in fresh:
                record = self._read_notified_entity(name)
                if record is not None:
                    records.append(record)
                self._last_seq = seq
        if records:
            self._on_change(StoreChange(records=tuple(records)))

    def _read_notified_entity(self, name: str) -> QuotaRecord | None:
        try:
            data, _ = self._client.get(f"{CHANGES_PATH}/{name}")
        except kz.NoNodeError:
            return None  # purged already; a later resync covers it
        entity_path = decode_notification(data)
        if entity_path is None or entity_path.split("/", 1)[0] not in ("users", "clients", "ips"):
            return None
        try:
            entity = QuotaEntity.from_path(entity_path)
        except KconfigsError:
            log.warning("ignoring notification %s for invalid entity path %r", name, entity_path)
            return None
        znode = f"{CONFIG_ROOT}/{entity_path}"
        try:
            config_data, _ = self._client.get(znode)
        except kz.NoNodeError:
            config_data = None
        return QuotaRecord(entity, decode_config(config_data, znode))

    def _connection_listener(self, state: str) -> None:
        if self._closed:
            return
        if state in (KazooState.LOST, KazooState.SUSPENDED):
            if not self._lost:
                self._lost = True
                self._on_state("lost")
        elif state == KazooState.CONNECTED and self._lost:
            self._lost = False
            self._client.handler.spawn(self._resync_after_loss)  # listeners must not block

    def _resync_after_loss(self) -> None:
        try:
            self._resync()
            self._on_state("resynced")
        except (kz.ZookeeperError, kz.ConnectionLoss, kz.SessionExpiredError, KconfigsError) as err:
            log.warning("resync after reconnect failed: %s", err)

    def close(self) -> None:
        self._closed = True
        self._client.remove_listener(self._connection_listener)
