"""ZooKeeper store: Kafka's config znodes, written byte-compatibly, with compare-and-set.

Unlike kafka-configs (``setData`` with version -1, then a separate notification), every alter is
ONE ZooKeeper multi-op: version check + write (or create/delete) + the ``/config/changes``
notification, retried on a version conflict. Concurrent alters of different keys therefore never
lose a key, and no write is ever visible without the notification brokers need.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from kazoo import exceptions as kz
from kazoo.client import KazooClient
from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from kconfigs.errors import KconfigsError, StoreUnavailable, VersionConflict
from kconfigs.model import DEFAULT, EntityFilter, EntityType, Match, QuotaEntity, QuotaRecord
from kconfigs.retry import RetryNeeded, retry_until
from kconfigs.sanitize import DEFAULT_NAME, desanitize, sanitize
from kconfigs.stores.base import ConfigUpdate, StoreChange
from kconfigs.stores.zk_tls import ZkTlsOptions
from kconfigs.znode_codec import (
    CHANGE_PREFIX,
    CHANGES_PATH,
    CONFIG_ROOT,
    config_znode,
    decode_config,
    encode_config,
    encode_notification,
)

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


@contextlib.contextmanager
def zk_errors(hosts: str) -> Iterator[None]:
    """Map kazoo's exceptions to kconfigs errors (never leak a kazoo traceback)."""
    try:
        yield
    except KconfigsError:
        raise
    except kz.NoAuthError as err:
        raise StoreUnavailable(
            f"ZooKeeper at {hosts} denied access (check --zk-auth / ACLs): {_path_of(err)}"
        ) from None
    except kz.AuthFailedError:
        raise StoreUnavailable(f"ZooKeeper authentication failed at {hosts}") from None
    except (kz.ConnectionLoss, kz.SessionExpiredError, kz.ConnectionClosedError, kz.OperationTimeoutError):
        raise StoreUnavailable(f"Lost the connection to ZooKeeper at {hosts}") from None
    except kz.ZookeeperError as err:
        raise StoreUnavailable(f"ZooKeeper at {hosts} refused the request: {type(err).__name__}") from None


def _path_of(err: Exception) -> str:
    return str(err.args[0]) if err.args else type(err).__name__


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
        try:
            self.client.start(timeout=self.settings.connect_timeout_s)
        except Exception:  # kazoo raises its own timeout type or an auth failure from start()
            self.client.stop()
            self.client.close()
            raise StoreUnavailable(
                f"Cannot connect to ZooKeeper at {self.settings.hosts} within "
                f"{self.settings.connect_timeout_s:g} s (is it running? TLS/auth settings right?)"
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
        """Child names under /config/<parent>, or just the one a component names."""
        if comp is not None and comp.match is Match.DEFAULT:
            return [DEFAULT]
        if comp is not None and comp.match is Match.EXACT:
            return [comp.name]
        try:
            children = sorted(self.client.get_children(config_znode(parent)))
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
            self._ensure_changes_path()
            return retry_until(
                lambda: self._alter_once(entity, update, validate_only),
                deadline_s=CAS_DEADLINE_S,
                on_give_up=lambda: VersionConflict(
                    f"Gave up updating {_znode(entity)}: it kept changing under concurrent writers"
                ),
            )

    def alter_many(self, changes: Iterable[tuple[QuotaEntity, ConfigUpdate]]) -> list[QuotaRecord]:
        """Pipelined (see zk_bulk): each entity still one CAS multi-op with its notification."""
        from kconfigs.stores.zk_bulk import alter_many_pipelined

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
        tx = self.client.transaction()
        if new_configs:
            self._write_ops(tx, entity, path, stat, new_configs)
        elif stat is not None:
            self._delete_ops(tx, entity, path, stat)
        tx.create(
            f"{CHANGES_PATH}/{CHANGE_PREFIX}",
            encode_notification(entity.path),
            acl=self._acl(CHANGES_PATH),
            sequence=True,
        )
        self._commit(tx)
        return QuotaRecord(entity, new_configs)

    def _write_ops(self, tx, entity: QuotaEntity, path: str, stat, configs: dict[str, str]) -> None:
        if stat is not None:
            tx.set_data(path, encode_config(configs), version=stat.version)
            return
        for parent in self._missing_parents(path):
            tx.create(parent, b"", acl=self._acl(parent))  # Kafka creates parents with null data
        tx.create(path, encode_config(configs), acl=self._acl(path))

    def _delete_ops(self, tx, entity: QuotaEntity, path: str, stat) -> None:
        """Kafka 3.5+ (KAFKA-14285): an emptied quota node with no children is deleted; for a
        (user, client) also its ``clients`` parent and the user node when they become empty."""
        if stat.numChildren:
            tx.set_data(path, encode_config({}), version=stat.version)
            return
        tx.delete(path, version=stat.version)
        if entity.user is None or entity.client_id is None:
            return
        clients_path = path.rsplit("/", 1)[0]
        user_path = clients_path.rsplit("/", 1)[0]
        clients_stat = self.client.exists(clients_path)
        if clients_stat is None or clients_stat.numChildren != 1:
            return
        tx.delete(clients_path, version=clients_stat.version)
        user_data, user_stat = self.client.get(user_path)
        if not decode_config(user_data, user_path) and user_stat.numChildren == 1:
            tx.delete(user_path, version=user_stat.version)

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

    def _ensure_changes_path(self) -> None:
        if self.client.exists(CHANGES_PATH) is None:
            with contextlib.suppress(kz.NodeExistsError):
                self.client.ensure_path(CHANGES_PATH, acl=self._acl(CHANGES_PATH))

    def _acl(self, path: str):
        """Kafka's ZkData.defaultAcls: with ZooKeeper security on, /config/users/** is sensitive
        (creator only); everything else is creator-all plus world-read."""
        if not self.secure:
            return OPEN_ACL_UNSAFE
        if path == f"{CONFIG_ROOT}/users" or path.startswith(f"{CONFIG_ROOT}/users/"):
            return CREATOR_ALL_ACL
        return CREATOR_ALL_ACL + READ_ACL_UNSAFE

    # ---- watching ----------------------------------------------------------------------
    def watch(self, on_change: Callable[[StoreChange], None], on_state: Callable[[str], None] | None = None):
        from kconfigs.stores.zk_watch import ZkQuotaWatch

        return ZkQuotaWatch(self, on_change, on_state)

    def close(self) -> None:
        self.client.stop()
        self.client.close()


def _component(name) -> str:
    return DEFAULT_NAME if name is DEFAULT else sanitize(name)


def _znode(entity: QuotaEntity) -> str:
    return config_znode(entity.path)


def _all_shapes_covering(required: frozenset) -> list[frozenset]:
    shapes = [
        frozenset({EntityType.USER}),
        frozenset({EntityType.CLIENT_ID}),
        frozenset({EntityType.USER, EntityType.CLIENT_ID}),
        frozenset({EntityType.IP}),
    ]
    return [s for s in shapes if required <= s]
