"""Quotas as code on a real KRaft broker (Kafka 4.x) through the admin-API store.

The broker is shared by the whole session, so every name here carries a per-test token and no
default entity is touched (other tests' clients would be throttled by it).
"""

from __future__ import annotations

import time
import uuid

import pytest

from harness.cli import created_store, run_main
from kconfigs.quotafile import parse_quota_text, render_quota_text


def _quotas(token: str) -> str:
    return f"""\
[[quota]]
entity = {{ user = "CN={token},OU=x" }}
consumer_byte_rate = 2097152
producer_byte_rate = 1048576

[[quota]]
entity = {{ user = "{token}", client-id = "a*b-{token}" }}
controller_mutation_rate = 10.5

[[quota]]
entity = {{ user = "{token} space", client-id = {{ default = true }} }}
request_percentage = 200.0

[[quota]]
entity = {{ client-id = "über-{token}" }}
consumer_byte_rate = 5
"""


def _mine(text: str, token: str) -> str:
    """The entries of an export whose names carry ``token``, rendered again."""
    entries = [
        d
        for d in parse_quota_text(text)
        if any(isinstance(v, str) and token in v for v in d.entity.components().values())
    ]
    return render_quota_text(entries)


def _export_eventually(bootstrap: str, token: str, expected: str, timeout_s: float = 20.0) -> str:
    """Brokers answer describes from their metadata image, a moment behind the controller."""
    deadline = time.monotonic() + timeout_s
    while True:
        code, out, err = run_main("export", "--bootstrap-server", bootstrap)
        assert code == 0, err
        if _mine(out, token) == expected or time.monotonic() > deadline:
            return _mine(out, token)
        time.sleep(0.2)


@pytest.fixture
def token(isolated_env) -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def test_export_apply_export_is_identity_on_kraft(kraft_broker, token, tmp_path):
    quotas = _quotas(token)
    (tmp_path / "q.toml").write_text(quotas)
    assert run_main("apply", str(tmp_path / "q.toml"), "--bootstrap-server", kraft_broker.bootstrap)[0] == 0
    exported = _export_eventually(kraft_broker.bootstrap, token, quotas)
    assert exported == quotas
    (tmp_path / "exported.toml").write_text(exported)
    code, out, _ = run_main("apply", str(tmp_path / "exported.toml"), "--bootstrap-server", kraft_broker.bootstrap)
    # other tests' quotas on the shared broker are "kept (use --prune to remove)": only ours count
    assert code == 0 and out.startswith("In sync: no changes.")


def test_migrate_embedded_to_kraft_and_back_verifies(kraft_broker, token, tmp_path):
    quotas = _quotas(token)
    (tmp_path / "q.toml").write_text(quotas)
    run_main("apply", str(tmp_path / "q.toml"), "--store", str(created_store(tmp_path / "src.db")))
    created_store(tmp_path / "dst.db")
    kafka = f"kafka://{kraft_broker.bootstrap}"
    code, _, err = run_main("migrate", "--from", f"sqlite://{tmp_path / 'src.db'}", "--to", kafka)
    assert code == 0, err
    assert _export_eventually(kraft_broker.bootstrap, token, quotas) == quotas
    code, _, err = run_main("migrate", "--from", kafka, "--to", f"sqlite://{tmp_path / 'dst.db'}")
    assert code == 0, err
    assert _mine(run_main("export", "--store", str(tmp_path / "dst.db"))[1], token) == quotas


def test_dry_run_on_kraft_is_validated_by_the_broker_and_writes_nothing(kraft_broker, token, tmp_path):
    good = f'[[quota]]\nentity = {{ user = "{token}" }}\nproducer_byte_rate = 1024\n'
    (tmp_path / "good.toml").write_text(good)
    code, out, err = run_main(
        "apply", str(tmp_path / "good.toml"), "--bootstrap-server", kraft_broker.bootstrap, "--dry-run"
    )
    assert code == 0, err
    assert out.startswith(f"+ user-principal '{token}'\n")
    # producer_ids_rate (KIP-936) passes kconfigs' file check but Kafka 4.x does not know the key
    (tmp_path / "kip936.toml").write_text(f'[[quota]]\nentity = {{ user = "{token}" }}\nproducer_ids_rate = 5.0\n')
    code, out, err = run_main(
        "apply", str(tmp_path / "kip936.toml"), "--bootstrap-server", kraft_broker.bootstrap, "--dry-run"
    )
    assert code == 1 and out == ""
    assert "producer_ids_rate" in err and len(err.splitlines()) == 1  # the broker's own refusal
    assert _mine(run_main("export", "--bootstrap-server", kraft_broker.bootstrap)[1], token) == ""


