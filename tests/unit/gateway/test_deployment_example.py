"""The shipped Kubernetes example runs ``kconfigs serve`` as the gateway understands it: its
arguments are valid serve options, the probes ask the metrics listener for the paths it answers,
and that listener is reachable from the kubelet (not bound to loopback)."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.cli import run_main
from kconfigs_enforcement.gateway.config import config_from_mapping, load_toml

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "kconfigs-serve-deployment.yaml"


def _documents() -> dict[str, dict]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(EXAMPLE.read_text(encoding="utf-8"))}


def _container() -> dict:
    return _documents()["Deployment"]["spec"]["template"]["spec"]["containers"][0]


def _arg(name: str) -> str:
    return next(a.split("=", 1)[1] for a in _container()["args"] if a.startswith(f"{name}="))


def test_the_probes_ask_the_metrics_listener_for_healthz_and_readyz():
    container = _container()
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    host, _, port = _arg("--metrics-listen").rpartition(":")
    assert host == "0.0.0.0" and ports["metrics"] == int(port)
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}


def test_the_arguments_and_settings_are_what_serve_accepts(tmp_path):
    container = _container()
    assert container["args"][0] == "serve"
    settings = tmp_path / "gateway.toml"
    settings.write_text(_documents()["ConfigMap"]["data"]["gateway.toml"])
    config = config_from_mapping(load_toml(settings))
    broker_ports = sorted(p["containerPort"] for p in container["ports"] if p["name"].startswith("broker-"))
    assert broker_ports[0] == config.broker_port_start
    grace_s = _documents()["Deployment"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace_s > config.drain_timeout_ms / 1000
    code, out, _ = run_main("serve", "--help")
    for argument in container["args"][1:]:
        assert argument.split("=", 1)[0] in out, argument
