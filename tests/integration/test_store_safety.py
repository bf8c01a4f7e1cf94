"""Every command acts on exactly the store the user meant, and a typo never destroys data:
empty connect strings, the environment and profiles in both grammars, reads that must not
create, destructive operations that must be confirmed, entity names every store refuses.
(Embedded store here; ZooKeeper chroots in test_store_safety_zookeeper.py.)"""

from __future__ import annotations

import hashlib
import json
import os
import pty
import queue
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import created_store as created
from harness.cli import run_main
from kconfigs.errors import StoreUnavailable
from kconfigs.model import MATCH_ALL, QuotaEntity
from kconfigs.stores.sqlite import SqliteStore

ALTER = ("--alter", "--user", "u1", "--add-config", "producer_byte_rate=1")
UNSET = "Embedded store {} does not exist (nothing has been written there; is the path right?)\n"


@pytest.fixture
def env(isolated_env):
    """No quotas.toml: these tests check what exists afterwards."""
    return isolated_env


def default_store(env: Path) -> Path:
    return env / "home" / "quotas.db"


def stored(path: Path) -> dict:
    store = SqliteStore(path, read_only=True)
    try:
        return {r.entity.path: dict(r.configs) for r in store.describe(MATCH_ALL)}
    finally:
        store.close()


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def write_profiles(env: Path, text: str) -> None:
    (env / "config" / "kconfigs").mkdir(parents=True, exist_ok=True)
    (env / "config" / "kconfigs" / "config.toml").write_text(text)


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--zookeeper", ""),
        ("--bootstrap-server", ""),
        ("--bootstrap-controller", " "),
        ("--store", ""),
        ("--profile", "\t"),
    ],
)
@pytest.mark.parametrize("grammar", ["kafka-configs", "subcommand"])
def test_an_empty_or_blank_store_option_is_one_line_and_nothing_is_written(env, flag, value, grammar):
    argv = (
        [flag, value, *ALTER]
        if grammar == "kafka-configs"
        else ["alter", "--user", "u1", "--set", "producer_byte_rate=1", flag, value]
    )
    code, out, err = run_main(*argv)
    # The kafka-configs grammar answers an empty bootstrap list with the admin client's own
    # ConfigException text, as kafka-configs 3.x/4.x do (without their stack trace).
    kafka_text = grammar == "kafka-configs" and flag.startswith("--bootstrap")
    expected = (
        "You must set either bootstrap.servers or bootstrap.controllers\n"
        if kafka_text
        else f"{flag} is empty: give a value or leave it out\n"
    )
    assert (code, out, err) == (1, "", expected)
    assert not (env / "home").exists()


@pytest.mark.parametrize("variable", ["KCONFIGS_HOME", "KCONFIGS_CONFIG"])
@pytest.mark.parametrize("value", ["", " "])
@pytest.mark.parametrize(
    "argv", [("describe",), ALTER, ("alter", "--user", "u1", "--set", "producer_byte_rate=1"), ("export",)]
)
def test_an_empty_home_or_config_variable_is_an_error_not_the_default(env, monkeypatch, variable, value, argv):
    """KCONFIGS_HOME=$DIR with DIR unset read and wrote the store under ~/.local/share instead;
    KCONFIGS_CONFIG="" took the profiles of the default config file."""
    monkeypatch.setenv("XDG_DATA_HOME", str(env / "xdg-data"))
    monkeypatch.setenv(variable, value)
    assert run_main(*argv) == (1, "", f"{variable} is empty: give a value or leave it out\n")
    assert not (env / "xdg-data").exists() and not default_store(env).exists()


def test_a_blank_environment_variable_is_an_error_not_unset(env, monkeypatch):
    monkeypatch.setenv("KCONFIGS_ZOOKEEPER", "")
    assert run_main(*ALTER) == (1, "", "KCONFIGS_ZOOKEEPER is empty: give a value or leave it out\n")
    assert not (env / "home").exists()


def test_the_kafka_configs_grammar_uses_the_environment_and_flags_win(env, monkeypatch):
    named = created(env / "named.db")
    monkeypatch.setenv("KCONFIGS_STORE", str(named))
    assert run_main(*ALTER)[0] == 0
    assert stored(named) == {"users/u1": {"producer_byte_rate": "1"}} and not default_store(env).exists()
    flag_store = created(env / "flag.db")
    assert run_main("--store", str(flag_store), *ALTER)[0] == 0
    assert flag_store.exists() and not default_store(env).exists()


def test_an_environment_bootstrap_server_puts_the_kafka_configs_grammar_in_bootstrap_mode(env, monkeypatch):
    argv = ("--alter", "--entity-type", "broker-loggers", "--entity-name", "1", "--add-config", "a=b")
    code, _, err = run_main(*argv)  # no server named: ZooKeeper mode's type list
    assert (code, err) == (
        1,
        "Invalid entity type broker-loggers, the entity type must be one of "
        "topics,clients,users,brokers,ips with the --zookeeper argument\n",
    )
    monkeypatch.setenv("KCONFIGS_BOOTSTRAP_SERVER", "127.0.0.1:1")
    code, _, err = run_main(*argv)  # bootstrap mode accepts the type, then kconfigs' own scope check
    assert (code, err) == (
        1,
        "kconfigs manages client quotas only (users, clients, ips); use kafka-configs.sh for broker-loggers\n",
    )
    assert not (env / "home").exists()


