"""``kconfigs serve`` start-up as an operator meets it: a taken port is one line (no traceback, no
start-up logs), an unreachable upstream is said at once and re-checked, the metrics are served on
``/metrics`` only, and an empty --zookeeper is refused like everywhere else."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kconfigs.stores.sqlite import SqliteStore
from tests.integration.gateway_support import free_port, wait_for_port


def _serve(*args: str, tmp_path, env: dict[str, str] | None = None) -> subprocess.Popen:
    SqliteStore(tmp_path / "q.db").close()  # an empty store: serve refuses one that does not exist
    return subprocess.Popen(
        [sys.executable, "-m", "kconfigs", "serve", "--store", str(tmp_path / "q.db"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.parametrize("which", ["--listen", "--metrics-listen"])
def test_a_port_in_use_is_one_line_and_exit_1(tmp_path, which):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        other = {"--listen": f"127.0.0.1:{free_port()}", "--metrics-listen": f"127.0.0.1:{free_port()}"}
        other[which] = f"127.0.0.1:{port}"
        proc = _serve("--upstream", "127.0.0.1:1", *[x for pair in other.items() for x in pair], tmp_path=tmp_path)
        out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (1, "", f"Cannot listen on 127.0.0.1:{port}: Address already in use\n")


def test_an_unreachable_upstream_is_reported_and_metrics_are_only_on_their_path(tmp_path):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        upstream = f"127.0.0.1:{closed.getsockname()[1]}"  # bound, not listening: refused
        port, metrics = free_port(), free_port()
        proc = _serve(
            "--upstream",
            upstream,
            "--listen",
            f"127.0.0.1:{port}",
            "--metrics-listen",
            f"127.0.0.1:{metrics}",
            tmp_path=tmp_path,
        )
        try:
            wait_for_port(port)
            wait_for_port(metrics)
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=10) as response:
                assert response.status == 200 and b"kconfigs_gateway_open_connections" in response.read()
            for path in ("/", "/metric", "/metrics/x", "/favicon.ico"):
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(f"http://127.0.0.1:{metrics}{path}", timeout=10)
                assert refused.value.code == 404, path
            time.sleep(0.5)
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    warnings = [line for line in err.splitlines() if "not reachable" in line]
    assert len(warnings) == 1 and f"upstream {upstream} not reachable (Connection refused)" in warnings[0], err
    assert "re-checking every 5 s" in warnings[0] and "Traceback" not in err


def test_an_empty_zookeeper_is_refused(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kconfigs",
            "serve",
            "--upstream",
            "127.0.0.1:1",
            "--zookeeper",
            "",
            "--listen",
            f"127.0.0.1:{free_port()}",
            "--metrics-listen",
            "",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert (proc.returncode, proc.stderr) == (1, "--zookeeper is empty: give a value or leave it out\n")


@pytest.mark.parametrize("named_by", ["flag", "config file", "environment"])
def test_a_named_store_that_does_not_exist_is_refused_not_served_empty(tmp_path, named_by):
    """A mistyped --store would otherwise start a gateway that enforces no quotas (and create the
    file); the store is named by the flag, the gateway's config file or KCONFIGS_STORE."""
    typo = tmp_path / "quotas.bd"
    config = tmp_path / "gateway.toml"
    config.write_text(f'store_path = "{typo}"\n' if named_by == "config file" else "")
    argv = [sys.executable, "-m", "kconfigs", "serve", "--upstream", "127.0.0.1:1", "--config", str(config)]
    argv += ["--listen", f"127.0.0.1:{free_port()}", "--metrics-listen", ""]
    if named_by == "flag":
        argv += ["--store", str(typo)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_")}
    env.update(HOME=str(tmp_path), KCONFIGS_HOME=str(tmp_path / "home"))
    if named_by == "environment":
        env["KCONFIGS_STORE"] = str(typo)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1,
        "",
        f"Embedded store {typo} does not exist (nothing has been written there; is the path right?)\n",
    )
    assert not typo.exists() and not (tmp_path / "home").exists()


