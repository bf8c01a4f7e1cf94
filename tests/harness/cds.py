"""JVM class-data sharing (AppCDS) archives that make repeated Kafka tool runs start faster.

The first run of a (Kafka version, main class) pair writes a dynamic archive of the classes it
loaded (-XX:ArchiveClassesAtExit, JDK 13+); later runs map it (-XX:SharedArchiveFile).
Measured on the 2-core CI box: ConfigCommand 2.8.2 --describe went from ~1.7 s to ~0.9 s; the
archiving run itself takes ~5 s once per machine (archives live in the test cache).
An archive the JVM cannot use (other JDK, changed jars) is silently ignored (-Xshare:auto), and
the key below changes with the JDK and the jars anyway. KCONFIGS_TEST_NO_CDS=1 turns this off.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from .versions import harness_cache_dir

#: Keep the JVM's own logging (CDS warnings such as "Pre JDK 6 class not supported") off
#: stdout, which must carry only the tool's output; real JVM errors still reach stderr.
QUIET_JVM_LOG_FLAGS = ("-Xlog:disable", "-Xlog:all=error:stderr")


def _archive_key(java: str, jars: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    java_real = os.path.realpath(java)
    digest.update(f"{java_real}:{os.stat(java_real).st_mtime_ns}".encode())
    for jar in jars:
        stat = jar.stat()
        digest.update(f"{jar}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


class ToolArchive:
    """The CDS archive of one tool: JVM flags to use it (or create it) and the final rename."""

    def __init__(self, java: str, version: str, main_class: str, jars: Sequence[Path]) -> None:
        self.enabled = not os.environ.get("KCONFIGS_TEST_NO_CDS")
        key = _archive_key(java, jars) if self.enabled else ""
        self.path = harness_cache_dir() / "cds" / f"{version}-{main_class}-{key}.jsa"
        self._pending = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")

    def jvm_flags(self) -> list[str]:
        if not self.enabled:
            return list(QUIET_JVM_LOG_FLAGS)
        if self.path.is_file():
            return [*QUIET_JVM_LOG_FLAGS, f"-XX:SharedArchiveFile={self.path}"]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Written under a per-process name, renamed when complete: parallel runs never
        # map a half-written archive.
        return [*QUIET_JVM_LOG_FLAGS, f"-XX:ArchiveClassesAtExit={self._pending}"]

    def finish(self) -> None:
        """After the JVM exited: publish a freshly written archive, drop a partial one."""
        if self._pending.is_file():
            if self._pending.stat().st_size > 0:
                os.replace(self._pending, self.path)
            else:
                self._pending.unlink()