@pytest.mark.parametrize("selected_by", ["flag", "environment", "default_profile"])
def test_the_kafka_configs_grammar_uses_profiles(env, monkeypatch, selected_by):
    write_profiles(
        env,
        ('default_profile = "p"\n' if selected_by == "default_profile" else "")
        + f'[profiles.p]\nstore = "{created(env / "p.db")}"\n',
    )
    extra = ["--profile", "p"] if selected_by == "flag" else []
    if selected_by == "environment":
        monkeypatch.setenv("KCONFIGS_PROFILE", "p")
    assert run_main(*ALTER, *extra)[0] == 0
    assert stored(env / "p.db") == {"users/u1": {"producer_byte_rate": "1"}}
    assert run_main("--describe", "--user", "u1", *extra) == (
        0,
        "Configs for user-principal 'u1' are producer_byte_rate=1\n",
        "",
    )
    assert not default_store(env).exists()


#: one command line of every command that takes the store options (both grammars)
EVERY_STORE_COMMAND = [
    ("--describe", "--user", "u1"),
    ALTER,
    ("describe",),
    ("alter", "--user", "u", "--set", "producer_byte_rate=1"),
    ("delete", "--user", "u", "--yes"),
    ("resolve", "--user", "u", "--client-id", "c"),
    ("export",),
    ("diff", "q.toml"),
    ("apply", "q.toml"),
    ("init",),
    ("simulate", "--trace", "t.csv"),
    ("simulate", "--trace", "t.csv", "--quotas", "q.toml"),
    ("analyze", "report", "dump.csv", "--quotas", "q.toml", "--quiet"),
]


def _command_inputs(env: Path, monkeypatch) -> None:
    monkeypatch.chdir(env)
    (env / "q.toml").write_text("")
    (env / "t.csv").write_text("0,u,c,,produce,1\n")


@pytest.mark.parametrize("argv", EVERY_STORE_COMMAND)
def test_an_unknown_profile_is_an_error_in_every_command(env, monkeypatch, argv):
    _command_inputs(env, monkeypatch)
    write_profiles(env, '[profiles.p]\nstore = "p.db"\n')
    code, out, err = run_main(*argv, "--profile", "nosuch")
    assert (code, out) == (1, "")
    assert err == f"No profile 'nosuch' in {env / 'config' / 'kconfigs' / 'config.toml'} (profiles: p)\n"
    assert not (env / "home").exists()


@pytest.mark.parametrize("argv", EVERY_STORE_COMMAND)
def test_a_profile_asked_for_without_a_config_file_names_the_missing_file(env, monkeypatch, argv):
    _command_inputs(env, monkeypatch)
    code, out, err = run_main(*argv, "--profile", "prod")
    assert (code, out) == (1, "")
    assert err == f"No profile 'prod': the config file {env / 'config' / 'kconfigs' / 'config.toml'} does not exist\n"
    assert not (env / "home").exists()


@pytest.mark.parametrize("argv", EVERY_STORE_COMMAND)
@pytest.mark.parametrize("with_profile", [False, True])
def test_a_missing_kconfigs_config_file_is_an_error_in_every_command(env, monkeypatch, argv, with_profile):
    """It was read as "no profiles": the command went on with the embedded default store."""
    _command_inputs(env, monkeypatch)
    monkeypatch.setenv("KCONFIGS_CONFIG", str(env / "nonexistent.toml"))
    code, out, err = run_main(*argv, *(["--profile", "prod"] if with_profile else []))
    assert (code, out, err) == (1, "", f"KCONFIGS_CONFIG names {env / 'nonexistent.toml'}, which does not exist\n")
    assert not (env / "home").exists()


@pytest.mark.parametrize("argv", EVERY_STORE_COMMAND)
@pytest.mark.parametrize("profile", ['zk_auth = "u:p"\n', "", 'command_config = "admin.properties"\n'])
@pytest.mark.parametrize("selected_by", ["flag", "default_profile"])
def test_a_profile_that_names_no_store_is_an_error_in_every_command(env, monkeypatch, argv, profile, selected_by):
    """A profile with only credentials (or nothing) wrote the embedded default store."""
    _command_inputs(env, monkeypatch)
    write_profiles(
        env, ('default_profile = "x"\n' if selected_by == "default_profile" else "") + f"[profiles.x]\n{profile}"
    )
    code, out, err = run_main(*argv, *(["--profile", "x"] if selected_by == "flag" else []))
    assert (code, out) == (1, "")
    assert err == (
        f"Profile 'x' in {env / 'config' / 'kconfigs' / 'config.toml'} names no store: "
        "give it zookeeper, bootstrap_server, bootstrap_controller or store\n"
    )
    assert not (env / "home").exists()


