"""What a describe, an alter and a Tab press load: scripts run them thousands of times, so each
module imported for a feature the command line did not ask for is paid on every call.

Each case runs the command in a fresh interpreter and lists the modules that really loaded
(kazoo's TLS and SASL imports stand in unexecuted until used: kconfigs.stores.kazoo_client). The
positive cases show the check sees a module that a command line does ask for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

#: run kconfigs' entry point as the console script does, then write the modules that loaded
_DRIVER = r"""
import json, os, sys
from kconfigs.__main__ import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
loaded = sorted(n for n, m in sys.modules.items() if type(m).__name__ != "_ImportedOnFirstUse")
with open(os.environ["LOADED_MODULES_FILE"], "w") as out:
    json.dump(loaded, out)
"""

#: modules no plain ZooKeeper or embedded-store describe/alter needs (TLS, SASL/JAAS, SCRAM,
#: TOML, the admin client and kafka-python, bulk ZooKeeper writes, rich, Spark, the gateway)
NOT_NEEDED = (
    "ssl",
    "_ssl",
    "tomllib",
    "puresasl.client",
    "kafka",
    "kconfigs.kafka_admin",
    "kconfigs.stores.admin_api",
    "kconfigs.stores.zk_bulk",
    "kconfigs.stores.zk_sasl",
    "kconfigs.scram",
    "kconfigs.quotafile",
    "kconfigs.ip_names",  # none of the cases names an ip
    "decimal",  # nor prints a double
    "yaml",
    "cryptography",
    "rich",
    "pyspark",
    "kconfigs_analysis",
    "kconfigs_enforcement",
)
#: and the embedded store needs no ZooKeeper client either
NOT_NEEDED_EMBEDDED = NOT_NEEDED + ("kazoo",)
#: a Tab press lists names (the subcommands' own modules may load for their help): it opens no
#: store and loads no client, enforcement core or data library
NOT_NEEDED_TO_COMPLETE = tuple(n for n in NOT_NEEDED_EMBEDDED if not n.startswith("kconfigs_")) + (
    "sqlite3",
    "kconfigs.stores.sqlite",
    "kconfigs.stores.zookeeper",
    "kconfigs_enforcement.replay",
    "kconfigs_enforcement.gateway",
    "kconfigs_enforcement._native",
    "numpy",
    "pandas",
    "pyarrow",
)


def loaded_modules(argv: list[str], tmp_path, env: dict[str, str] | None = None) -> set[str]:
    listing = tmp_path / f"loaded-{len(list(tmp_path.iterdir()))}.json"
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_") and k != "KAFKA_OPTS"}
    run_env |= {
        "KCONFIGS_HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "no-config"),
        "LOADED_MODULES_FILE": str(listing),
    }
    run_env |= env or {}
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, *argv], env=run_env, capture_output=True, text=True, timeout=60
    )
    assert listing.exists(), done.stderr
    return set(json.loads(listing.read_text()))


def unwanted(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == n or m.startswith(n + ".") for n in names))


def _completion_env(words: str) -> dict[str, str]:
    return {"_KCONFIGS_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()))}


EMBEDDED_CASES = {
    "compat describe": ["--describe", "--user", "alice"],
    "compat alter": ["--alter", "--user", "alice", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048"],
    "compat delete-config": ["--alter", "--user", "alice", "--delete-config", "consumer_byte_rate"],
    "describe subcommand": ["describe", "--user", "alice"],
    "alter subcommand": ["alter", "--user", "alice", "--set", "producer_byte_rate=4096"],
}


@pytest.mark.parametrize("argv", EMBEDDED_CASES.values(), ids=EMBEDDED_CASES.keys())
def test_embedded_store_commands_load_only_what_they_use(argv, tmp_path):
    loaded = loaded_modules(argv, tmp_path)
    assert "kconfigs.stores.sqlite" in loaded  # the command ran as far as its store
    assert unwanted(loaded, NOT_NEEDED_EMBEDDED) == []


ZK_CASES = {
    "compat describe": ["--describe", "--user", "alice"],
    "compat alter": ["--alter", "--user", "alice", "--add-config", "producer_byte_rate=1024"],
    "compat describe all users": ["--describe", "--entity-type", "users"],
    "describe subcommand": ["describe", "--user", "alice"],
    "alter subcommand": ["alter", "--user", "alice", "--set", "producer_byte_rate=2048"],
}


@pytest.mark.integration
@pytest.mark.parametrize("argv", ZK_CASES.values(), ids=ZK_CASES.keys())
def test_zookeeper_commands_load_only_what_they_use(argv, zk_connect, tmp_path):
    if argv[0].startswith("-"):
        argv = ["--zookeeper", zk_connect, *argv]
    else:
        argv = [argv[0], "--zookeeper", zk_connect, *argv[1:]]
    loaded = loaded_modules(argv, tmp_path)
    assert "kazoo.client" in loaded
    assert unwanted(loaded, NOT_NEEDED) == []


COMPLETION_CASES = {
    "subcommand names": "kconfigs de",
    "subcommand options": "kconfigs describe --us",
    "compat options": "kconfigs --describe --entity-t",
}


@pytest.mark.parametrize("words", COMPLETION_CASES.values(), ids=COMPLETION_CASES.keys())
def test_completion_loads_no_store_or_client_code(words, tmp_path):
    loaded = loaded_modules([], tmp_path, _completion_env(words))
    assert unwanted(loaded, NOT_NEEDED_TO_COMPLETE) == []


def test_a_profile_file_loads_the_toml_reader(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[profiles.local]\nstore = "%s"\n' % (tmp_path / "p.db"))
    loaded = loaded_modules(["--describe", "--user", "alice"], tmp_path, {"KCONFIGS_CONFIG": str(config)})
    assert "tomllib" in loaded


@pytest.mark.integration
def test_a_jaas_file_in_kafka_opts_loads_the_jaas_reader(zk_connect, tmp_path):
    jaas = tmp_path / "jaas.conf"  # a login module kconfigs refuses: read and rejected, no connection
    jaas.write_text("Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };")
    opts = {"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"}
    loaded = loaded_modules(["--zookeeper", zk_connect, "--describe", "--user", "alice"], tmp_path, opts)
    assert {"kconfigs.stores.zk_sasl", "kconfigs.kafka_admin.jaas"} <= loaded
