"""Shell completion: committed scripts are current; TAB offers types, keys, profiles and names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import created_store
from kconfigs.commands.completion import FILE_NAMES, completion_script

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("shell", sorted(FILE_NAMES))
def test_committed_completion_scripts_are_current(shell):
    committed = (REPO / "completions" / FILE_NAMES[shell]).read_text()
    assert committed == completion_script(shell), "run: kconfigs completion --write completions"


def _complete(words: str, env: dict | None = None) -> list[str]:
    """What bash would offer for the last word of ``words`` (Click's bash_complete protocol)."""
    parts = words.split(" ")
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_")}
    run_env.update(env or {}, _KCONFIGS_COMPLETE="bash_complete", COMP_WORDS=words, COMP_CWORD=str(len(parts) - 1))
    out = subprocess.run(
        [sys.executable, "-m", "kconfigs"], env=run_env, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return [line.split(",", 1)[1] for line in out.splitlines() if line.startswith("plain,")]


def test_entity_types_complete_on_export():
    assert _complete("kconfigs export --entity-type ") == ["clients", "ips", "users"]


def test_quota_keys_follow_the_entity_typed_so_far():
    assert _complete("kconfigs alter --ip 1.2.3.4 --set ") == ["connection_creation_rate="]
    assert _complete("kconfigs alter --user-default --client-id c --delete ") == [
        "producer_byte_rate",
        "consumer_byte_rate",
        "request_percentage",
        "controller_mutation_rate",
    ]
    assert _complete("kconfigs alter --user u --set producer_i") == ["producer_ids_rate="]


def test_profiles_complete_from_the_config_file(tmp_path):
    (tmp_path / "kconfigs").mkdir()
    (tmp_path / "kconfigs" / "config.toml").write_text(
        '[profiles.prod]\nzookeeper = "z:1"\n[profiles.dev]\nstore = "x"\n'
    )
    assert _complete("kconfigs describe --profile ", {"XDG_CONFIG_HOME": str(tmp_path)}) == ["dev", "prod"]


def test_entity_names_come_from_a_reachable_store(tmp_path):
    db = created_store(tmp_path / "q.db")
    for args in (["--user", "alice"], ["--user", "albert", "--client-id", "app"], ["--user-default"]):
        subprocess.run(
            [sys.executable, "-m", "kconfigs", "alter", *args, "--set", "producer_byte_rate=5", "--store", str(db)],
            check=True,
            capture_output=True,
            timeout=60,
        )
    assert _complete(f"kconfigs describe --store {db} --user al") == ["albert", "alice"]
    assert _complete("kconfigs describe --client-id ", {"KCONFIGS_STORE": str(db)}) == ["app"]


def test_no_names_and_no_store_file_created_when_the_store_is_absent(tmp_path):
    assert _complete(f"kconfigs describe --store {tmp_path / 'none.db'} --user ") == []
    assert not (tmp_path / "none.db").exists()
    assert _complete("kconfigs describe --zookeeper 127.0.0.1:1 --user ") == []
