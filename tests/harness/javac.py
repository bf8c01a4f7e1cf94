"""Small Java programs the tests compile against a Kafka version's own client jars.

Compiled at test time (class files are never committed) into the test cache, keyed by the
source's content, the JDK and the jar set, so a change to any of them recompiles and an unchanged
program is compiled once per machine.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from .java import TOOL_JVM_FLAGS, java_binary, kafka_classpath, kafka_jars, logging_flags
from .versions import SETUP_HINT, MissingTestDependency, harness_cache_dir


def javac_binary() -> str:
    """:raises MissingTestDependency: no JDK compiler installed."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and Path(java_home, "bin", "javac").is_file():
        return str(Path(java_home, "bin", "javac"))
    found = shutil.which("javac")
    if not found:
        raise MissingTestDependency(f"no javac on PATH: {SETUP_HINT}")
    return found


def compiled_classes(source: Path, version: str) -> Path:
    """Directory holding ``source`` compiled against Kafka ``version``'s jars, with the helper
    classes it uses from the same folder (``-sourcepath``).

    :raises RuntimeError: javac failed (with its messages).
    """
    javac = javac_binary()
    digest = hashlib.sha256()
    for program in sorted(source.parent.glob("*.java")):  # the helpers it may use are part of it
        digest.update(program.name.encode() + program.read_bytes())
    digest.update(os.path.realpath(javac).encode())
    for jar in kafka_jars(version):
        digest.update(jar.name.encode())
    out = harness_cache_dir() / "javac" / f"{source.stem}-{version}-{digest.hexdigest()[:16]}"
    if (out / ".complete").is_file():
        return out
    building = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    result = subprocess.run(
        [
            javac,
            "-nowarn",
            "-cp",
            kafka_classpath(version),
            "-sourcepath",
            str(source.parent),
            "-d",
            str(building),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        raise RuntimeError(f"javac {source.name} against Kafka {version} failed:\n{result.stdout}{result.stderr}")
    (building / ".complete").touch()
    try:
        building.rename(out)
    except OSError:  # another run finished first: its classes are the same
        shutil.rmtree(building, ignore_errors=True)
    return out


def java_program_command(source: Path, version: str, args: Sequence[str]) -> list[str]:
    """argv running the compiled ``source`` (main class = file name) on Kafka ``version``'s classpath."""
    classes = compiled_classes(source, version)
    return [
        java_binary(),
        *TOOL_JVM_FLAGS,
        *logging_flags(version, "tools"),
        "-cp",
        os.pathsep.join([str(classes), kafka_classpath(version)]),
        source.stem,
        *args,
    ]