def test_a_profile_without_a_store_lends_its_credentials_to_a_store_named_elsewhere(env):
    write_profiles(env, '[profiles.x]\nzk_auth = "u:p"\n')
    store = env / "named.db"
    assert run_main("init", "--store", str(store)) == (0, f"Embedded store {store} created\n", "")
    assert run_main(*ALTER, "--store", str(store), "--profile", "x")[0] == 0
    assert stored(store) == {"users/u1": {"producer_byte_rate": "1"}}


WRITES = [
    ALTER,
    (*ALTER, "--dry-run"),
    ("alter", "--user", "u", "--set", "producer_byte_rate=1"),
    ("alter", "--user", "u", "--set", "producer_byte_rate=1", "--dry-run"),
    ("apply", "q.toml"),
    ("apply", "q.toml", "--dry-run"),
]


@pytest.mark.parametrize("argv", WRITES)
@pytest.mark.parametrize("named_by", ["--store", "KCONFIGS_STORE", "profile", "migrate"])
def test_a_named_store_that_does_not_exist_is_refused_and_not_created(env, monkeypatch, argv, named_by):
    """``--store typo.db`` made a new empty store and wrote there without a word."""
    _command_inputs(env, monkeypatch)
    (env / "q.toml").write_text('[[quota]]\nentity = { user = "u" }\nproducer_byte_rate = 1\n')
    typo = env / "typo.db"
    extra: list[str] = []
    if named_by == "--store":
        extra = ["--store", str(typo)]
    elif named_by == "KCONFIGS_STORE":
        monkeypatch.setenv("KCONFIGS_STORE", str(typo))
    elif named_by == "profile":
        write_profiles(env, f'[profiles.p]\nstore = "{typo}"\n')
        extra = ["--profile", "p"]
    else:
        assert run_main("alter", "--user", "u", "--set", "producer_byte_rate=1")[0] == 0  # a source
        dry_run = ("--dry-run",) if "--dry-run" in argv else ()
        argv = ("migrate", "--from", f"sqlite://{default_store(env)}", "--to", f"sqlite://{typo}", "--yes", *dry_run)
    code, out, err = run_main(*argv, *extra)
    assert (code, out) == (1, "")
    assert (
        err == f"Embedded store {typo} does not exist (is the path right? 'kconfigs init --store {typo}' creates it)\n"
    )
    assert not typo.exists()


def test_init_creates_a_named_store_once_and_refuses_anything_else(env):
    store = env / "new" / "q.db"
    assert run_main("init", "--store", str(store)) == (0, f"Embedded store {store} created\n", "")
    assert stored(store) == {}
    assert run_main(*ALTER, "--store", str(store))[0] == 0
    before = digest(store)
    assert run_main("init", "--store", str(store)) == (
        0,
        f"Embedded store {store} already exists (left as it is)\n",
        "",
    )
    assert digest(store) == before and stored(store) == {"users/u1": {"producer_byte_rate": "1"}}
    (env / "notes.txt").write_text("not a store")
    code, out, err = run_main("init", "--store", str(env / "notes.txt"))
    assert (code, out) == (1, "") and err.startswith(f"Embedded store {env / 'notes.txt'} is not a")
    assert run_main("init", "--zookeeper", "127.0.0.1:1") == (
        1,
        "",
        "kconfigs init creates embedded stores only; --zookeeper names a server\n",
    )
    assert run_main("init") == (0, f"Embedded store {default_store(env)} created\n", "")


def test_the_default_store_is_still_created_by_its_first_write(env):
    assert not default_store(env).exists()
    assert run_main(*ALTER) == (0, "Completed updating config for entity: user-principal 'u1'.\n", "")
    assert stored(default_store(env)) == {"users/u1": {"producer_byte_rate": "1"}}


@pytest.mark.parametrize(
    "argv",
    [
        ("--describe", "--user", "u1"),
        ("describe",),
        ("resolve", "--user", "u", "--client-id", "c"),
        ("export",),
        ("diff", "q.toml"),
        ("simulate", "--trace", "t.csv"),
        ("apply", "q.toml", "--dry-run"),
    ],
)
def test_reads_never_create_a_store(env, monkeypatch, argv):
    monkeypatch.chdir(env)
    (env / "q.toml").write_text("")
    (env / "t.csv").write_text("0,u,c,,produce,1\n")
    missing = env / "nonexistent" / "dir" / "q.db"
    code, out, err = run_main(*argv, "--store", str(missing))
    assert (code, out) == (1, "")
    if "--dry-run" not in argv:  # (a dry run refuses it as the write would: see above)
        assert err == UNSET.format(missing)
    assert not (env / "nonexistent").exists()
    assert run_main(*argv)[0] == 0  # the default store not written yet reads as empty...
    assert not (env / "home").exists()  # ...and is not created by reading it


