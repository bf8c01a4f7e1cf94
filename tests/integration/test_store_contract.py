"""One contract, every store: the ZooKeeper store (a fresh chroot per test) and the embedded
SQLite store (a fresh file per test) must behave the same, down to the znode paths, the JSON
bytes and the change notifications they keep."""

from __future__ import annotations

import queue
import sqlite3
import threading
from contextlib import closing

import pytest

from kconfigs.errors import CorruptData, PartialFailure, ValidationError
from kconfigs.model import (
    DEFAULT,
    MATCH_ALL,
    EntityFilter,
    EntityType,
    FilterComponent,
    Match,
    QuotaEntity,
    QuotaRecord,
)
from kconfigs.service import ConfigChange, merge_update
from kconfigs.stores.sqlite import SqliteStore
from kconfigs.stores.zookeeper import ZkSettings, ZooKeeperStore
from kconfigs.znode_codec import decode_notification


class ZkRaw:
    """Direct view of the ZooKeeper chroot (kazoo, not our store)."""

    def __init__(self, client):
        self.client = client

    def data(self, path):
        stat = self.client.exists(path)
        return self.client.get(path)[0] if stat else None

    def paths(self):
        out = set()

        def walk(path):
            for child in self.client.get_children(path):
                if f"{path}/{child}" != "/config/changes":
                    out.add(f"{path}/{child}")
                    walk(f"{path}/{child}")

        if self.client.exists("/config"):
            walk("/config")
        return {p for p in out if p.count("/") >= 3}  # entity nodes, not /config/users itself

    def notifications(self):
        if not self.client.exists("/config/changes"):
            return []
        names = sorted(self.client.get_children("/config/changes"))
        return [decode_notification(self.client.get(f"/config/changes/{n}")[0]) for n in names]

    def corrupt(self, path, data):
        self.client.create(path, data, makepath=True)


class SqliteRaw:
    """Direct view of the embedded store's file (sqlite3, not our store)."""

    def __init__(self, path):
        self.path = path

    def _rows(self, sql, args=()):
        with closing(sqlite3.connect(self.path)) as db:  # sqlite3's own context manager only commits
            return db.execute(sql, args).fetchall()

    def data(self, path):
        rows = self._rows("SELECT data FROM znode WHERE path = ?", (path,))
        return bytes(rows[0][0]) if rows else None

    def paths(self):
        return {p for (p,) in self._rows("SELECT path FROM znode")}

    def notifications(self):
        return [decode_notification(bytes(d)) for (d,) in self._rows("SELECT data FROM config_change ORDER BY seq")]

    def corrupt(self, path, data):
        with closing(sqlite3.connect(self.path)) as db, db:  # closed, after the insert is committed
            db.execute("INSERT INTO znode(path, data, version) VALUES (?, ?, 0)", (path, data))


@pytest.fixture(params=["zookeeper", "sqlite"])
def kind(request):
    return request.param


@pytest.fixture
def open_store(kind, request, tmp_path):
    """A factory of independent store instances on the same backing data (like separate processes)."""
    opened = []
    if kind == "zookeeper":
        connect = request.getfixturevalue("zk_connect")
        factory = lambda: ZooKeeperStore(ZkSettings(hosts=connect))  # noqa: E731
    else:
        db_path = tmp_path / "quotas.db"
        factory = lambda: SqliteStore(db_path)  # noqa: E731

    def open_one():
        store = factory()
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store):
    return open_store()


@pytest.fixture
def raw(kind, request, tmp_path, store):
    if kind == "zookeeper":
        return ZkRaw(request.getfixturevalue("zk_client"))
    return SqliteRaw(tmp_path / "quotas.db")


def put(store, entity, add=None, delete=(), **kwargs):
    return store.alter(entity, merge_update(entity, ConfigChange(add=add or {}, delete=list(delete))), **kwargs)