def _env_with_home(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_")}
    env.update(HOME=str(tmp_path), KCONFIGS_HOME=str(tmp_path / "home"))
    return env


def test_no_store_named_and_no_default_store_is_refused_not_served_empty(tmp_path):
    """A forgotten --zookeeper would otherwise start a gateway that enforces no quotas from a
    default embedded store created for the occasion."""
    argv = [sys.executable, "-m", "kconfigs", "serve", "--upstream", "127.0.0.1:1"]
    argv += ["--listen", f"127.0.0.1:{free_port()}", "--metrics-listen", ""]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=_env_with_home(tmp_path))
    default = tmp_path / "home" / "quotas.db"
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1,
        "",
        f"No quota store named and the default embedded store {default} does not exist: name one with "
        "--zookeeper or --store (kconfigs apply or kconfigs alter creates an embedded store)\n",
    )
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("with_quota", [False, True])
def test_the_default_store_is_served_credentials_unlogged_and_no_quotas_said(tmp_path, with_quota):
    """The default store once written is served. A user's SCRAM credentials in it are not
    quotas: they never reach the log (they were once logged as 'non-numeric quotas'), and a store
    holding no quota is said in a warning, since every client then passes unthrottled."""
    env = _env_with_home(tmp_path)
    configs = "SCRAM-SHA-256=[iterations=4096,password=pw]" + (",producer_byte_rate=1000" if with_quota else "")
    alter = subprocess.run(
        [sys.executable, "-m", "kconfigs", "--alter", "--entity-type", "users", "--entity-name", "alice"]
        + ["--add-config", configs],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert alter.returncode == 0, alter.stderr
    port = free_port()
    argv = [sys.executable, "-m", "kconfigs", "serve", "--upstream", "127.0.0.1:1"]
    argv += ["--listen", f"127.0.0.1:{port}", "--metrics-listen", ""]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for_port(port)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "salt=" not in err and "stored_key" not in err and "SCRAM" not in err, err
    assert f"quotas loaded: {int(with_quota)} entities" in err, err
    assert ("the quota store holds no quotas: no client is throttled until one is added" in err) is not with_quota


@pytest.mark.parametrize("setting, variable, expected", [(None, "3", 3), (1, "3", 1), (None, None, os.cpu_count())])
def test_the_worker_thread_count_comes_from_the_setting_then_the_variable(tmp_path, setting, variable, expected):
    """``worker_threads`` in the settings file wins; 0 or unset takes KCONFIGS_GATEWAY_WORKERS;
    neither is one per core. Counted from the threads the data plane started, as logged."""
    config = tmp_path / "gateway.toml"
    config.write_text("" if setting is None else f"worker_threads = {setting}\n")
    env = {k: v for k, v in os.environ.items() if k != "KCONFIGS_GATEWAY_WORKERS"}
    if variable is not None:
        env["KCONFIGS_GATEWAY_WORKERS"] = variable
    port = free_port()
    proc = _serve(
        *("--upstream", "127.0.0.1:1", "--listen", f"127.0.0.1:{port}", "--metrics-listen", ""),
        *("--config", str(config)),
        tmp_path=tmp_path,
        env=env,
    )
    try:
        wait_for_port(port)
        names = [(task / "comm").read_text().strip() for task in Path(f"/proc/{proc.pid}/task").iterdir()]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert names.count("kconfigs-datapl") == expected, names  # comm keeps 15 characters
    assert f"data path: native (Rust, {expected} worker threads)" in err, err


@pytest.mark.parametrize("where", ["missing-dir/usage.jsonl", "."])
def test_a_usage_log_that_cannot_be_opened_is_named_not_blamed_on_the_listener(tmp_path, where):
    """It read 'Cannot listen on 127.0.0.1:PORT: No such file or directory'."""
    path = tmp_path / where
    SqliteStore(tmp_path / "q.db").close()
    argv = [sys.executable, "-m", "kconfigs", "serve", "--upstream", "127.0.0.1:1", "--store", str(tmp_path / "q.db")]
    argv += ["--listen", f"127.0.0.1:{free_port()}", "--metrics-listen", "", "--usage-log", str(path)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    reason = "No such file or directory" if where != "." else "Is a directory"
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Cannot open the usage log {path}: {reason}\n")


def test_tls_files_that_cannot_be_used_are_one_line(tmp_path):
    """They were a Python traceback ending in the data plane's ValueError."""
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("not a certificate\n")
    for cert, key, reason in (
        (tmp_path / "missing.pem", tmp_path / "missing.key", f"cannot read {tmp_path / 'missing.pem'}: No such file"),
        (not_pem, not_pem, f"no private key in {not_pem}"),
    ):
        config = tmp_path / "gateway.toml"
        config.write_text(f'tls_cert_file = "{cert}"\ntls_key_file = "{key}"\n')
        proc = _serve(
            "--upstream",
            "127.0.0.1:1",
            "--listen",
            f"127.0.0.1:{free_port()}",
            "--metrics-listen",
            "",
            "--config",
            str(config),
            tmp_path=tmp_path,
        )
        out, err = proc.communicate(timeout=60)
        lines = [line for line in err.splitlines() if '"level"' not in line]  # the start-up log is JSON
        assert (proc.returncode, out, len(lines)) == (1, "", 1), err
        assert lines[0].startswith(f"Cannot start the data plane: {reason}"), err