def _watched_state(changes: queue.Queue, state: dict, wanted: dict, timeout_s: float = 10.0) -> dict:
    """Apply watch changes to ``state`` (entity path -> configs) until it equals ``wanted``."""
    deadline = time.monotonic() + timeout_s
    while state != wanted and time.monotonic() < deadline:
        try:
            change = changes.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            break
        if change.full_snapshot:
            state.clear()
        for record in change.records:
            if record.configs:
                state[record.entity.path] = dict(record.configs)
            else:
                state.pop(record.entity.path, None)
    return state


def test_watching_a_read_only_store_creates_nothing_and_follows_its_first_write(env):
    changes: queue.Queue = queue.Queue()
    path = default_store(env)
    watch = SqliteStore(path, read_only=True, missing_ok=True).watch(changes.put, poll_interval_s=0.05)
    try:
        assert changes.get(timeout=10).records == ()  # the store not written yet reads as empty
        time.sleep(0.3)  # several polls
        assert not (env / "home").exists()  # ...and watching it does not create it
        state: dict = {}
        assert run_main(*ALTER)[0] == 0
        # a writer creates the tables, then writes: the watch may see the empty tables first
        assert _watched_state(changes, state, {"users/u1": {"producer_byte_rate": "1"}}) == {
            "users/u1": {"producer_byte_rate": "1"}
        }
        assert run_main("--alter", "--user", "u1", "--add-config", "producer_byte_rate=2")[0] == 0
        assert _watched_state(changes, state, {"users/u1": {"producer_byte_rate": "2"}}) == {
            "users/u1": {"producer_byte_rate": "2"}
        }
    finally:
        watch.close()


def _store_with(path, quotas: dict) -> None:
    from kconfigs.model import QuotaEntity

    store = SqliteStore(path)
    try:
        for client, rate in quotas.items():
            store.alter(QuotaEntity(client_id=client), lambda _current, rate=rate: {"producer_byte_rate": rate})
    finally:
        store.close()


@pytest.mark.parametrize("read_only", [True, False])
@pytest.mark.parametrize("how", ["replaced", "removed"])
def test_a_store_file_replaced_or_removed_while_open_is_an_error_not_served(env, read_only, how):
    """Configuration-management tools deploy a file by writing a new one and renaming it over the
    old (as does restoring a backup with mv): the gateway's watch kept the replaced file open and
    served its quotas forever, and the quota admin's writes went to it, all in silence. Now every
    operation on the old file fails naming it (a watch keeps the last quotas and says so), and a
    new opening (a restart) reads the file that is there. The new file is not opened in place:
    SQLite finds the write-ahead log by name, next to connections that still hold the old file."""
    path = env / "quotas.db"
    _store_with(path, {"old": "1"})
    changes: queue.Queue = queue.Queue()
    states: list[str] = []
    watched = SqliteStore(path, read_only=read_only)
    watch = watched.watch(changes.put, states.append, poll_interval_s=0.05)
    try:
        assert _watched_state(changes, {}, {"clients/old": {"producer_byte_rate": "1"}})
        path.rename(env / "moved-away.db")
        if how == "replaced":
            _store_with(env / "new.db", {"new": "2"})
            os.replace(env / "new.db", path)
        deadline = time.monotonic() + 10
        while "lost" not in states and time.monotonic() < deadline:
            time.sleep(0.05)
        assert states == ["lost"] and changes.empty()  # the last quotas stay in force
        refused = f"Embedded store {path} was replaced or removed while open: restart to use the file there now"
        with pytest.raises(StoreUnavailable) as failed:
            watched.describe(MATCH_ALL)
        assert str(failed.value) == refused
        if not read_only:  # a write to the old file would reach no reader
            with pytest.raises(StoreUnavailable):
                watched.alter(QuotaEntity(client_id="written"), lambda _c: {"producer_byte_rate": "4"})
            assert stored(env / "moved-away.db") == {"clients/old": {"producer_byte_rate": "1"}}
    finally:
        watch.close()
        watched.close()
    if how == "replaced":  # a restart reads the new file
        assert stored(path) == {"clients/new": {"producer_byte_rate": "2"}}


def test_an_alter_dry_run_creates_nothing(env):
    assert run_main(*ALTER, "--dry-run")[0] == 0
    assert run_main("alter", "--user", "u", "--set", "producer_byte_rate=1", "--dry-run")[0] == 0
    assert not (env / "home").exists()


@pytest.mark.parametrize(
    "entity, shown",
    [
        (("--user", "u2"), "user-principal 'u2'"),
        (("--user", "u1", "--client-default"), "user-principal 'u1', default client-id"),
        (("--ip-default",), "default ips"),
    ],
)
def test_a_delete_of_an_entity_with_no_quotas_fails_and_changes_nothing(env, entity, shown):
    """``kconfigs delete`` of a mistyped name must not report success, nor create the store."""
    nothing = (1, "", f"{shown} has no quotas: nothing deleted\n")
    assert run_main("delete", *entity) == nothing
    assert not (env / "home").exists()  # the default store not written yet is not created
    missing = env / "missing.db"
    assert run_main("delete", *entity, "--store", str(missing)) == (1, "", UNSET.format(missing))
    assert not missing.exists()
    victim = created(env / "victim.db")
    assert run_main("--store", str(victim), *ALTER)[0] == 0
    before = digest(victim)
    assert run_main("delete", *entity, "--store", str(victim)) == nothing
    assert digest(victim) == before
    assert run_main("delete", "--user", "u1", "--store", str(victim), "--yes")[0] == 0
    assert stored(victim) == {}
    assert run_main("delete", "--user", "u1", "--store", str(victim)) == (
        1,
        "",
        "user-principal 'u1' has no quotas: nothing deleted\n",
    )


