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
        "--store",
        "--config",
        "--quota-admin",
    ):
        assert option in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (("serve",), "At least one --upstream host:port is required\n"),
        (("serve", "--upstream", "broker"), "Invalid upstream 'broker': expected host:port\n"),
        (
            ("serve", "--upstream", "b:1", "--zookeeper", "z:2181", "--store", "q.db"),
            "Use either --zookeeper or --store, not both\n",
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
