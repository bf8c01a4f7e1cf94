"""`kconfigs serve` argument handling: help, and bad input as one stderr line with no traceback
(nothing is bound: validation happens before any listener starts)."""

import pytest

from harness.cli import run_main


def test_serve_help_lists_the_options():
    code, out, _ = run_main("serve", "--help")
    assert code == 0
    for option in (
        "--upstream",
        "--listen",
        "--advertised-host",
        "--zookeeper",
        "--bootstrap-server",
        "--bootstrap-controller",
        "--command-config",
        "--store",
        "--profile",
        "--config",
        "--quota-admin",
    ):
        assert option in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ("serve",),
            "At least one --upstream host:port is required (or name the cluster with --bootstrap-server)\n",
        ),
        (("serve", "--upstream", "broker"), "Invalid upstream 'broker': expected host:port\n"),
        (
            ("serve", "--upstream", "b:1", "--zookeeper", "z:2181", "--store", "q.db"),
            "Name only one store: --zookeeper and --store both name one\n",
        ),
        (
            ("serve", "--upstream", "b:1", "--config", "/nonexistent/gateway.toml"),
            "Cannot read gateway config /nonexistent/gateway.toml: No such file or directory\n",
        ),
    ],
)
def test_bad_input_is_one_line_and_non_zero(argv, message):
    code, out, err = run_main(*argv)
    assert code != 0 and out == "" and err == message


def test_bad_toml_is_one_line(tmp_path):
    path = tmp_path / "gateway.toml"
    path.write_text("max_frame_bytes = [\n")
    code, _, err = run_main("serve", "--upstream", "b:1", "--config", str(path))
    assert code != 0 and err.startswith(f"Invalid TOML in {path}:") and err.count("\n") == 1


@pytest.mark.parametrize("flag", ["--listen", "--advertised-host", "--zookeeper", "--store", "--config", "--usage-log"])
@pytest.mark.parametrize("joined", [False, True])
def test_an_empty_option_is_one_line_not_a_default_or_a_traceback(flag, joined):
    """An unset variable in a unit file: an empty --usage-log ran with no usage log and an empty
    --config with no settings, silently; an empty --listen was a traceback."""
    empty = [f"{flag}="] if joined else [flag, ""]
    code, out, err = run_main("serve", "--upstream", "b:1", *empty)
    assert (code, out, err) == (1, "", f"{flag} is empty: give a value or leave it out\n")


@pytest.mark.parametrize(
    "setting",
    ["listen", "advertised_host", "usage_log_path", "zookeeper", "store_path", "tls_cert_file", "tls_client_ca_file"],
)
@pytest.mark.parametrize("value", ['""', '" "'])
def test_an_empty_setting_in_the_config_file_is_one_line(tmp_path, setting, value):
    path = tmp_path / "gateway.toml"
    path.write_text(f"{setting} = {value}\n")
    code, out, err = run_main("serve", "--upstream", "b:1", "--config", str(path))
    assert (code, out, err) == (1, "", f"Gateway setting {setting} is empty: give a value or leave it out\n")


def test_an_empty_metrics_listen_still_turns_the_endpoint_off():
    from kconfigs_enforcement.gateway.config import config_from_mapping

    assert config_from_mapping({"upstreams": "b:1", "metrics_listen": ""}).validate().metrics_listen is None


@pytest.mark.parametrize("value", ["abc", "", " ", "-1", "1.5"])
def test_a_bad_worker_count_variable_is_one_line_before_anything_starts(monkeypatch, tmp_path, value):
    """It was a ValueError traceback from int(), after the quotas had loaded."""
    from kconfigs.stores.sqlite import SqliteStore

    SqliteStore(tmp_path / "q.db").close()
    monkeypatch.setenv("KCONFIGS_GATEWAY_WORKERS", value)
    code, out, err = run_main(
        "serve", "--upstream", "b:1", "--store", str(tmp_path / "q.db"), "--listen", "127.0.0.1:0"
    )
    assert (code, out) == (1, "")
    assert err == f"KCONFIGS_GATEWAY_WORKERS must be a whole number of threads (0 = one per core), got {value!r}\n"


@pytest.mark.parametrize(
    "text, message",
    [
        (
            'usage_log_path = "u.jsonl"\nquota_admin = "gateway"\n[gateway]\nlog_format = "text"\n',
            "settings both at the top level (quota_admin, usage_log_path) and under [gateway]: "
            "put them all in one place",
        ),
        ("gateway = 5\n", "'gateway' must be a table ([gateway]) holding the settings"),
    ],
)
def test_settings_split_between_the_top_level_and_the_gateway_table_are_refused(tmp_path, text, message):
    """Only the [gateway] table was read: a usage_log_path above it was dropped in silence."""
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    code, out, err = run_main("serve", "--upstream", "b:1", "--config", str(path))
    assert (code, out, err) == (1, "", f"{path}: {message}\n")


@pytest.mark.parametrize("text", ['usage_log_path = "u.jsonl"\n', '[gateway]\nusage_log_path = "u.jsonl"\n'])
def test_settings_at_the_top_level_or_under_the_gateway_table_are_read(tmp_path, text):
    from kconfigs_enforcement.gateway.config import load_toml

    path = tmp_path / "gateway.toml"
    path.write_text(text)
    assert load_toml(path) == {"usage_log_path": "u.jsonl"}


@pytest.mark.parametrize(
    "setting, message",
    [
        ("listen = false", 'Gateway setting listen must be "host:port", got False'),
        ("listen = 5", 'Gateway setting listen must be "host:port", got 5'),
        ("metrics_listen = 7", 'Gateway setting metrics_listen must be "host:port", got 7'),
        ("usage_log_path = 5", "Gateway setting usage_log_path must be str, got 5"),
        ("tls_cert_file = true", "Gateway setting tls_cert_file must be str, got True"),
        ("log_format = 1", "Gateway setting log_format must be str, got 1"),
        ("max_frame_bytes = true", "Gateway setting max_frame_bytes must be int, got True"),
        ("quota_admin_principals = 5", "Gateway setting quota_admin_principals must be a list of strings, got 5"),
        ("upstreams = [1, 2]", "Gateway setting upstreams must be a list of strings, got [1, 2]"),
    ],
)
def test_a_setting_of_the_wrong_type_is_one_line(tmp_path, setting, message):
    """listen = 5 was a traceback; usage_log_path = 5 opened file descriptor 5 as the usage log."""
    path = tmp_path / "gateway.toml"
    path.write_text(setting + "\n")
    assert run_main("serve", "--upstream", "b:1", "--config", str(path)) == (1, "", message + "\n")


def test_listen_may_be_a_host_and_port_pair():
    from kconfigs_enforcement.gateway.config import config_from_mapping

    config = config_from_mapping({"upstreams": "b:1", "listen": ["127.0.0.1", 19092], "metrics_listen": False})
    assert (config.listen, config.metrics_listen) == (("127.0.0.1", 19092), None)