def test_migrate_from_a_mistyped_source_fails_and_the_target_keeps_its_quotas(env):
    victim = created(env / "victim.db")
    assert run_main("--store", str(victim), *ALTER)[0] == 0
    before = digest(victim)
    code, out, err = run_main(
        "migrate", "--from", f"sqlite://{env / 'typo.db'}", "--to", f"sqlite://{victim}", "--prune", "--yes"
    )
    assert (code, out, err) == (1, "", UNSET.format(env / "typo.db"))
    assert digest(victim) == before and not (env / "typo.db").exists()


def test_a_prune_from_an_empty_source_is_refused_unless_allowed(env):
    (env / "empty.toml").write_text("")
    victim = created(env / "victim.db")
    assert run_main("--store", str(victim), *ALTER)[0] == 0
    before = digest(victim)
    refused = (
        f"{env / 'empty.toml'} holds no quotas: --prune would remove every quota of the target. "
        "Nothing changed; add --allow-empty-source if that is what you want\n"
    )
    assert run_main("apply", str(env / "empty.toml"), "--prune", "--yes", "--store", str(victim)) == (1, "", refused)
    SqliteStore(env / "empty.db").close()
    code, _, err = run_main(
        "migrate", "--from", f"sqlite://{env / 'empty.db'}", "--to", f"sqlite://{victim}", "--prune", "--yes"
    )
    assert code == 1 and err.startswith(f"sqlite://{env / 'empty.db'} holds no quotas: --prune would remove")
    assert digest(victim) == before
    assert (
        run_main("apply", str(env / "empty.toml"), "--prune", "--yes", "--allow-empty-source", "--store", str(victim))[
            0
        ]
        == 0
    )
    assert stored(victim) == {}


def test_removing_quotas_without_a_terminal_needs_yes(env):
    (env / "one.toml").write_text('[[quota]]\nentity = { user = "u2" }\nproducer_byte_rate = 5\n')
    victim = created(env / "victim.db")
    assert run_main("--store", str(victim), *ALTER)[0] == 0
    before = digest(victim)
    code, out, err = run_main("apply", str(env / "one.toml"), "--prune", "--store", str(victim))
    assert (code, out) == (1, "")
    assert err == (
        f"apply {env / 'one.toml'} --prune would remove quotas of 1 entity: nothing changed; "
        "re-run with --yes to confirm (--dry-run lists them)\n"
    )
    assert digest(victim) == before
    assert run_main("apply", str(env / "one.toml"), "--store", str(victim))[0] == 0  # no prune: adds only, no question
    assert run_main("apply", str(env / "one.toml"), "--prune", "--yes", "--store", str(victim))[0] == 0
    assert stored(victim) == {"users/u2": {"producer_byte_rate": "5"}}


def test_delete_without_a_terminal_needs_yes(env):
    victim = created(env / "victim.db")
    assert run_main("--store", str(victim), *ALTER)[0] == 0
    assert run_main("alter", "--user", "u1", "--set", "consumer_byte_rate=7", "--store", str(victim))[0] == 0
    before = digest(victim)
    assert run_main("delete", "--user", "u1", "--store", str(victim)) == (
        1,
        "",
        "delete would remove 2 keys of user-principal 'u1' (producer_byte_rate, consumer_byte_rate): "
        "nothing changed; re-run with --yes to confirm\n",
    )
    assert run_main("delete", "--user", "u1", "--key", "consumer_byte_rate", "--store", str(victim)) == (
        1,
        "",
        "delete would remove 1 key of user-principal 'u1' (consumer_byte_rate): "
        "nothing changed; re-run with --yes to confirm\n",
    )
    assert digest(victim) == before
    assert run_main("delete", "--user", "u1", "--key", "consumer_byte_rate", "-y", "--store", str(victim))[0] == 0
    assert stored(victim) == {"users/u1": {"producer_byte_rate": "1"}}


