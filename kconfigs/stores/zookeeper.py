"""ZooKeeper store: Kafka's config znodes, written byte-compatibly, with compare-and-set.

Unlike kafka-configs (``setData`` with version -1, then a separate notification), every alter is
ONE ZooKeeper multi-op: version check + write (or create/delete) + the ``/config/changes``
notification, retried on a version conflict. Concurrent alters of different keys therefore never
lose a key, and no write is ever visible without the notification brokers need.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from dataclasses import dataclass
from typing import Callable, Iterable

from kazoo import exceptions as kz

from kconfigs.errors import StoreUnavailable, UsageError, VersionConflict
from kconfigs.model import DEFAULT, EntityFilter, EntityType, Match, QuotaEntity, QuotaRecord
from kconfigs.retry import Backoff, RetryNeeded, retry_until
from kconfigs.sanitize import DEFAULT_NAME, desanitize, sanitize
from kconfigs.stores.base import ConfigUpdate, StoreChange
from kconfigs.stores.kazoo_client import KazooClient
from kconfigs.stores.zk_ops import (
    acl_for,
    add_to,
    entity_ops,
    entity_znode,
    is_pair_delete,
    notification_op,
    pair_parent_deletes,
    pair_parent_paths,
    zk_errors,
)
from kconfigs.stores.zk_tls import ZkTlsOptions
from kconfigs.znode_codec import CHANGES_PATH, config_znode, decode_config, zk_path_problem

CAS_DEADLINE_S = 30.0
_ROOTS = {EntityType.USER: "users", EntityType.CLIENT_ID: "clients", EntityType.IP: "ips"}


@dataclass(frozen=True)
class ZkSettings:
    hosts: str  # host:port[,host:port][/chroot]
    auth_digest: str | None = None  # "user:password" for the digest scheme
    sasl_digest: tuple[str, str] | None = None  # (user, password) for SASL DIGEST-MD5 (Kafka's JAAS Client)
    tls: ZkTlsOptions = ZkTlsOptions(use_ssl=False)
    connect_timeout_s: float = 10.0
    session_timeout_s: float = 30.0


class ZooKeeperStore:
    """Quota store on Kafka's ZooKeeper layout (``/config/{users,clients,ips}``)."""

    kind = "zookeeper"

    def __init__(self, settings: ZkSettings):
        self.settings = settings
        self.secure = (
            bool(settings.auth_digest)
            or bool(settings.sasl_digest)
            or bool(settings.tls.use_ssl and settings.tls.certfile)
        )
        from kconfigs.stores.zk_reach import check_reachable

        check_reachable(settings.hosts)  # before kazoo's 10 s of retries that cannot succeed
        logging.getLogger("kazoo").addHandler(logging.NullHandler())
        logging.getLogger("kazoo").propagate = False
        auth = [("digest", settings.auth_digest)] if settings.auth_digest else None
        sasl = (
            {"mechanism": "DIGEST-MD5", "username": settings.sasl_digest[0], "password": settings.sasl_digest[1]}
            if settings.sasl_digest
            else None
        )
        self.client = KazooClient(
            hosts=settings.hosts,
            timeout=settings.session_timeout_s,
            auth_data=auth,
            sasl_options=sasl,
            connection_retry={"max_tries": -1, "max_delay": 1.0},
            **settings.tls.kazoo_kwargs(),
        )
        # (data, stat) of znodes read by describe: alter_many (zk_bulk) writes against these
        # versions instead of reading every entity again; a stale one only fails that multi-op.
        self.seen: dict[str, tuple] = {}
        self._start()

    def _start(self) -> None:
        from kconfigs.stores.zk_reach import assumed_port_note

        try:
            with warnings.catch_warnings():  # kazoo warns of a missing chroot; check_chroot says it in one line
                warnings.simplefilter("ignore")
                self.client.start(timeout=self.settings.connect_timeout_s)
        except Exception:  # kazoo raises its own timeout type or an auth failure from start()
            self.client.stop()
            self.client.close()
            raise StoreUnavailable(
                f"Cannot connect to ZooKeeper at {self.settings.hosts} within "
                f"{self.settings.connect_timeout_s:g} s (is it running? TLS/auth settings right?)"
                + assumed_port_note(self.settings.hosts)
            ) from None

    # ---- reads -------------------------------------------------------------------------
    def describe(self, entity_filter: EntityFilter) -> list[QuotaRecord]:
        with zk_errors(self.settings.hosts):
            entities = [e for e in self._candidates(entity_filter) if entity_filter.matches(e)]
            return self._read_records(entities)

    def snapshot(self) -> list[QuotaRecord]:
        """Every entity with at least one config (what a broker loads at start-up)."""
        from kconfigs.model import MATCH_ALL

        return [r for r in self.describe(MATCH_ALL) if r.configs]

    def _candidates(self, f: EntityFilter) -> list[QuotaEntity]:
        wanted = {c.entity_type: c for c in f.components}
        shapes = [frozenset(wanted)] if f.strict else _all_shapes_covering(frozenset(wanted))
        out: list[QuotaEntity] = []
        for shape in shapes:
            out.extend(self._entities_of_shape(shape, wanted))
        return out

    def _entities_of_shape(self, shape: frozenset, wanted: dict) -> list[QuotaEntity]:
        if shape == {EntityType.IP}:
            return [QuotaEntity(ip=n) for n in self._names("ips", wanted.get(EntityType.IP), sanitized=False)]
        if shape == {EntityType.CLIENT_ID}:
            return [QuotaEntity(client_id=n) for n in self._names("clients", wanted.get(EntityType.CLIENT_ID))]
        users = self._names("users", wanted.get(EntityType.USER))
        if shape == {EntityType.USER}:
            return [QuotaEntity(user=u) for u in users]
        comp = wanted.get(EntityType.CLIENT_ID)
        return [
            QuotaEntity(user=u, client_id=c) for u in users for c in self._names(f"users/{_component(u)}/clients", comp)
        ]

    def _names(self, parent: str, comp, sanitized: bool = True) -> list:
        """Child names under /config/<parent>, or just the one a component names; in the order
        ZooKeeper lists them (its own hash order), which is the order kafka-configs prints."""
        if comp is not None and comp.match is Match.DEFAULT:
            return [DEFAULT]
        if comp is not None and comp.match is Match.EXACT:
            return [comp.name]
        try:
            children = self.client.get_children(config_znode(parent))
        except kz.NoNodeError:
            return []
        decode = desanitize if sanitized else (lambda s: s)
        return [DEFAULT if c == DEFAULT_NAME else decode(c) for c in children]

    def _read_records(self, entities: list[QuotaEntity]) -> list[QuotaRecord]:
        pending = [(e, self.client.get_async(_znode(e))) for e in entities]  # pipelined reads
        records = []
        for entity, result in pending:
            try:
                data, stat = result.get()
            except kz.NoNodeError:
                continue
            self.seen[_znode(entity)] = (data, stat)
            records.append(QuotaRecord(entity, decode_config(data, _znode(entity))))
        return records

    # ---- writes ------------------------------------------------------------------------
    def alter(self, entity: QuotaEntity, update: ConfigUpdate, *, validate_only: bool = False) -> QuotaRecord:
        with zk_errors(self.settings.hosts):
            return retry_until(
                lambda: self._alter_once(entity, update, validate_only),
                Backoff(CAS_DEADLINE_S * 1000),
                on_give_up=lambda: VersionConflict(
                    f"Gave up updating {_znode(entity)}: it kept changing under concurrent writers"
                ),
            )

    def alter_many(self, changes: Iterable[tuple[QuotaEntity, ConfigUpdate]]) -> list[QuotaRecord]:
        """Pipelined (see zk_bulk): each entity still one CAS multi-op with its notification."""
        from kconfigs.stores.zk_bulk import alter_many_pipelined  # bulk apply/import only

        return alter_many_pipelined(self, changes)

    def _alter_once(self, entity: QuotaEntity, update: ConfigUpdate, validate_only: bool) -> QuotaRecord:
        path = _znode(entity)
        try:
            data, stat = self.client.get(path)
        except kz.NoNodeError:
            data, stat = None, None
        new_configs = dict(update(decode_config(data, path)))
        if validate_only:
            return QuotaRecord(entity, new_configs)
        self.ensure_changes_path()  # only now: an update that refuses (nothing to delete) writes nothing
        missing = self._missing_parents(path) if stat is None and new_configs else []
        ops = entity_ops(entity, stat, new_configs, missing, self.secure)
        if is_pair_delete(entity, new_configs, stat):
            ops += self._pair_parent_deletes(entity)
        tx = self.client.transaction()
        add_to(tx, ops + [notification_op(entity, self.secure)])
        self._commit(tx)
        return QuotaRecord(entity, new_configs)

    def _pair_parent_deletes(self, entity: QuotaEntity) -> list:
        user_path, clients_path = pair_parent_paths(entity)
        clients_stat = self.client.exists(clients_path)
        if clients_stat is None or clients_stat.numChildren != 1:
            return []
        user_data, user_stat = self.client.get(user_path)
        return pair_parent_deletes(
            entity, clients_stat, clients_stat.numChildren - 1, not decode_config(user_data, user_path), user_stat
        )

    def _commit(self, tx) -> None:
        results = tx.commit()
        failures = [r for r in results if isinstance(r, Exception) and not isinstance(r, kz.RolledBackError)]
        if not failures:
            return
        if isinstance(failures[0], (kz.BadVersionError, kz.NodeExistsError, kz.NoNodeError, kz.NotEmptyError)):
            raise RetryNeeded()  # a concurrent writer got there first: re-read and re-apply
        raise failures[0]

    def _missing_parents(self, path: str) -> list[str]:
        parts = path.strip("/").split("/")
        parents = ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]
        return [p for p in parents if self.client.exists(p) is None]

    def ensure_changes_path(self) -> None:
        """Create ``/config/changes`` when missing (a fresh ZooKeeper), as a broker would."""
        if self.client.exists(CHANGES_PATH) is None:
            with contextlib.suppress(kz.NodeExistsError):
                self.client.ensure_path(CHANGES_PATH, acl=acl_for(CHANGES_PATH, self.secure))

    # ---- watching ----------------------------------------------------------------------
    def watch(self, on_change: Callable[[StoreChange], None], on_state: Callable[[str], None] | None = None):
        from kconfigs.stores.zk_watch import ZkQuotaWatch

        return ZkQuotaWatch(self, on_change, on_state)

    def close(self) -> None:
        self.client.stop()
        self.client.close()


