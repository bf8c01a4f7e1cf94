"""export / diff / apply / migrate through the CLI on the embedded store (exact output, exit
codes, then the state re-read through the Store)."""

from __future__ import annotations

import json

import pytest
from declarative_support import QUOTAS

from harness.cli import created_store, run_main
from kconfigs.model import DEFAULT, MATCH_ALL, QuotaEntity
from kconfigs.stores.sqlite import SqliteStore


def stored(path) -> dict:
    store = SqliteStore(path)
    try:
        return {r.entity: dict(r.configs) for r in store.describe(MATCH_ALL)}
    finally:
        store.close()


def test_apply_then_export_gives_back_the_file_and_diff_is_clean(env):
    quotas = str(env / "quotas.toml")
    assert run_main("apply", quotas)[0] == 0
    assert stored(env / "home" / "quotas.db")[QuotaEntity(user="CN=alice,OU=x", client_id=DEFAULT)] == {
        "producer_byte_rate": "1048576",
        "request_percentage": "200.0",
    }
    code, out, err = run_main("export")
    assert (code, out, err) == (0, QUOTAS, "")
    assert run_main("diff", quotas) == (0, "In sync: no changes.\n", "")
    assert run_main("apply", quotas) == (0, "In sync: no changes.\n", "")


@pytest.mark.parametrize(
    "argv, message",
    [
        (("export", "-f", ""), "--file is empty: give a value or leave it out"),
        (("export", "--file="), "--file is empty: give a value or leave it out"),
        (("apply", ""), "FILE is empty: give a value"),
        (("apply", "", "--prune", "--yes"), "FILE is empty: give a value"),
        (("diff", ""), "FILE is empty: give a value"),
        (
            ("migrate", "--from", "a.db", "--to", "b.db", "--command-config", ""),
            "--command-config is empty: give a value or leave it out",
        ),
    ],
)
def test_an_empty_file_name_is_one_line_and_nothing_changes(env, argv, message):
    """An unset $BACKUP: 'export -f ""' printed the quotas to stdout, exit 0, and wrote no backup."""
    assert run_main("apply", str(env / "quotas.toml"))[0] == 0
    before = stored(env / "home" / "quotas.db")
    assert run_main(*argv) == (1, "", message + "\n")
    assert stored(env / "home" / "quotas.db") == before


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_export_round_trips_in_json_and_yaml(env, fmt):
    run_main("apply", str(env / "quotas.toml"))
    out_file = env / f"q.{fmt}"
    assert run_main("export", "-f", str(out_file)) == (0, "", "")
    second = created_store(env / "second.db")
    assert run_main("apply", str(out_file), "--store", str(second))[0] == 0
    assert run_main("export", "--store", str(second)) == (0, QUOTAS, "")


def test_diff_shows_adds_changes_and_removals_and_exits_2(env):
    run_main("apply", str(env / "quotas.toml"))
    run_main("alter", "--user", "bob", "--set", "producer_byte_rate=5")
    run_main("alter", "--client-id", "über", "--set", "consumer_byte_rate=6")
    (env / "small.toml").write_text(
        '[[quota]]\nentity = { client-id = "über" }\nconsumer_byte_rate = 5\n'
        '[[quota]]\nentity = { client-id = "new" }\nproducer_byte_rate = 1\n'
    )
    code, out, err = run_main("diff", str(env / "small.toml"))
    assert code == 2
    assert out.splitlines()[:6] == [
        "+ client-id 'new'",
        "    + producer_byte_rate = 1",
        "~ client-id 'über'",
        "    ~ consumer_byte_rate: 6 -> 5",
        "- default user-principal",
        "    - consumer_byte_rate = 2000000  (removed only by apply --prune)",
    ]
    assert out.splitlines()[-1] == "1 to add, 1 to change, 7 to remove (entities); 1 / 1 / 8 keys."
    assert err == (
        f"{env / 'small.toml'} differs from the store: 1 to add, 1 to change, 7 to remove; apply without "
        "--prune keeps 8 key(s) of these (--ignore-extra ignores them)\n"
    )