def _delete_on_a_terminal(victim: Path, answer: str) -> tuple[int, str, str]:
    """``kconfigs delete --user u1`` with a terminal (a pty) as its stdin, answering ``answer``."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kconfigs", "delete", "--user", "u1", "--store", str(victim)],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.write(master, answer.encode() + b"\n")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    return proc.returncode, out, err


def test_delete_on_a_terminal_shows_the_keys_and_asks(env):
    victim = created(env / "victim.db")
    assert run_main("--store", str(victim), *ALTER)[0] == 0
    before = digest(victim)
    question = "- user-principal 'u1'\n    - producer_byte_rate\ndelete: remove 1 key of user-principal 'u1'? [y/N]: "
    assert _delete_on_a_terminal(victim, "n") == (1, "", question + "Nothing changed.\n")
    assert _delete_on_a_terminal(victim, "") == (1, "", question + "Nothing changed.\n")  # the default is no
    assert digest(victim) == before
    assert _delete_on_a_terminal(victim, "y") == (
        0,
        "Completed updating config for entity: user-principal 'u1'.\n",
        question,
    )
    assert stored(victim) == {}


def test_delete_keeps_a_users_scram_credentials(env):
    """Deleting a user's quotas must not lock the user out: the credentials share the user's
    entry (its znode on ZooKeeper) but are not quotas."""
    victim = created(env / "victim.db")
    add = "SCRAM-SHA-256=[password=pw],producer_byte_rate=5"
    assert run_main("--store", str(victim), "--alter", "--user", "u1", "--add-config", add)[0] == 0
    credential = stored(victim)["users/u1"]["SCRAM-SHA-256"]
    assert run_main("delete", "--user", "u1", "--yes", "--store", str(victim))[0] == 0
    assert stored(victim) == {"users/u1": {"SCRAM-SHA-256": credential}}
    assert run_main("delete", "--user", "u1", "--yes", "--store", str(victim)) == (
        1,
        "",
        "user-principal 'u1' has no quotas: nothing deleted\n",
    )
    described = run_main("describe", "--user", "u1", "--store", str(victim), "-o", "text", "--show-secrets")
    assert described == (0, f"Configs for user-principal 'u1' are SCRAM-SHA-256={credential}\n", "")  # as kafka-configs
    assert run_main("describe", "--store", str(victim), "-o", "json") == (0, "[]\n", "")  # no quotas to list
    assert run_main("delete", "--user", "u1", "--key", "SCRAM-SHA-256", "--yes", "--store", str(victim))[0] == 0
    assert stored(victim) == {}


def test_delete_of_a_mistyped_key_names_the_closest(env):
    victim = created(env / "victim.db")
    assert run_main("--store", str(victim), *ALTER)[0] == 0
    before = digest(victim)
    code, out, err = run_main("delete", "--user", "u1", "--key", "producr_byte_rate", "--yes", "--store", str(victim))
    assert (code, out) == (1, "")
    assert err.startswith(
        "Unknown quota key 'producr_byte_rate' for user-principal 'u1'. Did you mean producer_byte_rate?"
    )
    assert digest(victim) == before


def test_migrate_overwriting_a_store_with_quotas_needs_yes(env):
    source, target = created(env / "source.db"), created(env / "target.db")
    assert run_main("--store", str(source), "--alter", "--user", "u1", "--add-config", "producer_byte_rate=9")[0] == 0
    assert run_main("--store", str(target), *ALTER)[0] == 0
    before = digest(target)
    code, _, err = run_main("migrate", "--from", f"sqlite://{source}", "--to", f"sqlite://{target}")
    assert code == 1 and err.startswith(f"migrate to sqlite://{target} would remove or overwrite quotas of 1 entity")
    assert digest(target) == before
    assert run_main("migrate", "--from", f"sqlite://{source}", "--to", f"sqlite://{target}", "--yes")[0] == 0
    assert stored(target) == {"users/u1": {"producer_byte_rate": "9"}}
    fresh = created(env / "fresh.db")  # onto an empty store nothing is lost: no question
    assert run_main("migrate", "--from", f"sqlite://{source}", "--to", f"sqlite://{fresh}")[0] == 0


@pytest.mark.parametrize(
    "argv",
    [
        ("--alter", "--entity-type", "users", "--entity-name", ".", "--add-config", "producer_byte_rate=1"),
        ("--alter", "--client", "..", "--add-config", "producer_byte_rate=1"),
        ("alter", "--user", ".", "--set", "producer_byte_rate=1"),
    ],
)
def test_the_embedded_store_refuses_dot_names_as_zookeeper_does(env, argv):
    code, out, err = run_main(*argv)
    name = "users/." if "." in argv and "--client" not in argv else "clients/.."
    at = len("/config/") + len(name) - 1
    assert (code, out, err) == (
        1,
        "",
        f'Invalid path string "/config/{name}" caused by relative paths not allowed @{at}\n',
    )
    assert not default_store(env).exists() or stored(default_store(env)) == {}


def test_subcommands_take_the_kafka_configs_entity_options(env):
    assert (
        run_main(
            "alter",
            "--entity-type",
            "clients",
            "--entity-default",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--set",
            "producer_byte_rate=5",
        )[0]
        == 0
    )
    assert run_main("alter", "--client", "app", "--set", "consumer_byte_rate=6")[0] == 0
    assert run_main("alter", "--user-defaults", "--set", "request_percentage=50")[0] == 0
    assert run_main("alter", "--ip-defaults", "--set", "connection_creation_rate=7")[0] == 0
    assert run_main("alter", "--client-defaults", "--set", "producer_byte_rate=8,consumer_byte_rate=9")[0] == 0
    assert run_main("alter", "--client-defaults", "--delete-config", "producer_byte_rate, consumer_byte_rate")[0] == 0
    assert stored(default_store(env)) == {
        "users/alice/clients/<default>": {"producer_byte_rate": "5"},
        "clients/app": {"consumer_byte_rate": "6"},
        "users/<default>": {"request_percentage": "50"},
        "ips/<default>": {"connection_creation_rate": "7"},
    }
    assert run_main(
        "describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "-o", "text"
    ) == (0, "Configs for user-principal 'alice', default client-id are producer_byte_rate=5\n", "")
    assert run_main("describe", "--entity-type", "clients", "-o", "text") == (
        0,
        "Configs for client-id 'app' are consumer_byte_rate=6\n",
        "",
    )
    assert run_main("describe", "--entity-type", "users", "--user", "x") == (
        1,
        "",
        "--entity-{type,name,default} should not be used in conjunction with specific entity flags\n",
    )


_EMPTY_NAMES = {
    "--user": "--user is empty: name the entity, or use --user-default for the default",
    "--client": "--client is empty: name the entity, or use --client-default for the default",
    "--client-id": "--client is empty: name the entity, or use --client-default for the default",
    "--ip": "--ip is empty: name the entity, or use --ip-default for the default",
    "--entity-name": "--entity-name is empty: name the entity, or use --entity-default for the default",
}
_SUBCOMMANDS = {
    "describe": ("describe",),
    "delete": ("delete", "--yes"),
    "alter": ("alter", "--set", "producer_byte_rate=9"),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    command=st.sampled_from(sorted(_SUBCOMMANDS)),
    flag=st.sampled_from(sorted(_EMPTY_NAMES)),
    joined=st.booleans(),
    blank_first=st.booleans(),
)
def test_an_empty_entity_name_in_a_subcommand_is_refused_not_read_as_the_default(
    env, command, flag, joined, blank_first
):
    """kafka-configs reads an empty name as the default entity; kconfigs' own commands refuse it,
    so an unset shell variable ("--user $U") never reaches, or with delete wipes, the defaults."""
    if not default_store(env).exists():
        assert run_main("alter", "--user-default", "--set", "producer_byte_rate=1")[0] == 0
        assert run_main("alter", "--client-default", "--set", "producer_byte_rate=2")[0] == 0
        assert run_main("alter", "--user-default", "--client-default", "--set", "producer_byte_rate=3")[0] == 0
    before = stored(default_store(env))
    empty = [f"{flag}="] if joined else [flag, ""]
    if flag == "--entity-name":
        entity = ["--entity-type", "users", *empty] if blank_first else [*empty, "--entity-type", "users"]
    else:
        other = "--user-default" if flag in ("--client", "--client-id") else "--client-default"
        entity = [*empty, other] if blank_first else [other, *empty]
        if flag == "--ip":
            entity = empty
    code, out, err = run_main(*_SUBCOMMANDS[command], *entity)
    assert (code, out, err) == (1, "", _EMPTY_NAMES[flag] + "\n")
    assert stored(default_store(env)) == before


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ("alter", "--client", "c", "--set", "producer_byte_rat=5"),
            "Unknown quota key 'producer_byte_rat' for client-id 'c'. Did you mean producer_byte_rate? Valid keys: "
            "producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate",
        ),
        (
            ("alter", "--ip", "10.0.0.1", "--set", "connection_rate=5"),
            "Unknown quota key 'connection_rate' for ips '10.0.0.1'. Did you mean connection_creation_rate? "
            "Valid keys: connection_creation_rate",
        ),
        (
            ("alter", "--user", "u", "--add-config", "zzz=1"),
            "Unknown quota key 'zzz' for user-principal 'u'. Valid keys: producer_byte_rate, consumer_byte_rate, "
            "request_percentage, controller_mutation_rate, producer_ids_rate, SCRAM-SHA-256, SCRAM-SHA-512",
        ),
    ],
)
def test_an_unknown_key_in_a_subcommand_names_the_closest_and_the_valid_keys(env, argv, message):
    assert run_main(*argv) == (1, "", message + "\n")
    assert not (env / "home").exists()


def test_top_level_help_names_the_kafka_configs_flags(env):
    code, out, _ = run_main("--help")
    assert code == 0
    for flag in (
        "--zookeeper",
        "--bootstrap-server",
        "--alter",
        "--describe",
        "--entity-type",
        "--entity-name",
        "--entity-default",
        "--add-config",
        "--delete-config",
        "--user-defaults",
        "--client-defaults",
    ):
        assert flag in out, flag


@pytest.mark.parametrize(
    "text, message",
    [
        ('default_profil = "prod"\n', "unknown key 'default_profil' (valid: default_profile, profiles)"),
        ('[profile.prod]\nstore = "p.db"\n', "unknown key 'profile' (valid: default_profile, profiles)"),
        ("default_profile = 3\n", "default_profile must be a string"),
        ('profiles = "prod"\n', "profiles must be a table"),
    ],
)
@pytest.mark.parametrize("argv", [("describe",), ALTER, ("export",)])
def test_a_mistyped_config_file_key_is_an_error_not_the_default_store(env, text, message, argv):
    """'default_profil' was ignored: every command used the embedded store instead of the
    profile's, and an alter wrote there."""
    write_profiles(env, text)
    path = env / "config" / "kconfigs" / "config.toml"
    assert run_main(*argv) == (1, "", f"{path}: {message}\n")
    assert not default_store(env).exists()


