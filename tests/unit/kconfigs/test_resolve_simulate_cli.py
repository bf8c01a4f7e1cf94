"""`kconfigs resolve` and `kconfigs simulate` (quota file input; exact output)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kconfigs.cli import cli, main

QUOTAS = """
[[quota]]
entity = { user = "alice" }
producer_byte_rate = 500

[[quota]]
entity = { user = { default = true }, "client-id" = { default = true } }
consumer_byte_rate = 2048

[[quota]]
entity = { "client-id" = "app" }
request_percentage = 1

[[quota]]
entity = { ip = { default = true } }
connection_creation_rate = 1
"""


@pytest.fixture
def quotas(tmp_path):
    path = tmp_path / "quotas.toml"
    path.write_text(QUOTAS)
    return str(path)


def run(*args):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def test_resolve_prints_value_and_znode_path_per_key(quotas):
    result = run("resolve", "--user", "alice", "--client-id", "app", "--ip", "10.0.0.1", "--quotas", quotas)
    assert result.exit_code == 0
    assert result.stdout == (
        "producer_byte_rate        500        /config/users/alice\n"
        "consumer_byte_rate        2048       /config/users/<default>/clients/<default>\n"
        "request_percentage        1          /config/clients/app\n"
        "controller_mutation_rate  unlimited  -\n"
        "producer_ids_rate         unlimited  -\n"
        "connection_creation_rate  1          /config/ips/<default>\n"
    )


def test_resolve_json_has_levels_and_metric_tags(quotas):
    result = run("resolve", "--user", "CN=bob", "--client-id", "x", "--quotas", quotas, "-o", "json")
    assert result.stdout.startswith(
        '{"producer_byte_rate": {"value": null, "level": 0, "path": null, '
        '"metric_tags": {"user": "CN%3Dbob", "client-id": ""}}'
    )


TRACE = """time_ms,user,client_id,ip,kind,value
1000,alice,app,,produce,400
2000,alice,app,,produce,400
3000,alice,app,,produce,4000
3000,,,10.0.0.1,connection,
3000,,,10.0.0.1,connection,
"""


def test_simulate_writes_per_event_throttle_csv_and_summary(tmp_path, quotas):
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    result = run("simulate", "--trace", str(trace), "--quotas", quotas, "--samples", "2")
    assert result.exit_code == 0
    # produce quota 500 B/s, N = 2, W = 1 s (window padded to (N-1)*W = 1 s at least):
    # t=1000: 400/1 s = 400 -> 0. t=2000: 800 B over 2000-1000 = 1 s -> (800-500)/500*1000 = 600 ms.
    # t=3000: the t=1000 sample is N*W = 2 s old and purged: 4400 B over 3000-2000 = 1 s ->
    # (4400-500)/500*1000 = 7800 ms (no cap for produce). ip limit 1/s: the 1st connection measures
    # 1/1 s (accepted), the 2nd 2/1 s -> (2-1)/1*1000 = 1000 ms (one-window cap), then dropped.
    assert result.stdout == (
        "time_ms,user,client_id,ip,kind,value,throttle_ms,accepted\n"
        "1000,alice,app,,produce,400,0,true\n"
        "2000,alice,app,,produce,400,600,true\n"
        "3000,alice,app,,produce,4000,7800,true\n"
        "3000,,,10.0.0.1,connection,0,0,true\n"
        "3000,,,10.0.0.1,connection,0,1000,false\n"
    )
    assert result.stderr == (
        "simulated 5 events: produce 3 (2 throttled, max 7800 ms); connection 2 (1 throttled, max 1000 ms, 1 dropped)\n"
    )


def test_simulate_out_file(tmp_path, quotas):
    trace, out = tmp_path / "trace.csv", tmp_path / "out.csv"
    trace.write_text("5,u,c,,fetch,10\n")
    result = run("simulate", "--trace", str(trace), "--quotas", quotas, "--out", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert out.read_text() == "time_ms,user,client_id,ip,kind,value,throttle_ms,accepted\n5,u,c,,fetch,10,0,true\n"


@pytest.mark.parametrize(
    "body,message",
    [
        ("1,u,c,,produce\n", "trace.csv:1: expected 6 columns (time_ms,user,client_id,ip,kind,value), got 5"),
        (
            "time_ms,user,client_id,ip,kind,value\n1,u,c,,upload,5\n",
            "trace.csv:2: unknown kind 'upload' (expected one of produce|fetch|request|connection|producer_id)",
        ),
        ("1,u,c,,produce,abc\n", "trace.csv:1: value must be an integer, got 'abc'"),
        (
            "10,u,c,,produce,1\n11,v,c,,produce,1\n5,u,c,,fetch,1\n",
            "trace.csv:3: time_ms 5 is earlier than 10 for the same client (u, c)",
        ),
    ],
)
def test_simulate_bad_trace_is_one_line_error_with_line_number(tmp_path, quotas, capsys, body, message):
    trace, out = tmp_path / "trace.csv", tmp_path / "out.csv"
    trace.write_text(body)
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "--trace", str(trace), "--quotas", quotas, "--out", str(out)])
    captured = capsys.readouterr()
    assert exit_info.value.code == 1
    assert captured.err == f"{trace.parent}/{message}\n"
    assert captured.out == "" and not out.exists()


def test_bad_quota_file_is_one_line_error(tmp_path, capsys):
    path = tmp_path / "q.toml"
    path.write_text('[[quota]]\nentity = { user = "u" }\nproducer_byte_rate = "fast"\n')
    with pytest.raises(SystemExit):
        main(["resolve", "--user", "u", "--client-id", "c", "--quotas", str(path)])
    assert (
        capsys.readouterr().err
        == f"{path}: [[quota]] #1 (user-principal 'u'): producer_byte_rate must be a number, not 'fast'\n"
    )


def test_help_of_both_commands():
    assert "effective value" in run("resolve", "--help").stdout
    assert "--trace" in run("simulate", "--help").stdout


def test_resolve_reads_the_embedded_store(tmp_path):
    from kconfigs.model import DEFAULT, QuotaEntity
    from kconfigs.stores.sqlite import SqliteStore

    db = str(tmp_path / "quotas.db")
    store = SqliteStore(db)
    try:
        store.alter(QuotaEntity(user=DEFAULT), lambda configs: {**configs, "producer_byte_rate": "1024"})
        store.alter(QuotaEntity(user="alice", client_id="app"), lambda configs: {**configs, "consumer_byte_rate": "10"})
    finally:
        store.close()
    result = run("resolve", "--user", "alice", "--client-id", "app", "--store", db)
    assert result.stdout.splitlines()[:2] == [
        "producer_byte_rate        1024       /config/users/<default>",
        "consumer_byte_rate        10         /config/users/alice/clients/app",
    ]


@pytest.mark.parametrize("ip", ["999.1.1.1", "10.0.0.256", "1.2.3.4.5", "host name"])
@pytest.mark.parametrize("command", ["resolve", "describe"])
def test_a_mistyped_ip_is_refused_not_read_as_an_ip_with_no_quotas(tmp_path, quotas, capsys, command, ip):
    store = tmp_path / "missing.db"  # never reached: the name is refused first
    argv = {
        "resolve": ["resolve", "--user", "u", "--client-id", "c", "--ip", ip, "--quotas", quotas],
        "describe": ["describe", "--ip", ip, "--store", str(store)],
    }[command]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 1
    assert capsys.readouterr() == ("", f"{ip} is not a valid IP address literal\n")
    assert not store.exists()


@pytest.mark.parametrize("ip", ["10.1.2.3", "::1", "2001:db8::7"])
def test_a_valid_ip_resolves_its_connection_rate(quotas, ip):
    result = run("resolve", "--user", "u", "--client-id", "c", "--ip", ip, "--quotas", quotas)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "connection_creation_rate  1          /config/ips/<default>"


def test_resolve_takes_an_address_not_the_default_ips_name(quotas, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["resolve", "--user", "u", "--client-id", "c", "--ip", "<default>", "--quotas", quotas])
    assert exit_info.value.code == 1
    assert capsys.readouterr() == ("", "--ip takes a client's address, not <default>\n")


def test_resolve_finds_an_ip_quota_under_another_name_of_the_address(tmp_path):
    quotas = tmp_path / "q.toml"
    quotas.write_text('[[quota]]\nentity = { ip = "10.1" }\nconnection_creation_rate = 3\n')
    result = run("resolve", "--user", "u", "--client-id", "c", "--ip", "::ffff:10.0.0.1", "--quotas", str(quotas))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "connection_creation_rate  3          /config/ips/10.1"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["resolve", "--user", "", "--client-id", "c"], "--user is empty: give a value"),
        (["resolve", "--user", "u", "--client-id", "c", "--ip="], "--ip is empty: give a value or leave it out"),
        (
            ["resolve", "--user", "u", "--client-id", "c", "--quotas", ""],
            "--quotas is empty: give a value or leave it out",
        ),
        (["simulate", "--trace", ""], "--trace is empty: give a value"),
        (["simulate", "--trace", "t.csv", "--quotas="], "--quotas is empty: give a value or leave it out"),
        (["simulate", "--trace", "t.csv", "--out", ""], "--out is empty: give a value or leave it out"),
    ],
)
def test_an_empty_value_is_one_line_not_a_file_or_name_that_matches_nothing(
    tmp_path, monkeypatch, capsys, argv, message
):
    """An unset shell variable: not 'Cannot read quota file :', not an ip or user with no quotas."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KCONFIGS_HOME", str(tmp_path / "home"))
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert (exit_info.value.code, capsys.readouterr()) == (1, ("", message + "\n"))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_empty_client_id_is_a_client_id_and_resolves_as_kafka_does(quotas):
    """Unlike a principal, a client-id may be empty: a client can send one. Kafka's quotaLimit
    reads an empty client-id tag as "no client-id level", so the (default user, default client)
    quota that chose the tags is not found: unlimited, as on a broker."""
    result = run("resolve", "--user", "u", "--client-id", "", "--quotas", quotas, "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["consumer_byte_rate"] == {
        "value": None,
        "level": 0,
        "path": None,
        "metric_tags": {"user": "u", "client-id": ""},
    }


