"""Compat mode through the CLI on the embedded store: exact output and exit code, then the state
re-read through the Store (ConfigCommandTest cases of spec §8 that need a store)."""

from __future__ import annotations

import pytest
from compat_support import run_kconfigs

from kconfigs.model import DEFAULT, MATCH_ALL, QuotaEntity
from kconfigs.stores.sqlite import SqliteStore


@pytest.fixture
def db(tmp_path):
    SqliteStore(tmp_path / "quotas.db").close()  # a named store must exist: kconfigs init creates one
    return tmp_path / "quotas.db"


def kc(db, *args):
    return run_kconfigs(["--store", str(db), *args])


def stored(db):
    store = SqliteStore(db)
    try:
        return {r.entity: dict(r.configs) for r in store.describe(MATCH_ALL)}
    finally:
        store.close()


def test_alter_and_describe_lines_are_kafkas(db):
    out = kc(
        db,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "user1",
        "--entity-type",
        "clients",
        "--entity-name",
        "clientA",
        "--add-config",
        "producer_byte_rate=1024,consumer_byte_rate=2048",
    )
    assert (out.rc, out.stdout, out.stderr) == (
        0,
        ["Completed updating config for entity: user-principal 'user1', client-id 'clientA'."],
        "",
    )
    out = kc(db, "--describe", "--user", "user1", "--client", "clientA")
    assert out.stdout == [
        "Configs for user-principal 'user1', client-id 'clientA' are producer_byte_rate=1024,consumer_byte_rate=2048"
    ]
    assert stored(db) == {
        QuotaEntity(user="user1", client_id="clientA"): {"producer_byte_rate": "1024", "consumer_byte_rate": "2048"}
    }


def test_bracketed_values_and_empty_values_are_stored_as_parsed(db):
    # ConfigCommandTest: a=b,c=[d,e ,f],g=[h,i] -- but only known quota keys are valid here.
    out = kc(db, "--alter", "--user", "u", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=abc, def]")
    assert out.rc == 0
    (configs,) = stored(db).values()
    assert configs["SCRAM-SHA-256"].endswith(",iterations=8192") and "abc" not in configs["SCRAM-SHA-256"]


def test_scram_delete_shrinks_the_key_set(db):
    kc(
        db,
        "--alter",
        "--user",
        "userB",
        "--add-config",
        "SCRAM-SHA-256=[iterations=4096,password=abc, def],SCRAM-SHA-512=[password=1234=abc]",
    )
    assert set(stored(db)[QuotaEntity(user="userB")]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert kc(db, "--alter", "--user", "userB", "--delete-config", "SCRAM-SHA-256").rc == 0
    assert set(stored(db)[QuotaEntity(user="userB")]) == {"SCRAM-SHA-512"}
    assert kc(db, "--alter", "--user", "userB", "--delete-config", "SCRAM-SHA-512").rc == 0
    assert QuotaEntity(user="userB") not in stored(db)


def test_producer_ids_rate_is_accepted_for_users_and_refused_elsewhere(db):
    assert kc(db, "--alter", "--user-defaults", "--add-config", "producer_ids_rate=10").rc == 0
    out = kc(db, "--alter", "--client", "c", "--add-config", "producer_ids_rate=10")
    assert (out.rc, out.error) == (1, "requirement failed: Unknown Dynamic Configuration: HashSet(producer_ids_rate).")
    assert stored(db) == {QuotaEntity(user=DEFAULT): {"producer_ids_rate": "10"}}


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--alter", "--user", "u", "--add-config", "producer_byte_rate=-1"],
            "Invalid value -1 for configuration producer_byte_rate: Value must be at least 0",
        ),
        (
            ["--alter", "--user", "u", "--add-config", "request_percentage=NaN"],
            "Invalid value NaN for configuration request_percentage: must be a finite number",
        ),
        (
            ["--alter", "--ip", "localhost", "--add-config", "connection_creation_rate=1"],
            "The entity name for ips must be a valid IP or resolvable host, but it is: localhost (a host name: "
            "kconfigs takes IP literals unless --resolve-hostnames is given)",
        ),
        (
            ["--alter", "--user", "u", "--add-config", ""],
            'requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".',
        ),
        (
            ["--alter", "--user", "u", "--add-config-file", "/nonexistent/x.properties"],
            "Cannot read --add-config-file /nonexistent/x.properties: No such file or directory",
        ),
        (
            ["--describe", "--entity-type", "topics"],
            "kconfigs manages client quotas only (users, clients, ips); use kafka-configs.sh for topics",
        ),
    ],
)
def test_bad_input_is_one_line_exit_1_and_nothing_written(db, args, message):
    kc(db, "--alter", "--user", "keep", "--add-config", "producer_byte_rate=1")
    before = db.read_bytes()
    out = kc(db, *args)
    assert (out.rc, out.error, out.stdout) == (1, message, [])
    assert len(out.stderr.strip().splitlines()) == 1
    assert db.read_bytes() == before


def test_resolve_hostnames_is_opt_in(db):
    out = kc(db, "--resolve-hostnames", "--alter", "--ip", "localhost", "--add-config", "connection_creation_rate=2")
    assert out.stdout == ["Completed updating config for entity: ips 'localhost'."]
    assert stored(db) == {QuotaEntity(ip="localhost"): {"connection_creation_rate": "2"}}


def test_action_errors_print_kafkas_usage(db):
    out = kc(db, "--entity-type", "users")
    assert out.rc == 1 and out.error == "Command must include exactly one action: --describe, --alter"
    assert "--add-config" in out.stderr and "--entity-type" in out.stderr


def test_dry_run_validates_without_writing(db):
    out = kc(db, "--alter", "--dry-run", "--user", "u", "--add-config", "producer_byte_rate=5")
    assert out.rc == 0 and stored(db) == {}
    # kafka-configs' "Completed updating" alone would claim a write that did not happen
    assert out.stdout == ["Dry run OK, nothing written: Completed updating config for entity: user-principal 'u'."]