def test_migrate_zookeeper_to_kraft(kraft_broker, zk_connect, token, tmp_path):
    quotas = _quotas(token)
    (tmp_path / "q.toml").write_text(quotas)
    assert run_main("apply", str(tmp_path / "q.toml"), "--zookeeper", zk_connect)[0] == 0
    code, out, err = run_main(
        "migrate", "--from", f"zk://{zk_connect}", "--to", f"kafka://{kraft_broker.bootstrap}", "-o", "json"
    )
    assert code == 0, err
    assert '"complete": true' in out
    assert _export_eventually(kraft_broker.bootstrap, token, quotas) == quotas


def test_an_alter_dry_run_in_the_kafka_configs_grammar_says_it_wrote_nothing(kraft_broker, token):
    """It printed kafka-configs' "Completed updating config" alone, claiming a write that did not happen."""
    code, out, err = run_main(
        "--bootstrap-server", kraft_broker.bootstrap, "--alter", "--dry-run",
        "--entity-type", "clients", "--entity-name", token, "--add-config", "producer_byte_rate=5",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out == f"Dry run OK, nothing written: Completed updating config for client {token}.\n"
    assert _mine(run_main("export", "--bootstrap-server", kraft_broker.bootstrap)[1], token) == ""


def _describe_eventually(bootstrap: str, user: str, wanted: str, timeout_s: float = 20.0) -> tuple[int, str, str]:
    deadline = time.monotonic() + timeout_s
    while True:
        result = run_main("describe", "--user", user, "--bootstrap-server", bootstrap, "-o", "text")
        if wanted in result[1] or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


@pytest.mark.parametrize("key, value", [("consumer_byte_rate", "NaN"), ("request_percentage", "Infinity")])
def test_a_nan_or_infinity_the_cluster_holds_is_shown_as_stored_and_refused_where_it_cannot_go(
    kraft_broker, token, tmp_path, key, value
):
    """A KRaft controller accepts ``consumer_byte_rate=NaN`` and ``request_percentage=Infinity``.
    They broke export, resolve and migrate with no hint, and ``describe -o json`` wrote "NaN" as
    a string. Now the text view shows them as stored; JSON, export, resolve and migrate refuse
    them in one line naming the entity and key; migrate writes nothing."""
    bootstrap = kraft_broker.bootstrap
    added = run_main("--bootstrap-server", bootstrap, "--alter", "--user", token, "--add-config", f"{key}={value}")
    assert added[0] == 0, added  # the drop-in grammar leaves the check to the cluster, as kafka-configs does
    try:
        assert _describe_eventually(bootstrap, token, value) == (
            0,
            f"Configs for user-principal '{token}' are {key}={value}\n",
            "",
        )
        assert run_main("describe", "--user", token, "--bootstrap-server", bootstrap, "-o", "json") == (
            1,
            "",
            f"{key} of user-principal '{token}' is {value}, which JSON cannot hold (-o text shows it as stored)\n",
        )
        refused = f"Stored value '{value}' of {key} for user-principal '{token}' is not a number\n"
        assert run_main("export", "--bootstrap-server", bootstrap) == (1, "", refused)
        assert run_main("resolve", "--user", token, "--client-id", "c", "--bootstrap-server", bootstrap) == (
            1,
            "",
            refused,
        )
        target = created_store(tmp_path / "target.db")
        before = target.read_bytes()
        migrated = run_main("migrate", "--from", f"kafka://{bootstrap}", "--to", f"sqlite://{target}", "--yes")
        assert migrated == (1, "", refused) and target.read_bytes() == before
    finally:
        assert run_main("delete", "--user", token, "--yes", "--bootstrap-server", bootstrap)[0] == 0
