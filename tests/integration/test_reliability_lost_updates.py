"""No lost updates (docs/RELIABILITY.md section 1):
50 concurrent kconfigs processes altering different keys of the same entities lose
nothing, and (ZooKeeper) every alter is matched by exactly one change notification."""

from __future__ import annotations

import collections
import sqlite3
from contextlib import closing

from lost_updates import USER_KEYS, kconfigs_argv, lost_keys, plan, run_all, zk_state

from kconfigs.stores.sqlite import SqliteStore

PROCESSES = 50
ENTITIES = 10  # 5 processes per entity, each writing a different key


def test_fifty_processes_on_zookeeper_lose_no_key_and_notify_once_each(zk_connect, zk_client):
    alters = plan(PROCESSES, ENTITIES)
    results = run_all([kconfigs_argv(["--zookeeper", zk_connect], a) for a in alters])
    assert [r.returncode for r in results] == [0] * PROCESSES, [r.stderr for r in results if r.returncode]
    state, notified = zk_state(zk_client, {a.user for a in alters})
    assert lost_keys(alters, state) == []
    assert all(set(configs) == set(USER_KEYS) for configs in state.values())
    per_entity = collections.Counter(notified)
    assert per_entity == collections.Counter(f"users/{a.user}" for a in alters)


def test_fifty_processes_on_the_embedded_store_lose_no_key(tmp_path):
    store = tmp_path / "quotas.db"
    SqliteStore(store).close()  # a named store that does not exist is an error, not created
    alters = plan(PROCESSES, ENTITIES)
    results = run_all([kconfigs_argv(["--store", str(store)], a) for a in alters])
    assert [r.returncode for r in results] == [0] * PROCESSES, [r.stderr for r in results if r.returncode]
    import json

    with closing(sqlite3.connect(store)) as db:
        state = {
            path.rsplit("/", 1)[1]: json.loads(data)["config"]
            for path, data in db.execute("SELECT path, data FROM znode")
        }
        changes = [json.loads(d)["entity_path"] for (d,) in db.execute("SELECT data FROM config_change")]
    assert lost_keys(alters, state) == []
    assert collections.Counter(changes) == collections.Counter(f"users/{a.user}" for a in alters)