def only(entity_type, match=Match.ANY, name=None):
    return EntityFilter((FilterComponent(entity_type, match, name),))


USER = QuotaEntity(user="alice")
TUPLE = QuotaEntity(user="alice", client_id="app")


def test_alter_writes_kafkas_znode_json_at_kafkas_path(store, raw):
    record = put(store, QuotaEntity(user="CN=a b"), {"producer_byte_rate": "1024"})
    assert record == QuotaRecord(QuotaEntity(user="CN=a b"), {"producer_byte_rate": "1024"})
    assert raw.data("/config/users/CN%3Da%20b") == b'{"version":1,"config":{"producer_byte_rate":"1024"}}'
    assert store.describe(only(EntityType.USER, Match.EXACT, "CN=a b")) == [record]


def test_alter_merges_adds_and_removes_deletes(store):
    put(store, TUPLE, {"producer_byte_rate": "1", "consumer_byte_rate": "2"})
    put(store, TUPLE, {"request_percentage": "50"}, delete=["producer_byte_rate"])
    (record,) = store.describe(
        EntityFilter(
            (
                FilterComponent(EntityType.USER, Match.EXACT, "alice"),
                FilterComponent(EntityType.CLIENT_ID, Match.EXACT, "app"),
            )
        )
    )
    assert record.configs == {"consumer_byte_rate": "2", "request_percentage": "50"}


@pytest.mark.parametrize(
    "add, delete, message",
    [
        ({}, ["missing_config1", "missing_config2"], "Invalid config(s): missing_config1,missing_config2"),
        ({"foo": "1"}, [], "requirement failed: Unknown Dynamic Configuration: HashSet(foo)."),
        (
            {"producer_byte_rate": "1.5"},
            [],
            "Invalid value 1.5 for configuration producer_byte_rate: Not a number of type LONG",
        ),
    ],
)
def test_a_failing_alter_writes_nothing(store, raw, add, delete, message):
    put(store, USER, {"consumer_byte_rate": "5"})
    before = (raw.paths(), raw.data("/config/users/alice"), raw.notifications())
    with pytest.raises(ValidationError) as err:
        put(store, USER, add, delete)
    assert str(err.value) == message
    assert (raw.paths(), raw.data("/config/users/alice"), raw.notifications()) == before


def test_validate_only_checks_and_answers_but_writes_nothing(store, raw):
    record = put(store, TUPLE, {"producer_byte_rate": "10"}, validate_only=True)
    assert record.configs == {"producer_byte_rate": "10"}
    assert raw.paths() == set() and raw.notifications() == []
    with pytest.raises(ValidationError):
        put(store, TUPLE, {"connection_creation_rate": "1"}, validate_only=True)


def test_every_alter_writes_one_notification_naming_the_entity_path(store, raw):
    entities = [
        QuotaEntity(user="CN=u1"),
        QuotaEntity(user=DEFAULT),
        QuotaEntity(user="u", client_id=DEFAULT),
        QuotaEntity(user=DEFAULT, client_id=DEFAULT),
        QuotaEntity(client_id="c"),
        QuotaEntity(client_id=DEFAULT),
    ]
    for entity in entities:
        put(store, entity, {"producer_byte_rate": "1"})
    put(store, QuotaEntity(ip="1.2.3.4"), {"connection_creation_rate": "1"})
    put(store, QuotaEntity(ip=DEFAULT), {"connection_creation_rate": "1"})
    put(store, QuotaEntity(client_id="c"), {"producer_byte_rate": "1"})  # a no-op still notifies
    assert raw.notifications() == [
        "users/CN%3Du1",
        "users/<default>",
        "users/u/clients/<default>",
        "users/<default>/clients/<default>",
        "clients/c",
        "clients/<default>",
        "ips/1.2.3.4",
        "ips/<default>",
        "clients/c",
    ]