@pytest.mark.parametrize(
    "argv",
    [
        ("--set", "producer_byte_rate=1,producer_byte_rate=2"),
        ("--set", "producer_byte_rate=1", "--set", "producer_byte_rate=2"),
        ("--add-config", "producer_byte_rate=1", "--set", "producer_byte_rate=2"),
    ],
)
def test_a_key_set_twice_to_different_values_is_refused_in_a_subcommand(env, argv):
    """Which one was meant? The last one was written (kafka-configs' grammar keeps doing that)."""
    assert run_main("alter", "--user", "u", *argv) == (
        1,
        "",
        "producer_byte_rate is given twice (1, then 2): give it once\n",
    )
    assert not default_store(env).exists()
    assert run_main("alter", "--user", "u", "--set", "producer_byte_rate=1", "--set", "producer_byte_rate=1")[0] == 0


def test_a_stored_value_that_is_not_a_number_is_shown_or_named_never_a_traceback(env):
    """A hand-edited znode or row (``producer_byte_rate=abc``): describe -o json/table was a
    ValueError traceback; they show the value as stored, as the text view does, and the commands
    that need a number name the entity and key in one line."""
    store = SqliteStore(default_store(env))
    store.alter(QuotaEntity(user="x"), lambda _c: {"producer_byte_rate": "abc", "consumer_byte_rate": "2048"})
    store.close()
    code, out, err = run_main("describe", "-o", "json")
    assert (code, err) == (0, "")
    assert json.loads(out) == [
        {"entity": {"user": "x"}, "quotas": {"producer_byte_rate": "abc", "consumer_byte_rate": 2048}}
    ]
    code, out, err = run_main("describe", "-o", "table")
    assert (code, err) == (0, "") and "abc" in out and "2,048" in out
    assert run_main("describe", "-o", "text") == (
        0,
        "Configs for user-principal 'x' are producer_byte_rate=abc,consumer_byte_rate=2048\n",
        "",
    )
    named = "Stored value 'abc' of producer_byte_rate for user-principal 'x' is not a number\n"
    for argv in (("export",), ("resolve", "--user", "x", "--client-id", "c")):
        assert run_main(*argv) == (1, "", named), argv


