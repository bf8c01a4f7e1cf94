"""Pipelined ``alter_many`` for the ZooKeeper store: thousands of entities in seconds.

A synchronous alter costs 2–4 round trips (get, parent checks, multi-op), and kazoo sends one
request per turn of its connection loop; 10,000 entities one by one take minutes. Here:

* existence comes from listing the parents (``get_children``), so an entity that does not
  exist is not read at all: its ``create`` is itself the compare-and-set (it fails if someone
  created the node meanwhile);
* entities that exist are read with ``get_async``, ``window`` at a time, unless ``describe``
  just read them (``store.seen``: a plan reads everything first);
* the write ops of up to ``group`` entities (each: version-checked set / create / delete, plus
  its own ``/config/changes`` notification, exactly what ``ZooKeeperStore.alter`` sends) go in
  one multi-op, committed with ``commit_async``. A multi-op is all-or-nothing, so every entity
  stays atomic; if a group fails (a version lost a race, a node appeared, no permission) nothing
  of it was written and each of its entities is re-done alone through the synchronous
  CAS-retrying ``alter``, which reports each entity's own error.

ZooKeeper applies one session's requests in order, so a parent created by an earlier group can
be relied on by a later one (if that group failed, the later one fails too and is re-done).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

from kazoo import exceptions as kz

from kconfigs.errors import KconfigsError, StoreUnavailable
from kconfigs.model import QuotaEntity, QuotaRecord
from kconfigs.stores.base import AlterManyFailed, ConfigUpdate
from kconfigs.znode_codec import (
    CHANGE_PREFIX,
    CHANGES_PATH,
    CONFIG_ROOT,
    decode_config,
    encode_config,
    encode_notification,
)

DEFAULT_WINDOW = 2000  # entities read and written per wave: bounded memory and in-flight requests
DEFAULT_GROUP = 50  # entities per multi-op: ~100 ops, a few KB, far below jute.maxbuffer (1 MB)


@dataclass
class _Outcome:
    applied: list[QuotaRecord] = field(default_factory=list)
    failed: list[tuple[QuotaEntity, KconfigsError]] = field(default_factory=list)
    unknown: list[QuotaEntity] = field(default_factory=list)
    lost: bool = False  # the connection went: stop after this wave


def alter_many_pipelined(
    store, changes: Iterable[tuple[QuotaEntity, ConfigUpdate]], window: int = DEFAULT_WINDOW, group: int = DEFAULT_GROUP
) -> list[QuotaRecord]:
    """Alter many entities, each atomically, pipelining ``window`` entities at a time.

    An entity whose ``update`` returns its current configs is left untouched (no write, no
    notification). :raises AlterManyFailed: naming applied / failed / unknown / not attempted.
    :raises StoreUnavailable: ZooKeeper cannot be reached at the start.
    """
    from kconfigs.stores.zookeeper import zk_errors

    changes = list(changes)
    if not store.client.connected:  # kazoo would hold synchronous calls until it reconnects
        raise StoreUnavailable(f"Lost the connection to ZooKeeper at {store.settings.hosts}")
    with zk_errors(store.settings.hosts):
        store._ensure_changes_path()
        present = _existing_paths(store, [entity for entity, _ in changes])
    outcome = _Outcome()
    done = 0
    while done < len(changes) and not outcome.lost:
        _run_wave(store, changes[done : done + window], present, outcome, group)
        done += window
    not_attempted = [entity for entity, _ in changes[done:]]
    if outcome.failed or outcome.unknown or not_attempted:
        raise AlterManyFailed(outcome.applied, outcome.failed, outcome.unknown, not_attempted, store_lost=outcome.lost)
    return outcome.applied


def _existing_paths(store, entities: list[QuotaEntity]) -> set[str]:
    """Znode paths that exist now among the entities' nodes and parents (a listing, not a read
    per entity). Type roots that are missing are created here, as a broker does at start-up."""
    present: set[str] = set()
    for root in sorted({_type_root(e) for e in entities}):
        if store.client.exists(root) is None:
            store.client.ensure_path(root, acl=store._acl(root))
        present.add(root)
        present.update(f"{root}/{child}" for child in store.client.get_children(root))
    users = sorted({_deep_parents(e)[0] for e in entities if _deep_parents(e)} & present)
    listings = [(user, store.client.get_children_async(f"{user}/clients")) for user in users]
    for user, pending in listings:
        try:
            children = pending.get()
        except kz.NoNodeError:
            continue
        present.add(f"{user}/clients")
        present.update(f"{user}/clients/{child}" for child in children)
    return present


def _run_wave(store, wave, present: set[str], outcome: _Outcome, group: int) -> None:
    wait = _Waiter(store.settings.hosts, time.monotonic() + store.settings.session_timeout_s)
    reads = [(e, u, _start_read(store, _znode(e), present)) for e, u in wave]
    writes, retry, pair_deletes = [], [], []
    for entity, update, pending in reads:
        if outcome.lost:  # no point waiting for the rest of the wave: none of it is written
            outcome.failed.append((entity, StoreUnavailable(f"Lost the connection to ZooKeeper at {wait.hosts}")))
            continue
        try:
            data, stat = pending if isinstance(pending, tuple) else wait.read(pending)
            current = decode_config(data, _znode(entity))
            new = dict(update(current))
        except KconfigsError as err:
            outcome.failed.append((entity, err))
            outcome.lost = _connection_gone(store, err)
            continue
        if new == current:
            outcome.applied.append(QuotaRecord(entity, new))
        elif _is_pair_delete(entity, new, stat):
            pair_deletes.append((entity, update, stat))
        else:
            writes.append((entity, update, new, _ops(store, entity, stat, new, present)))
    if outcome.lost:
        return _not_sent(writes + pair_deletes, outcome, wait.hosts)
    commits = [(chunk, _commit_group(store, chunk)) for chunk in _chunks(writes, group)]
    if pair_deletes:  # their parent reads go after the writes above (one session keeps order)
        pair_writes = _pair_delete_writes(store, pair_deletes, present, wait, outcome)
        if outcome.lost:
            _not_sent(pair_writes, outcome, wait.hosts)
        else:
            commits += [(chunk, _commit_group(store, chunk)) for chunk in _chunks(pair_writes, group)]
    _collect(commits, retry, outcome, wait)
    if not outcome.lost:
        _redo_synchronously(store, retry, outcome)


def _not_sent(items: list, outcome: _Outcome, hosts: str) -> None:
    """The connection went before these were sent: they were not written."""
    lost = StoreUnavailable(f"Lost the connection to ZooKeeper at {hosts}")
    outcome.failed.extend((item[0], lost) for item in items)


def _start_read(store, path: str, present: set[str]):
    """(data, stat) already known — (None, None) for a node the listing did not show, or what
    ``describe`` just read (its version is checked by the multi-op, so stale only means a
    re-do) — else a pending ``get_async``."""
    seen = store.seen.pop(path, None)
    if path not in present:
        return None, None
    return seen if seen is not None else store.client.get_async(path)


def _chunks(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _commit_group(store, chunk):
    tx = store.client.transaction()
    for _entity, _update, _new, ops in chunk:
        for method, args, kwargs in ops:
            getattr(tx, method)(*args, **kwargs)
    return tx.commit_async()


class _Waiter:
    """Waits for async results against one deadline per wave, so a dead connection costs one
    timeout per wave, not one per entity."""

    def __init__(self, hosts: str, deadline: float):
        self.hosts = hosts
        self.deadline = deadline

    def get(self, pending):
        """The result. :raises StoreUnavailable: on a connection error or no answer in time."""
        try:
            return pending.get(timeout=max(0.0, self.deadline - time.monotonic()))
        except kz.NoNodeError:
            raise
        except Exception as err:  # kazoo raises its handler's timeout type or a kazoo error here
            raise _store_error(self.hosts, err) from None

    def read(self, pending):
        """(data, stat), or (None, None) for a missing node."""
        try:
            return self.get(pending)
        except kz.NoNodeError:
            return None, None


def _is_pair_delete(entity: QuotaEntity, new: dict, stat) -> bool:
    return (
        not new
        and stat is not None
        and not stat.numChildren
        and entity.user is not None
        and entity.client_id is not None
    )


def _pair_delete_writes(store, deletes: list, present: set[str], wait: "_Waiter", outcome: _Outcome) -> list:
    """Removing (user, client-id) entities, as ``ZooKeeperStore._delete_ops`` does (Kafka 3.5+,
    KAFKA-14285): the multi-op of the last entity of a ``clients`` node in this wave also deletes
    that node, and the user node when its config is empty and ``clients`` was its only child.
    The parents are read once for the wave; their versions are checked in the multi-op."""
    parents: dict = {}
    for entity, _, _ in deletes:
        user_path, clients_path = _deep_parents(entity)
        if clients_path not in parents:  # one read per parent, however many of its entities go
            parents[clients_path] = store.client.exists_async(clients_path)
            parents[user_path] = store.client.get_async(user_path)
    children_left: dict[str, int] = {}
    writes = []
    for entity, update, stat in deletes:
        user_path, clients_path = _deep_parents(entity)
        try:
            clients_stat = wait.get(parents[clients_path])
            user_data, user_stat = wait.read(parents[user_path])
        except KconfigsError as err:
            outcome.failed.append((entity, err))
            outcome.lost = _connection_gone(store, err)
            continue
        ops = [("delete", (_znode(entity),), {"version": stat.version})]
        present.discard(_znode(entity))
        if clients_stat is not None:
            children_left[clients_path] = children_left.get(clients_path, clients_stat.numChildren) - 1
            if children_left[clients_path] == 0:
                ops.append(("delete", (clients_path,), {"version": clients_stat.version}))
                present.discard(clients_path)
                if user_stat is not None and user_stat.numChildren == 1 and not decode_config(user_data, user_path):
                    ops.append(("delete", (user_path,), {"version": user_stat.version}))
                    present.discard(user_path)
        writes.append((entity, update, {}, ops + [_notification(store, entity)]))
    return writes


def _ops(store, entity: QuotaEntity, stat, new: dict, present: set[str]) -> list[tuple]:
    """The ops of ``ZooKeeperStore._alter_once`` for one entity: version-checked write (or
    create with missing parents, or delete) + notification. Updates ``present`` as ZooKeeper
    will see it once the ops ran."""
    path = _znode(entity)
    ops: list[tuple] = []
    if new and stat is not None:
        ops.append(("set_data", (path, encode_config(new)), {"version": stat.version}))
    elif new:
        for parent in _deep_parents(entity):
            if parent not in present:  # Kafka creates parents with null data
                ops.append(("create", (parent, b""), {"acl": store._acl(parent)}))
                present.add(parent)
        ops.append(("create", (path, encode_config(new)), {"acl": store._acl(path)}))
        present.add(path)
    elif stat.numChildren:
        ops.append(("set_data", (path, encode_config({})), {"version": stat.version}))
    else:
        ops.append(("delete", (path,), {"version": stat.version}))
        present.discard(path)
    return ops + [_notification(store, entity)]


def _notification(store, entity: QuotaEntity) -> tuple:
    """The ``/config/changes/config_change_<seq>`` create brokers watch for."""
    return (
        "create",
        (f"{CHANGES_PATH}/{CHANGE_PREFIX}", encode_notification(entity.path)),
        {"acl": store._acl(CHANGES_PATH), "sequence": True},
    )


def _collect(commits, retry: list, outcome: _Outcome, wait: _Waiter) -> None:
    """Sort committed groups into applied / to re-do alone / unknown (connection lost)."""
    for chunk, pending in commits:
        try:
            results = wait.get(pending)
        except KconfigsError:  # the connection went after the multi-op was sent: outcome unknown
            outcome.unknown.extend(entity for entity, *_ in chunk)
            outcome.lost = True
            continue
        if any(isinstance(r, Exception) for r in results):  # rolled back as a whole
            retry.extend((entity, update) for entity, update, *_ in chunk)
        else:
            outcome.applied.extend(QuotaRecord(entity, new) for entity, _, new, _ in chunk)


def _redo_synchronously(store, retry: list, outcome: _Outcome) -> None:
    """Entities of failed groups, one CAS-retrying ``alter`` each (each reports its own error).
    Not while disconnected: kazoo would queue a synchronous call until it reconnects."""
    for index, (entity, update) in enumerate(retry):
        try:
            if not store.client.connected:
                raise StoreUnavailable(f"Lost the connection to ZooKeeper at {store.settings.hosts}")
            outcome.applied.append(store.alter(entity, update))
        except KconfigsError as err:
            outcome.failed.append((entity, err))
            if _connection_gone(store, err):
                outcome.lost = True
                outcome.failed.extend((e, err) for e, _ in retry[index + 1 :])
                return


def _connection_gone(store, err: KconfigsError) -> bool:
    """A StoreUnavailable while kazoo is not connected means the store is gone (stop sending);
    while connected it is about one entity (e.g. an ACL denying that znode): carry on."""
    return isinstance(err, StoreUnavailable) and not store.client.connected


def _store_error(hosts: str, err: Exception) -> KconfigsError:
    """A kazoo exception as the kconfigs error ``zk_errors`` gives for it."""
    from kconfigs.stores.zookeeper import zk_errors

    if isinstance(err, KconfigsError):
        return err
    try:
        with zk_errors(hosts):
            raise err
    except KconfigsError as mapped:
        return mapped
    except Exception:  # a timeout from the kazoo handler: no answer in time
        return StoreUnavailable(f"ZooKeeper at {hosts} did not answer in time")


def _znode(entity: QuotaEntity) -> str:
    return f"{CONFIG_ROOT}/{entity.path}"


def _type_root(entity: QuotaEntity) -> str:
    return f"{CONFIG_ROOT}/{entity.path.split('/', 1)[0]}"


def _deep_parents(entity: QuotaEntity) -> list[str]:
    """Parents below the type root: ``/config/users/<u>`` and ``.../clients`` of a (user, client)."""
    if entity.user is None or entity.client_id is None:
        return []
    user_path = _znode(entity).rsplit("/", 2)[0]
    return [user_path, f"{user_path}/clients"]