def test_diff_can_ignore_what_apply_without_prune_keeps(env):
    """diff exited 2 forever on quotas that apply (without --prune) deliberately keeps."""
    run_main("alter", "--user", "bob", "--set", "producer_byte_rate=5,consumer_byte_rate=6")
    run_main("alter", "--user", "carol", "--set", "producer_byte_rate=7")
    (env / "f.toml").write_text('[[quota]]\nentity = { user = "bob" }\nproducer_byte_rate = 5\n')
    code, out, err = run_main("diff", str(env / "f.toml"))
    assert (code, out.splitlines()) == (
        2,
        [
            "~ user-principal 'bob'",
            "    - consumer_byte_rate = 6  (removed only by apply --prune)",
            "- user-principal 'carol'",
            "    - producer_byte_rate = 7  (removed only by apply --prune)",
            "0 to add, 1 to change, 1 to remove (entities); 0 / 0 / 2 keys.",
        ],
    )
    assert err.endswith("apply without --prune keeps 2 key(s) of these (--ignore-extra ignores them)\n")
    assert run_main("diff", str(env / "f.toml"), "--ignore-extra") == (
        0,
        "In sync: no changes. 2 key(s) in the store but not in the file are kept (use --prune to remove).\n",
        "",
    )
    code, out, _ = run_main("diff", str(env / "f.toml"), "--ignore-extra", "-o", "json")
    assert code == 0 and json.loads(out)["in_sync"] is True and json.loads(out)["left_alone"] == 2
    assert json.loads(run_main("diff", str(env / "f.toml"), "-o", "json")[1])["kept_without_prune"] == 2
    run_main("alter", "--user", "bob", "--set", "producer_byte_rate=9")  # a real difference still counts
    code, out, _ = run_main("diff", str(env / "f.toml"), "--ignore-extra")
    assert (code, out.splitlines()[:2]) == (2, ["~ user-principal 'bob'", "    ~ producer_byte_rate: 9 -> 5"])


def test_diff_json_is_one_object_for_ci(env):
    run_main("alter", "--user-default", "--set", "producer_byte_rate=5")
    (env / "f.json").write_text('{"quota": [{"entity": {"user": {"default": true}}, "producer_byte_rate": 6}]}')
    code, out, _ = run_main("diff", str(env / "f.json"), "-o", "json")
    assert code == 2
    assert json.loads(out) == {
        "in_sync": False,
        "prune": True,
        "entities": {"add": 0, "change": 1, "remove": 0},
        "keys": {"add": 0, "change": 1, "remove": 0},
        "left_alone": 0,
        "kept_without_prune": 0,
        "changes": [
            {
                "entity": {"user": None},
                "action": "change",
                "keys": [{"key": "producer_byte_rate", "action": "change", "old": 5, "new": 6}],
            }
        ],
    }


def test_apply_removes_absent_quotas_only_with_prune(env):
    run_main("alter", "--user", "bob", "--set", "producer_byte_rate=5,consumer_byte_rate=6")
    (env / "f.toml").write_text('[[quota]]\nentity = { user = "bob" }\nproducer_byte_rate = 5\n')
    code, out, _ = run_main("apply", str(env / "f.toml"))
    assert (code, out) == (
        0,
        "In sync: no changes. 1 key(s) in the store but not in the file are kept (use --prune to remove).\n",
    )
    assert stored(env / "home" / "quotas.db") == {
        QuotaEntity(user="bob"): {"producer_byte_rate": "5", "consumer_byte_rate": "6"}
    }
    code, out, _ = run_main("apply", str(env / "f.toml"), "--prune", "--dry-run")
    assert code == 0 and "- consumer_byte_rate = 6" in out
    assert len(stored(env / "home" / "quotas.db")[QuotaEntity(user="bob")]) == 2  # dry run wrote nothing
    assert run_main("apply", str(env / "f.toml"), "--prune", "--yes")[0] == 0
    assert stored(env / "home" / "quotas.db") == {QuotaEntity(user="bob"): {"producer_byte_rate": "5"}}


def test_a_bad_file_writes_nothing_and_names_file_entity_and_key(env):
    bad = env / "bad.toml"
    bad.write_text(QUOTAS + '\n[[quota]]\nentity = { user = "x" }\nproducer_byte_rate = 0\n')
    code, out, err = run_main("apply", str(bad))
    assert (code, out) == (1, "")
    assert err == (
        f"{bad}: [[quota]] #8 (user-principal 'x'): producer_byte_rate: Invalid value 0 for configuration "
        "producer_byte_rate: Value must be greater than 0 (a zero quota would throttle every request forever)\n"
    )
    assert stored(env / "home" / "quotas.db") == {}


def test_apply_json_reports_what_was_applied(env):
    code, out, _ = run_main("apply", str(env / "quotas.toml"), "-o", "json")
    report = json.loads(out)
    assert code == 0 and report["complete"] is True and report["dry_run"] is False
    assert len(report["applied"]) == 7 and report["failed"] == report["not_attempted"] == []