@pytest.mark.parametrize("spelling", ["as named", "symlink", "./ spelling", "hard link"])
@pytest.mark.parametrize("victim", ["trace", "quotas"])
def test_simulate_refuses_an_out_file_that_is_one_of_its_inputs(tmp_path, quotas, capsys, victim, spelling):
    """--out onto the trace replaced the trace with the results; another name for the same file
    is the same input."""
    trace = tmp_path / "trace.csv"
    trace.write_text("time_ms,user,client_id,ip,kind,value\n0,alice,app,,produce,100\n")
    files = {"trace": trace, "quotas": Path(quotas)}
    before = {name: path.read_bytes() for name, path in files.items()}
    out = files[victim]
    if spelling == "symlink":
        (tmp_path / "link.csv").symlink_to(out)
        out = tmp_path / "link.csv"
    elif spelling == "./ spelling":
        out = f"{out.parent}/./{out.name}"
    elif spelling == "hard link":
        os.link(out, tmp_path / "hard.csv")
        out = tmp_path / "hard.csv"
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "--trace", str(trace), "--quotas", quotas, "--out", str(out)])
    assert exit_info.value.code == 1
    assert capsys.readouterr() == (
        "",
        f"--out {out} is one of the inputs: writing it would replace what was read\n",
    )
    assert {name: path.read_bytes() for name, path in files.items()} == before
