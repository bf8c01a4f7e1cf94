"""Quotas as code on a real ZooKeeper: round trip, prune, CAS, interrupted applies converge."""

from __future__ import annotations

import json
import threading

from declarative_support import QUOTAS
from kazoo.security import OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, make_digest_acl

# same quota file, same expectations and the same isolated environment (the `env` fixture) on every store
from harness.cli import created_store, run_main
from kconfigs.applier import apply_plan
from kconfigs.model import MATCH_ALL, QuotaEntity
from kconfigs.plan import build_plan
from kconfigs.quotafile import DesiredQuota
from kconfigs.stores.zookeeper import ZkSettings, ZooKeeperStore


def _config(zk_client, path: str) -> dict:
    data, _ = zk_client.get(path)
    return json.loads(data)["config"]


def test_export_apply_export_is_identity_and_znodes_are_kafkas(env, zk_connect, zk_client):
    assert run_main("apply", str(env / "quotas.toml"), "--zookeeper", zk_connect)[0] == 0
    assert run_main("export", "--zookeeper", zk_connect) == (0, QUOTAS, "")
    assert run_main("diff", str(env / "quotas.toml"), "--zookeeper", zk_connect)[0] == 0
    assert _config(zk_client, "/config/users/CN%3Dalice%2COU%3Dx/clients/<default>") == {
        "producer_byte_rate": "1048576",
        "request_percentage": "200.0",
    }
    assert _config(zk_client, "/config/users/with%20space/clients/a%2Ab") == {"controller_mutation_rate": "10.5"}
    assert _config(zk_client, "/config/users/%3Cdefault%3E") == {"producer_byte_rate": "7"}
    notifications = [
        json.loads(zk_client.get(f"/config/changes/{c}")[0]) for c in zk_client.get_children("/config/changes")
    ]
    assert len(notifications) == 7 and all(n["version"] == 2 for n in notifications)
    # the exported file applied to an empty embedded store exports the same bytes again
    exported = env / "exported.toml"
    run_main("export", "--zookeeper", zk_connect, "-f", str(exported))
    assert run_main("apply", str(exported), "--store", str(created_store(env / "copy.db")))[0] == 0
    assert run_main("export", "--store", str(env / "copy.db")) == (0, QUOTAS, "")


def test_prune_removes_quota_keys_but_keeps_scram_credentials(env, zk_connect, zk_client):
    zk_client.ensure_path("/config/changes")
    zk_client.create(
        "/config/users/bob",
        json.dumps(
            {
                "version": 1,
                "config": {
                    "SCRAM-SHA-256": "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096",
                    "producer_byte_rate": "5",
                },
            }
        ).encode(),
        makepath=True,
    )
    (env / "only-alice.toml").write_text('[[quota]]\nentity = { user = "alice" }\nproducer_byte_rate = 9\n')
    assert run_main("apply", str(env / "only-alice.toml"), "--zookeeper", zk_connect)[0] == 0
    assert _config(zk_client, "/config/users/bob")["producer_byte_rate"] == "5"  # no --prune: kept
    code, out, _ = run_main("apply", str(env / "only-alice.toml"), "--zookeeper", zk_connect, "--prune", "--yes")
    assert code == 0 and "- user-principal 'bob'\n    - producer_byte_rate = 5\n" in out
    assert list(_config(zk_client, "/config/users/bob")) == ["SCRAM-SHA-256"]
    assert run_main("diff", str(env / "only-alice.toml"), "--zookeeper", zk_connect)[0] == 0


def test_prune_of_user_client_entities_removes_their_empty_parents(env, zk_connect, zk_client):
    run_main("apply", str(env / "quotas.toml"), "--zookeeper", zk_connect)
    (env / "empty.toml").write_text("")
    assert (
        run_main(
            "apply", str(env / "empty.toml"), "--zookeeper", zk_connect, "--prune", "--yes", "--allow-empty-source"
        )[0]
        == 0
    )
    assert run_main("export", "--zookeeper", zk_connect) == (0, "", "")
    assert not zk_client.exists("/config/users/with%20space")  # Kafka 3.5+: no empty residue


def _store(zk_connect: str) -> ZooKeeperStore:
    return ZooKeeperStore(ZkSettings(hosts=zk_connect))


def test_a_concurrent_change_is_reported_not_clobbered(zk_connect, zk_client):
    store = _store(zk_connect)
    try:
        store.alter(QuotaEntity(user="alice"), lambda c: {"producer_byte_rate": "1"})
        desired = [DesiredQuota(QuotaEntity(user=u), {"producer_byte_rate": 2}) for u in ("alice", "bob")]
        plan = build_plan(desired, store.describe(MATCH_ALL), prune=False)
        data = json.dumps({"version": 1, "config": {"producer_byte_rate": "7"}}).encode()
        zk_client.set("/config/users/alice", data)  # someone else, after the plan was made
        report = apply_plan(store, plan)
    finally:
        store.close()
    assert [i.entity.user for i in report.applied] == ["bob"]
    assert [(i.entity.user, why) for i, why in report.failed] == [
        (
            "alice",
            "user-principal 'alice' changed while applying: producer_byte_rate was 1 in the plan, "
            "is now 7; not overwritten, re-run to re-plan",
        )
    ]
    assert _config(zk_client, "/config/users/alice") == {"producer_byte_rate": "7"}


