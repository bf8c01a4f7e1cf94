"""``.ci/setup-test-env``'s Maven steps write plain text into a log: no ANSI escapes.

Runs the script's own jmx_exporter step (two ``mvn dependency:copy`` runs, from the local Maven
repository the set-up filled) into a throwaway cache, output to pipes as in CI's log.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SETUP_SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "setup-test-env"
JMX_EXPORTER_LIST = SETUP_SCRIPT.parent / "kafka-jars" / "jmx-exporter"


def listed_artifacts() -> list[tuple[str, str]]:
    """(artifact, version) per line of the jmx_exporter list, as the script reads it."""
    lines = JMX_EXPORTER_LIST.read_text().splitlines()
    return [tuple(line.split()) for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_maven_steps_print_no_ansi_escapes_into_a_non_terminal(tmp_path):
    cache = tmp_path / "cache"
    done = subprocess.run(
        ["bash", "-c", f'source "{SETUP_SCRIPT}" && fetch_jmx_exporter', "setup-test-env"],
        env={**os.environ, "KCONFIGS_TEST_CACHE": str(cache)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"\x1b" not in done.stdout, done.stdout
    assert b"\x1b" not in done.stderr, done.stderr
    assert done.stdout == b""
    assert done.stderr.decode().splitlines() == [
        f"setup-test-env: jmx_exporter: mvn dependency:copy io.prometheus.jmx:{artifact}:{version}"
        f" -> {cache}/jmx-exporter"
        for artifact, version in listed_artifacts()
    ]
    jars = {jar.name for jar in (cache / "jmx-exporter").glob("*.jar")}
    assert jars == {f"{artifact}-{version}.jar" for artifact, version in listed_artifacts()}
