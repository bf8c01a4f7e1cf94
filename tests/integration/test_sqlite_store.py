"""The embedded store through the CLI: where it lives, one-line errors for a bad file, and (a
hypothesis property) that an alter that fails leaves the store file byte-identical."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from compat_support import run_kconfigs
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.cli import created_store, run_main


def test_default_store_is_under_kconfigs_home_then_xdg(tmp_path):
    home = tmp_path / "home"
    out = run_kconfigs(
        ["--alter", "--user", "alice", "--add-config", "producer_byte_rate=1024"], env={"KCONFIGS_HOME": str(home)}
    )
    assert (out.rc, out.stdout) == (0, ["Completed updating config for entity: user-principal 'alice'."])
    assert (home / "quotas.db").is_file()
    unset = {k: v for k, v in os.environ.items() if k != "KCONFIGS_HOME"}  # unset, not empty: that is an error
    alter = subprocess.run(
        [sys.executable, "-m", "kconfigs", "--alter", "--client-defaults", "--add-config", "consumer_byte_rate=1"],
        env={**unset, "XDG_DATA_HOME": str(tmp_path / "xdg")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert alter.returncode == 0, alter.stderr
    assert (tmp_path / "xdg" / "kconfigs" / "quotas.db").is_file()
    out = run_kconfigs(["--describe", "--user", "alice"], env={"KCONFIGS_HOME": str(home)})
    assert out.stdout == ["Configs for user-principal 'alice' are producer_byte_rate=1024"]


def test_store_option_names_the_file_and_excludes_servers(tmp_path):
    db = created_store(tmp_path / "q.db")
    assert (
        run_kconfigs(
            ["--store", str(db), "--alter", "--ip", "1.2.3.4", "--add-config", "connection_creation_rate=5"]
        ).rc
        == 0
    )
    out = run_kconfigs(["--store", str(db), "--describe", "--entity-type", "ips"])
    assert out.stdout == ["Configs for ips '1.2.3.4' are connection_creation_rate=5"]
    out = run_kconfigs(["--store", str(db), "--zookeeper", "127.0.0.1:1", "--describe", "--user", "u"])
    assert out.rc == 1 and out.error.startswith("--store names the embedded store")


def test_a_file_that_is_not_a_database_is_one_line(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    out = run_kconfigs(["--store", str(bad), "--describe", "--entity-type", "users"])
    assert out.rc == 1 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert str(bad) in out.error
    assert bad.read_bytes() == b"this is not sqlite" * 100


def test_an_unusable_location_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = run_kconfigs(["--store", str(blocker / "sub" / "q.db"), "--describe", "--entity-type", "users"])
    assert out.rc == 1 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


ENTITY_ARGS = st.sampled_from(
    [
        ["--user", "alice"],
        ["--client", "app"],
        ["--user", "alice", "--client", "app"],
        ["--user-defaults"],
        ["--ip", "1.2.3.4"],
        ["--ip-defaults"],
        ["--client", "."],
    ]
)
ADD_PIECES = st.sampled_from(
    list("=,[] ab_.-019e")
    + [
        "producer_byte_rate",
        "consumer_byte_rate",
        "request_percentage",
        "connection_creation_rate",
        "producer_ids_rate",
        "SCRAM-SHA-256",
        "-1",
        "1.5",
        "NaN",
        "password",
        "iterations",
    ]
)
KEY = st.sampled_from(
    [
        "producer_byte_rate",
        "consumer_byte_rate",
        "request_percentage",
        "connection_creation_rate",
        "producer_ids_rate",
        "SCRAM-SHA-256",
        "foo",
    ]
)
VALUE = st.sampled_from(["1", "1024", "0", "-1", "1.5", "1e3", "NaN", "", "[password=x]", "[iterations=10,password=x]"])
ADD_TEXT = st.lists(ADD_PIECES, max_size=12).map("".join) | st.lists(
    st.tuples(KEY, VALUE).map("=".join), min_size=1, max_size=3
).map(",".join)
DELETE_TEXT = st.sampled_from(["", "producer_byte_rate", "consumer_byte_rate", "nosuch", "producer_byte_rate,nosuch"])


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(entity=ENTITY_ARGS, add=ADD_TEXT, delete=DELETE_TEXT)
def test_a_failing_alter_leaves_the_store_byte_identical(tmp_path, entity, add, delete):
    store_dir = tmp_path / "store"
    store_dir.mkdir(exist_ok=True)
    store = ["--store", str(store_dir / "q.db")]
    if not (store_dir / "q.db").exists():  # seed: something to lose
        created_store(store_dir / "q.db")
        for seed in (
            ["--user", "alice", "--add-config", "consumer_byte_rate=10"],
            ["--user", "alice", "--client", "app", "--add-config", "producer_byte_rate=5"],
            ["--ip", "1.2.3.4", "--add-config", "connection_creation_rate=3"],
        ):
            assert run_main(*store, "--alter", *seed)[0] == 0
    argv = (
        store
        + ["--alter", *entity]
        + (["--add-config", add] if add else [])
        + (["--delete-config", delete] if delete or not add else [])
    )
    before = _snapshot(store_dir)
    code, stdout, stderr = run_main(*argv)
    event(f"exit {code}")
    assert "Traceback" not in stderr
    if code == 0:
        assert stdout.startswith("Completed updating config for entity:")
        return
    assert code == 1 and stdout == ""
    assert len(stderr.strip().splitlines()) == 1 or stderr.startswith("Command must")
    assert _snapshot(store_dir) == before, (argv, stderr)
