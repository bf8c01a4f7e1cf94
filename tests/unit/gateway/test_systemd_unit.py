"""The shipped systemd unit can write what ``kconfigs serve`` writes: under ProtectSystem=strict
everything is read-only except the directories the unit names, so the embedded store (its
default under KCONFIGS_HOME, and any --store the unit mentions) must live in one of them."""

from __future__ import annotations

import re
from pathlib import Path

UNIT = Path(__file__).resolve().parents[3] / "docs" / "kconfigs-serve.service"


def _settings(text: str) -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in text.replace("\\\n", " ").splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def _writable_dirs(settings: dict[str, list[str]]) -> list[str]:
    dirs = [d for v in settings.get("ReadWritePaths", []) for d in v.split()]
    dirs += [f"/var/lib/{d}" for v in settings.get("StateDirectory", []) for d in v.split()]
    dirs += [f"/var/log/{d}" for v in settings.get("LogsDirectory", []) for d in v.split()]
    return dirs


def test_the_store_the_unit_uses_is_writable_under_protect_system_strict():
    text = UNIT.read_text(encoding="utf-8")
    settings = _settings(text)
    assert settings["ProtectSystem"] == ["strict"] and settings["ProtectHome"] == ["true"]
    writable = _writable_dirs(settings)
    home = dict(v.split("=", 1) for v in settings["Environment"])["KCONFIGS_HOME"]
    stores = [f"{home}/quotas.db"] + re.findall(r"--store\s+(/\S+)", text)  # comments included: they are advice
    for store in stores:
        assert any(store.startswith(d.rstrip("/") + "/") for d in writable), (store, writable)


def test_every_read_write_path_is_created_by_systemd_or_exists_by_convention():
    """ReadWritePaths= on a missing directory makes the unit fail to start; State/LogsDirectory
    are created (owned by User=) by systemd itself."""
    assert "ReadWritePaths" not in _settings(UNIT.read_text(encoding="utf-8"))


def test_every_option_of_the_units_serve_command_is_one_serve_takes():
    from harness.cli import run_main

    exec_start = _settings(UNIT.read_text(encoding="utf-8"))["ExecStart"][0].split()
    assert exec_start[1] == "serve"
    _code, out, _ = run_main("serve", "--help")
    for option in (word for word in exec_start[2:] if word.startswith("--")):
        assert option in out, option