def chroot_of(hosts: str) -> str | None:
    """The chroot of ``host:port[,host:port][/chroot]``, None for none (or ``/``, which ZooKeeper
    ignores too). :raises UsageError: ZooKeeper's own message for a malformed chroot, as
    kafka-configs prints it (``Path must not end with / character``)."""
    _, slash, rest = hosts.partition("/")
    if not slash or not rest:
        return None
    chroot = "/" + rest
    problem = zk_path_problem(chroot)
    if problem is not None:
        raise UsageError(problem)
    return chroot


def check_chroot(store: ZooKeeperStore, chroot: str | None) -> str | None:
    """Catch a mistyped or forgotten chroot before it is used: one that does not exist is an error
    for reads and writes alike (kafka-configs 2.8 cannot write there either: ``Path length must
    be > 0``); a path (the root too, when no chroot is given) that holds no ``/brokers``, so that
    no Kafka uses it, returns a warning naming any child that Kafka does use (``zk:2181`` given
    for ``zk:2181/kafka``). ``/config`` is no sign of Kafka: the first write to a forgotten chroot
    creates it, and every later command there must still be warned. kafka-configs reads and
    writes there in silence.

    :raises UsageError, StoreUnavailable:
    """
    hosts = store.settings.hosts.partition("/")[0]
    with zk_errors(store.settings.hosts):
        if chroot is not None and store.client.exists("/") is None:
            raise UsageError(f"ZooKeeper chroot {chroot} does not exist on {hosts} (is the path right?)")
        if store.client.exists("/brokers"):
            return None
        used = _kafka_children(store)
    where = f"chroot {chroot}" if chroot is not None else "root (no chroot given)"
    hint = f"; Kafka's znodes are under {', '.join(hosts + (chroot or '') + '/' + c for c in used)}" if used else ""
    return f"Warning: ZooKeeper {where} on {hosts} holds no /brokers: no Kafka cluster uses it{hint}"


#: children looked at for a hint: a ZooKeeper shared by many services may have many
_HINT_CHILDREN = 50


def _kafka_children(store: ZooKeeperStore) -> list[str]:
    """Children of the given path that hold ``/brokers`` (where a Kafka chroot is), sorted; none
    when ZooKeeper's ACLs do not let us list them (the hint is a courtesy, not the check)."""
    from kazoo.exceptions import NoAuthError

    try:
        children = sorted(store.client.get_children("/"))[:_HINT_CHILDREN]
        pending = [(child, store.client.exists_async(f"/{child}/brokers")) for child in children]
        return [child for child, request in pending if request.get() is not None]
    except NoAuthError:
        return []


def _component(name) -> str:
    return DEFAULT_NAME if name is DEFAULT else sanitize(name)


_znode = entity_znode


def _all_shapes_covering(required: frozenset) -> list[frozenset]:
    shapes = [
        frozenset({EntityType.USER}),
        frozenset({EntityType.CLIENT_ID}),
        frozenset({EntityType.USER, EntityType.CLIENT_ID}),
        frozenset({EntityType.IP}),
    ]
    return [s for s in shapes if required <= s]