def test_a_describe_shows_no_scram_salt_or_key_unless_asked(env):
    """``kconfigs describe | cat`` printed users' SCRAM salts and keys into CI logs: enough for
    an offline guess of the password. Without a terminal (the default text view) and with
    ``-o text`` they are <hidden>; ``--show-secrets`` prints them; table and JSON leave them out."""
    add = "SCRAM-SHA-512=[password=pw],producer_byte_rate=5"
    assert run_main("--alter", "--user", "u1", "--add-config", add)[0] == 0
    credential = stored(default_store(env))["users/u1"]["SCRAM-SHA-512"]
    assert "salt=" in credential and "stored_key=" in credential
    hidden = (0, "Configs for user-principal 'u1' are SCRAM-SHA-512=<hidden>,producer_byte_rate=5\n", "")
    assert run_main("describe") == hidden  # stdout is no terminal here
    assert run_main("describe", "--user", "u1", "-o", "text") == hidden
    shown = run_main("describe", "-o", "text", "--show-secrets")
    assert shown == (0, f"Configs for user-principal 'u1' are SCRAM-SHA-512={credential},producer_byte_rate=5\n", "")
    code, out, _ = run_main("describe", "-o", "json")
    assert code == 0 and json.loads(out) == [{"entity": {"user": "u1"}, "quotas": {"producer_byte_rate": 5}}]


def test_migrate_resolves_profile_stores_the_same_explicit_way(env, monkeypatch):
    """``migrate --from/--to`` name stores by spec or profile: the same refusals as every command."""
    source = f"sqlite://{created(env / 'source.db')}"
    path = env / "config" / "kconfigs" / "config.toml"
    assert run_main("migrate", "--from", source, "--to", "prod") == (
        1,
        "",
        f"No profile 'prod': the config file {path} does not exist\n",
    )
    write_profiles(env, '[profiles.creds]\nzk_auth = "u:p"\n')
    assert run_main("migrate", "--from", "creds", "--to", source) == (
        1,
        "",
        f"Profile 'creds' in {path} names no store: give it zookeeper, bootstrap_server, "
        "bootstrap_controller or store\n",
    )
    monkeypatch.setenv("KCONFIGS_CONFIG", str(env / "nonexistent.toml"))
    assert run_main("migrate", "--from", source, "--to", f"sqlite://{env / 'x.db'}") == (
        1,
        "",
        f"KCONFIGS_CONFIG names {env / 'nonexistent.toml'}, which does not exist\n",
    )
    assert not (env / "x.db").exists() and not (env / "home").exists()