def test_profile_selects_the_store_and_flags_win(env, monkeypatch):
    (env / "config" / "kconfigs").mkdir(parents=True)
    (env / "config" / "kconfigs" / "config.toml").write_text(f'[profiles.p]\nstore = "{created_store(env / "p.db")}"\n')
    assert run_main("apply", str(env / "quotas.toml"), "--profile", "p")[0] == 0
    assert len(stored(env / "p.db")) == 7
    monkeypatch.setenv("KCONFIGS_PROFILE", "p")
    assert run_main("diff", str(env / "quotas.toml")) == (0, "In sync: no changes.\n", "")
    other = env / "other.db"
    assert run_main("diff", str(env / "quotas.toml"), "--store", str(other)) == (
        1,
        "",
        f"Embedded store {other} does not exist (nothing has been written there; is the path right?)\n",
    )
    assert not other.exists()  # a read never creates the store it was pointed at
    SqliteStore(other).close()
    assert run_main("diff", str(env / "quotas.toml"), "--store", str(other))[0] == 2  # flag wins


def test_migrate_copies_and_verifies_between_embedded_stores(env):
    created_store(env / "a.db")
    created_store(env / "b.db")
    run_main("apply", str(env / "quotas.toml"), "--store", str(env / "a.db"))
    code, out, _ = run_main(
        "migrate", "--from", f"sqlite://{env / 'a.db'}", "--to", f"sqlite://{env / 'b.db'}", "--dry-run"
    )
    assert code == 0 and out.splitlines()[-1] == "7 to add, 0 to change, 0 to remove (entities); 8 / 0 / 0 keys."
    assert stored(env / "b.db") == {}
    assert run_main("migrate", "--from", f"sqlite://{env / 'a.db'}", "--to", f"sqlite://{env / 'b.db'}")[0] == 0
    assert run_main("export", "--store", str(env / "b.db")) == (0, QUOTAS, "")


def test_migrate_says_which_scram_credentials_it_leaves_behind(env):
    """A user's credentials share its entry with its quotas; migrate copies the quotas only, and
    used to leave the credentials behind without a word."""
    source, target = created_store(env / "a.db"), created_store(env / "b.db")
    for user in ("alice", "bob"):
        assert (
            run_main(
                "alter",
                "--store",
                str(source),
                "--user",
                user,
                "--set",
                "SCRAM-SHA-512=[password=pw],producer_byte_rate=9",
            )[0]
            == 0
        )
    assert run_main("alter", "--store", str(source), "--user", "carol", "--set", "producer_byte_rate=9")[0] == 0
    code, out, err = run_main("migrate", "--from", f"sqlite://{source}", "--to", f"sqlite://{target}")
    assert code == 0, err
    assert err == f"Not copied: the SCRAM credentials of 2 users in sqlite://{source} (migrate copies quotas only)\n"
    assert {e.user: c for e, c in stored(target).items()} == {
        u: {"producer_byte_rate": "9"} for u in ("alice", "bob", "carol")
    }


@pytest.mark.parametrize("command", ["export", "diff", "apply", "migrate", "completion", "init"])
def test_every_command_has_help(command):
    code, out, _ = run_main(command, "--help")
    assert code == 0 and out.startswith(f"Usage: kconfigs {command} ")


def test_environment_beats_the_profile_and_a_flag_beats_the_environment(env, monkeypatch):
    (env / "config" / "kconfigs").mkdir(parents=True)
    (env / "config" / "kconfigs" / "config.toml").write_text(
        f'default_profile = "p"\n[profiles.p]\nstore = "{created_store(env / "profile.db")}"\n'
    )
    created_store(env / "env.db")
    created_store(env / "flag.db")
    run_main("apply", str(env / "quotas.toml"))  # default_profile
    assert len(stored(env / "profile.db")) == 7
    monkeypatch.setenv("KCONFIGS_STORE", str(env / "env.db"))
    run_main("apply", str(env / "quotas.toml"))
    assert len(stored(env / "env.db")) == 7
    run_main("apply", str(env / "quotas.toml"), "--store", str(env / "flag.db"))
    assert len(stored(env / "flag.db")) == 7


def test_apply_reads_the_file_from_stdin(env, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(QUOTAS))
    assert run_main("apply", "-")[0] == 0
    assert run_main("export") == (0, QUOTAS, "")


def test_an_exported_file_is_read_by_resolve_and_analyze_quota_loaders(env):
    from kconfigs_analysis.quotas import load_quota_file as analyze_load

    run_main("apply", str(env / "quotas.toml"))
    exported = env / "exported.toml"
    # ips left out: resolve refuses connection_creation_rate = 0, which Kafka accepts (blocks the ip)
    run_main("export", "-f", str(exported), "--entity-type", "users", "--entity-type", "clients")
    code, out, err = run_main("resolve", "--user", "CN=alice,OU=x", "--client-id", "etl", "--quotas", str(exported))
    assert code == 0, err
    assert "request_percentage        200        /config/users/CN%3Dalice%2COU%3Dx/clients/<default>" in out
    assert ({"user": None}, {"consumer_byte_rate": 2000000.0}) in analyze_load(str(exported))
