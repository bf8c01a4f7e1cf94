"""The ZooKeeper write ops of one quota change, and kazoo's errors as kconfigs errors.

Both writers use these: ``ZooKeeperStore.alter`` (one entity, one multi-op, CAS-retried) and the
pipelined ``zk_bulk.alter_many_pipelined`` (many entities' ops grouped into multi-ops), so they
send exactly the same znode changes. An op is ``(method, args, kwargs)`` of kazoo's
``Transaction`` (``set_data``, ``create``, ``delete``); :func:`add_to` adds ops to a transaction.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from kazoo import exceptions as kz
from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from kconfigs.errors import KconfigsError, StoreUnavailable
from kconfigs.model import QuotaEntity
from kconfigs.znode_codec import (
    CHANGE_PREFIX,
    CHANGES_PATH,
    CONFIG_ROOT,
    config_znode,
    encode_config,
    encode_notification,
)

Op = tuple[str, tuple, dict]


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


def acl_for(path: str, secure: bool) -> list:
    """Kafka's ZkData.defaultAcls: with ZooKeeper security on, /config/users/** is sensitive
    (creator only); everything else is creator-all plus world-read."""
    if not secure:
        return OPEN_ACL_UNSAFE
    if path == f"{CONFIG_ROOT}/users" or path.startswith(f"{CONFIG_ROOT}/users/"):
        return CREATOR_ALL_ACL
    return CREATOR_ALL_ACL + READ_ACL_UNSAFE


def entity_znode(entity: QuotaEntity) -> str:
    return config_znode(entity.path)


def entity_ops(entity: QuotaEntity, stat, new: dict[str, str], missing_parents: list[str], secure: bool) -> list[Op]:
    """The version-checked write of ``new`` configs over the node read with ``stat`` (None: no
    node): set, create (after ``missing_parents``, created with null data as Kafka does) or
    delete; an emptied node that still has children keeps an empty config. The notification is
    not included: see :func:`notification_op`."""
    path = entity_znode(entity)
    if new and stat is not None:
        return [("set_data", (path, encode_config(new)), {"version": stat.version})]
    if new:
        return [("create", (parent, b""), {"acl": acl_for(parent, secure)}) for parent in missing_parents] + [
            ("create", (path, encode_config(new)), {"acl": acl_for(path, secure)})
        ]
    if stat is None:
        return []
    if stat.numChildren:
        return [("set_data", (path, encode_config({})), {"version": stat.version})]
    return [("delete", (path,), {"version": stat.version})]


def is_pair_delete(entity: QuotaEntity, new: dict, stat) -> bool:
    """Removing a (user, client-id) node outright, which may empty its parents."""
    return (
        not new
        and stat is not None
        and not stat.numChildren
        and entity.user is not None
        and entity.client_id is not None
    )


def pair_parent_paths(entity: QuotaEntity) -> tuple[str, str]:
    """(``/config/users/<u>``, ``/config/users/<u>/clients``) of a (user, client-id) entity."""
    clients_path = entity_znode(entity).rsplit("/", 1)[0]
    return clients_path.rsplit("/", 1)[0], clients_path


def pair_parent_deletes(
    entity: QuotaEntity, clients_stat, children_left: int, user_data_empty: bool, user_stat
) -> list[Op]:
    """Kafka 3.5+: deleting the last (user, client) node of a user also deletes its ``clients``
    parent, and the user node when its config is empty and ``clients`` was its only child.
    ``children_left``: children of ``clients`` once this delete (and earlier ones) ran."""
    user_path, clients_path = pair_parent_paths(entity)
    if clients_stat is None or children_left != 0:
        return []
    ops: list[Op] = [("delete", (clients_path,), {"version": clients_stat.version})]
    if user_stat is not None and user_stat.numChildren == 1 and user_data_empty:
        ops.append(("delete", (user_path,), {"version": user_stat.version}))
    return ops


def notification_op(entity: QuotaEntity, secure: bool) -> Op:
    """The ``/config/changes/config_change_<seq>`` create brokers watch for."""
    return (
        "create",
        (f"{CHANGES_PATH}/{CHANGE_PREFIX}", encode_notification(entity.path)),
        {"acl": acl_for(CHANGES_PATH, secure), "sequence": True},
    )


def add_to(tx, ops: list[Op]) -> None:
    """Add ``ops`` to a kazoo transaction."""
    for method, args, kwargs in ops:
        getattr(tx, method)(*args, **kwargs)