def test_emptied_user_and_client_nodes_are_removed_with_their_empty_parents(store, raw):
    put(store, TUPLE, {"producer_byte_rate": "1"})
    put(store, TUPLE, delete=["producer_byte_rate"])
    assert not {p for p in raw.paths() if p.startswith("/config/users/alice")}
    assert raw.notifications() == ["users/alice/clients/app"] * 2
    put(store, QuotaEntity(ip="::1"), {"connection_creation_rate": "1"})
    put(store, QuotaEntity(ip="::1"), delete=["connection_creation_rate"])
    assert "/config/ips/::1" not in raw.paths()


def test_emptying_a_tuple_keeps_a_user_that_has_its_own_quota_or_other_clients(store, raw):
    put(store, USER, {"consumer_byte_rate": "9"})
    put(store, TUPLE, {"producer_byte_rate": "1"})
    put(store, QuotaEntity(user="alice", client_id="other"), {"producer_byte_rate": "1"})
    put(store, TUPLE, delete=["producer_byte_rate"])
    assert "/config/users/alice/clients/app" not in raw.paths()
    assert "/config/users/alice/clients/other" in raw.paths()
    put(store, QuotaEntity(user="alice", client_id="other"), delete=["producer_byte_rate"])
    assert {p for p in raw.paths() if p.startswith("/config/users/alice")} == {"/config/users/alice"}
    assert store.describe(only(EntityType.USER, Match.EXACT, "alice"))[0].configs == {"consumer_byte_rate": "9"}


def test_emptying_a_user_with_client_overrides_keeps_the_overrides(store):
    put(store, USER, {"consumer_byte_rate": "9"})
    put(store, TUPLE, {"producer_byte_rate": "1"})
    put(store, USER, delete=["consumer_byte_rate"])
    assert all(not r.configs for r in store.describe(only(EntityType.USER, Match.EXACT, "alice")))
    tuples = store.describe(
        EntityFilter((FilterComponent(EntityType.USER, Match.ANY), FilterComponent(EntityType.CLIENT_ID, Match.ANY)))
    )
    assert tuples == [QuotaRecord(TUPLE, {"producer_byte_rate": "1"})]


def test_describe_filters_are_strict_like_describe_client_quotas(store):
    data = {
        QuotaEntity(user="u1"): "1",
        QuotaEntity(user=DEFAULT): "2",
        QuotaEntity(user="u1", client_id="c1"): "3",
        QuotaEntity(user=DEFAULT, client_id=DEFAULT): "4",
        QuotaEntity(client_id="c1"): "5",
        QuotaEntity(client_id=DEFAULT): "6",
    }
    for entity, value in data.items():
        put(store, entity, {"producer_byte_rate": value})
    put(store, QuotaEntity(ip="1.2.3.4"), {"connection_creation_rate": "7"})
    put(store, QuotaEntity(ip=DEFAULT), {"connection_creation_rate": "8"})

    def values(entity_filter):
        return sorted(v for r in store.describe(entity_filter) for v in r.configs.values())

    assert values(only(EntityType.USER)) == ["1", "2"]
    assert values(only(EntityType.USER, Match.DEFAULT)) == ["2"]
    assert values(only(EntityType.CLIENT_ID)) == ["5", "6"]
    assert values(only(EntityType.IP)) == ["7", "8"]
    assert values(
        EntityFilter((FilterComponent(EntityType.USER, Match.ANY), FilterComponent(EntityType.CLIENT_ID, Match.ANY)))
    ) == ["3", "4"]
    assert values(
        EntityFilter(
            (FilterComponent(EntityType.USER, Match.EXACT, "u1"), FilterComponent(EntityType.CLIENT_ID, Match.ANY))
        )
    ) == ["3"]
    assert values(EntityFilter((FilterComponent(EntityType.USER, Match.EXACT, "u1"),), strict=False)) == ["1", "3"]
    assert values(MATCH_ALL) == ["1", "2", "3", "4", "5", "6", "7", "8"]