def test_an_entity_refused_by_an_acl_fails_alone_and_a_rerun_converges(env, zk_connect, zk_client):
    zk_client.add_auth("digest", "admin:pw")
    acl = [make_digest_acl("admin", "pw", all=True), *READ_ACL_UNSAFE]
    zk_client.ensure_path("/config/users")
    zk_client.create(
        "/config/users/locked", json.dumps({"version": 1, "config": {"producer_byte_rate": "1"}}).encode(), acl=acl
    )
    entries = [f'[[quota]]\nentity = {{ user = "u{i:02}" }}\nproducer_byte_rate = {i + 1}\n' for i in range(120)]
    entries.append('[[quota]]\nentity = { user = "locked" }\nproducer_byte_rate = 2\n')
    (env / "many.toml").write_text("\n".join(entries))
    code, out, err = run_main("apply", str(env / "many.toml"), "--zookeeper", zk_connect)
    assert code == 3
    lines = err.splitlines()
    assert lines[0].startswith("not applied: user-principal 'locked': ZooKeeper at 127.0.0.1:")
    assert lines[-1].startswith("Applied 120 of 121 entity changes; 1 failed (first: users/locked: ")
    assert lines[-1].endswith("; re-run to converge")
    assert _config(zk_client, "/config/users/u07") == {"producer_byte_rate": "8"}
    zk_client.set_acls("/config/users/locked", OPEN_ACL_UNSAFE)
    code, out, _ = run_main("apply", str(env / "many.toml"), "--zookeeper", zk_connect)
    assert code == 0 and out.startswith("~ user-principal 'locked'\n    ~ producer_byte_rate: 1 -> 2\n")
    assert run_main("diff", str(env / "many.toml"), "--zookeeper", zk_connect)[0] == 0


def test_zookeeper_stopped_mid_apply_then_a_rerun_converges(zk_server, zk_connect):
    desired = [
        DesiredQuota(
            QuotaEntity(user=f"user-{i}", client_id=f"app-{i % 7}") if i % 2 else QuotaEntity(client_id=f"app-{i}"),
            {"producer_byte_rate": i + 1},
        )
        for i in range(2000)
    ]
    store = _store(zk_connect)
    stopped = threading.Event()

    def stop_after_first_batch(count: int) -> None:
        if not stopped.is_set():
            stopped.set()
            zk_server.stop()

    try:
        plan = build_plan(desired, store.describe(MATCH_ALL), prune=False)
        report = apply_plan(store, plan, batch_size=400, on_progress=stop_after_first_batch)
    finally:
        zk_server.start()
        store.close()
    assert len(report.applied) == 400 and not report.complete
    assert len(report.applied) + len(report.failed) + len(report.unknown) + len(report.not_attempted) == 2000
    store = _store(zk_connect)
    try:
        replan = build_plan(desired, store.describe(MATCH_ALL), prune=False)
        assert len(replan.entities) == 1600  # exactly the ones reported as not applied
        assert apply_plan(store, replan).complete
        assert build_plan(desired, store.describe(MATCH_ALL), prune=True).in_sync
    finally:
        store.close()


def test_migrate_between_zookeeper_and_the_embedded_store_verifies(env, zk_connect):
    run_main("apply", str(env / "quotas.toml"), "--store", str(created_store(env / "src.db")))
    created_store(env / "dst.db")
    zk_spec = f"zk://{zk_connect}"
    assert run_main("migrate", "--from", f"sqlite://{env / 'src.db'}", "--to", zk_spec)[0] == 0
    assert run_main("export", "--zookeeper", zk_connect) == (0, QUOTAS, "")
    assert run_main("migrate", "--from", zk_spec, "--to", f"sqlite://{env / 'dst.db'}")[0] == 0
    assert run_main("export", "--store", str(env / "dst.db")) == (0, QUOTAS, "")
    code, out, _ = run_main("migrate", "--from", zk_spec, "--to", f"sqlite://{env / 'dst.db'}")
    assert (code, out) == (0, "In sync: no changes.\n")


