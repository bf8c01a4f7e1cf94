"""The driver JVM's class-data archive for short runs (JDK 17 dynamic application CDS).

A report over a small dump spends most of its time above a bare session in a cold JVM, and the
largest share of that is loading, parsing and verifying some 19,000 classes from Spark's 280
jars (benchmarks/RESULTS.md, small runs). ``kconfigs analyze prepare`` runs small reports once
with ``-XX:ArchiveClassesAtExit``: at exit the JVM writes the classes it loaded, already parsed
and verified, to one file. Later short runs map it with ``-XX:SharedArchiveFile``.

Reads never create files: only ``prepare`` writes the archive, under the kconfigs cache
directory, named after a fingerprint of what it was dumped from (the JDK, PySpark's jars, the
driver's short-run options and class path). A run uses it only when the file of its own
fingerprint exists with the size in its name. The JVM checks the rest itself (class path, jar
sizes and times, its base archive, the header and region checksums) and, with ``-Xshare:auto``,
runs without the archive on any mismatch.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: bump when the way the archive is made or named changes: old files are then never picked
ARCHIVE_FORMAT = 1
ARCHIVE_PREFIX = "spark-driver-"
ARCHIVE_SUFFIX = ".jsa"
#: the JVM's own log (CDS notes such as "shared class paths mismatch") goes to stderr, which a
#: quiet run sends to its JVM log file: by default it is stdout, where a report may be written
_JVM_LOG_TO_STDERR = "-Xlog:disable -Xlog:all=warning:stderr"


def cache_dir(env: dict | None = None) -> Path:
    """``$KCONFIGS_HOME/cache``, else ``$XDG_CACHE_HOME/kconfigs`` (``~/.cache/kconfigs``)."""
    env = os.environ if env is None else env
    home = env.get("KCONFIGS_HOME")
    if home:
        return Path(home) / "cache"
    cache_home = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "kconfigs"


def _stat_line(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path} -"
    return f"{path} {st.st_size} {st.st_mtime_ns}"


def fingerprint(java: str, spark_home: str, driver_options: str, class_path: str) -> str:
    """A digest of everything an archive depends on that can be read without starting a JVM.

    ``java``: the executable (its JDK's libjvm, module image and base archive are stat-ed);
    ``spark_home``: PySpark's (its jars/ listed with sizes and times); ``driver_options``: the
    short-run JVM options; ``class_path``: the driver's extra class path.
    """
    java_home = os.path.dirname(os.path.dirname(os.path.realpath(java)))
    lines = [f"format {ARCHIVE_FORMAT}", f"java {os.path.realpath(java)}", f"options {driver_options}"]
    lines += [_stat_line(os.path.join(java_home, "lib", *p)) for p in (("server", "libjvm.so"), ("modules",))]
    lines.append(_stat_line(os.path.join(java_home, "lib", "server", "classes.jsa")))
    lines.append(f"classpath {class_path}")
    jars = os.path.join(spark_home, "jars")
    try:
        names = sorted(os.listdir(jars))
    except OSError:
        names = []
    lines += [_stat_line(os.path.join(jars, name)) for name in names]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:20]


def archive_path(digest: str, size_bytes: int, env: dict | None = None) -> Path:
    """Where ``prepare`` puts the archive of fingerprint ``digest``; its size is in the name."""
    return cache_dir(env) / f"{ARCHIVE_PREFIX}{digest}-{size_bytes}{ARCHIVE_SUFFIX}"


def find_archive(digest: str, env: dict | None = None) -> Path | None:
    """The archive of fingerprint ``digest`` when it is whole (None: none, or cut short).

    The size check is ours because the JVM's is missing: JDK 17 maps a dynamic archive that was
    cut short and dies of SIGBUS instead of running without it. Other damage (same size) is
    caught by the region checksums of ``-XX:+VerifySharedSpaces`` (use_options).
    """
    directory = cache_dir(env)
    prefix = f"{ARCHIVE_PREFIX}{digest}-"
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(ARCHIVE_SUFFIX)]
    except OSError:
        return None
    for name in names:
        size = name[len(prefix) : -len(ARCHIVE_SUFFIX)]
        path = directory / name
        try:
            if size.isdigit() and path.is_file() and path.stat().st_size == int(size) > 0:
                return path
        except OSError:
            continue
    return None


def _quoted(option: str) -> str:
    # Spark splits extraJavaOptions on blanks but keeps quoted strings whole
    return f'"{option}"' if any(c.isspace() for c in option) else option


def use_options(path: Path) -> str:
    """JVM options that map ``path`` when it is valid for this JVM and class path, else run without.

    ``VerifySharedSpaces`` checks the regions' checksums (~0.06 s for 160 MiB): a damaged file
    is then left unused rather than mapped.
    """
    return f"{_quoted(f'-XX:SharedArchiveFile={path}')} -Xshare:auto -XX:+VerifySharedSpaces {_JVM_LOG_TO_STDERR}"


def dump_options(path: Path) -> str:
    """JVM options that write the loaded classes to ``path`` when the JVM exits."""
    return f"{_quoted(f'-XX:ArchiveClassesAtExit={path}')} {_JVM_LOG_TO_STDERR}"


def stale_archives(keep: Path, env: dict | None = None) -> list[Path]:
    """Archives in the cache directory other than ``keep`` (of another JDK, PySpark or format)."""
    directory = cache_dir(env)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [
        directory / n
        for n in names
        if n.startswith(ARCHIVE_PREFIX) and n.endswith(ARCHIVE_SUFFIX) and directory / n != keep
    ]