@pytest.mark.parametrize(
    "name", ["CN=ConfigCommandTest,O=Apache,L=<default>", "<default>", "client1?@%", "a b", "a+b", "über", "..."]
)
def test_odd_names_round_trip(store, name):
    put(store, QuotaEntity(user=name, client_id=name), {"producer_byte_rate": "1"})
    (record,) = store.describe(
        EntityFilter((FilterComponent(EntityType.USER, Match.ANY), FilterComponent(EntityType.CLIENT_ID, Match.ANY)))
    )
    assert record.entity == QuotaEntity(user=name, client_id=name)


def test_garbage_config_data_is_corrupt_data_naming_the_path(store, raw):
    raw.corrupt("/config/clients/bad", b"this is not json")
    with pytest.raises(CorruptData, match="/config/clients/bad"):
        store.describe(only(EntityType.CLIENT_ID))
    with pytest.raises(CorruptData, match="/config/clients/bad"):
        put(store, QuotaEntity(client_id="bad"), {"producer_byte_rate": "1"})
    assert raw.notifications() == []


def test_alter_many_names_what_was_and_was_not_applied(store, raw):
    good, bad, never = QuotaEntity(client_id="a"), QuotaEntity(client_id="b"), QuotaEntity(client_id="c")
    changes = [
        (e, merge_update(e, ConfigChange(add=add)))
        for e, add in ((good, {"producer_byte_rate": "1"}), (bad, {"foo": "1"}), (never, {"producer_byte_rate": "1"}))
    ]
    with pytest.raises(PartialFailure) as err:
        store.alter_many(changes)
    applied = {f"/config/{r.entity.path}" for r in err.value.applied}
    assert "clients/b" in str(err.value) and "/config/clients/a" in applied
    assert raw.paths() == applied and "/config/clients/b" not in applied
    assert sorted(raw.notifications()) == sorted(p[len("/config/") :] for p in applied)


def test_concurrent_writers_on_separate_connections_lose_no_key(open_store):
    stores = [open_store() for _ in range(6)]
    errors = []

    def write(index, store):
        try:
            for round_ in range(5):
                key = (
                    "producer_byte_rate",
                    "consumer_byte_rate",
                    "request_percentage",
                    "controller_mutation_rate",
                    "producer_ids_rate",
                    "producer_ids_rate",
                )[index]
                put(store, USER, {key: str(index * 100 + round_ + 1)}) if index < 5 else put(
                    store, QuotaEntity(user="bob"), {key: str(round_ + 1)}
                )
        except Exception as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=write, args=(i, s)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    (record,) = stores[0].describe(only(EntityType.USER, Match.EXACT, "alice"))
    assert record.configs == {
        "producer_byte_rate": "5",
        "consumer_byte_rate": "105",
        "request_percentage": "205",
        "controller_mutation_rate": "305",
        "producer_ids_rate": "405",
    }


def _drain(changes, timeout_s=10.0):
    return changes.get(timeout=timeout_s)


def test_watch_delivers_a_full_snapshot_then_each_change(open_store):
    writer = open_store()
    put(writer, USER, {"producer_byte_rate": "1"})
    put(writer, QuotaEntity(client_id="empty"), {"producer_byte_rate": "1"})
    put(writer, QuotaEntity(client_id="empty"), delete=["producer_byte_rate"])
    changes: queue.Queue = queue.Queue()
    watch = open_store().watch(changes.put)
    try:
        first = _drain(changes)
        assert first.full_snapshot and list(first.records) == [QuotaRecord(USER, {"producer_byte_rate": "1"})]
        put(writer, TUPLE, {"consumer_byte_rate": "2"})
        change = _drain(changes)
        assert not change.full_snapshot and change.records == (QuotaRecord(TUPLE, {"consumer_byte_rate": "2"}),)
        put(writer, USER, delete=["producer_byte_rate"])
        assert _drain(changes).records == (QuotaRecord(USER, {}),)
    finally:
        watch.close()