def test_zookeeper_killed_while_writes_are_in_flight_reports_exactly(zk_server, zk_connect, zk_client):
    """SIGKILL while multi-ops are in flight: everything reported applied is there, nothing
    reported failed or not attempted is, and a re-run converges."""
    desired = [DesiredQuota(QuotaEntity(client_id=f"c-{i:05}"), {"producer_byte_rate": i + 1}) for i in range(3000)]
    wanted = {d.entity: d.quotas["producer_byte_rate"] for d in desired}
    zk_client.ensure_path("/config/clients")
    store = _store(zk_connect)

    def kill_once_writes_land() -> None:
        while len(zk_client.get_children("/config/clients")) < 300:
            pass
        zk_server.kill()

    killer = threading.Thread(target=kill_once_writes_land)
    try:
        plan = build_plan(desired, store.describe(MATCH_ALL), prune=False)
        killer.start()
        report = apply_plan(store, plan, batch_size=3000)
    finally:
        killer.join()
        zk_server.start()
        store.close()
    assert not report.complete and report.applied
    store = _store(zk_connect)
    try:
        now = {r.entity: int(r.configs["producer_byte_rate"]) for r in store.describe(MATCH_ALL) if r.configs}
        assert all(now.get(i.entity) == wanted[i.entity] for i in report.applied)
        assert not any(i.entity in now for i, _ in report.failed)
        assert not any(i.entity in now for i in report.not_attempted)
        assert apply_plan(store, build_plan(desired, store.describe(MATCH_ALL), prune=False)).complete
        assert build_plan(desired, store.describe(MATCH_ALL), prune=True).in_sync
    finally:
        store.close()


def test_bulk_prune_of_user_client_pairs_cleans_parents_like_kafka(env, zk_connect, zk_client):
    def entry(user: str, client: str | None = None) -> str:
        entity = f'{{ user = "{user}", client-id = "{client}" }}' if client else f'{{ user = "{user}" }}'
        return f"[[quota]]\nentity = {entity}\nproducer_byte_rate = 5\n"

    everything = [
        entry("u1", "a"),
        entry("u1", "b"),
        entry("u2"),
        entry("u2", "a"),
        entry("u2", "b"),
        entry("u3", "a"),
        entry("u4", "a"),
        entry("u4", "b"),
    ]
    kept = [entry("u1", "a"), entry("u2"), entry("u4", "b")]
    (env / "all.toml").write_text("\n".join(everything))
    (env / "kept.toml").write_text("\n".join(kept))
    assert run_main("apply", str(env / "all.toml"), "--zookeeper", zk_connect)[0] == 0
    code, out, err = run_main("apply", str(env / "kept.toml"), "--zookeeper", zk_connect, "--prune", "--yes")
    assert code == 0, err
    assert out.splitlines()[-1] == "Applied 5 of 5 entity changes."
    assert sorted(zk_client.get_children("/config/users")) == ["u1", "u2", "u4"]
    assert zk_client.get_children("/config/users/u1/clients") == ["a"]
    assert zk_client.get_children("/config/users/u2") == [] and _config(zk_client, "/config/users/u2")
    assert zk_client.get_children("/config/users/u4/clients") == ["b"]
    assert run_main("diff", str(env / "kept.toml"), "--zookeeper", zk_connect)[0] == 0


def test_two_concurrent_bulk_applies_of_different_keys_lose_nothing(zk_connect):
    """Both plans see the same 800 entities as new; every create that loses the race fails its
    multi-op, is re-read and re-applied with CAS, so each entity ends with both keys."""
    entities = [
        QuotaEntity(user=f"u{i % 40}", client_id=f"c{i}") if i % 2 else QuotaEntity(client_id=f"c{i}")
        for i in range(800)
    ]
    plans = []
    for key in ("producer_byte_rate", "consumer_byte_rate"):
        plans.append(build_plan([DesiredQuota(e, {key: 100}) for e in entities], [], prune=False))
    reports = [None, None]

    def apply(index: int) -> None:
        store = _store(zk_connect)
        try:
            reports[index] = apply_plan(store, plans[index], batch_size=200)
        finally:
            store.close()

    threads = [threading.Thread(target=apply, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.complete for r in reports), [r.summary() for r in reports]
    store = _store(zk_connect)
    try:
        final = {r.entity: r.configs for r in store.describe(MATCH_ALL) if r.configs}
    finally:
        store.close()
    assert final == {e: {"producer_byte_rate": "100", "consumer_byte_rate": "100"} for e in entities}


def test_completion_offers_entity_names_from_a_reachable_zookeeper(env, zk_connect):
    import os
    import subprocess
    import sys

    run_main("apply", str(env / "quotas.toml"), "--zookeeper", zk_connect)
    words = f"kconfigs alter --zookeeper {zk_connect} --user "
    env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_")}
    env.update(_KCONFIGS_COMPLETE="bash_complete", COMP_WORDS=words, COMP_CWORD=str(len(words.split(" ")) - 1))
    out = subprocess.run(
        [sys.executable, "-m", "kconfigs"], env=env, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.splitlines() == ["plain,<default>", "plain,CN=alice,OU=x", "plain,with space"]
