"""The driver's class-data archive is looked up by a fingerprint of what it was made from, in the
kconfigs cache directory; nothing here starts a JVM or writes a file."""

from __future__ import annotations

import os
from pathlib import Path

from kconfigs_analysis import class_archive


def _setup(tmp_path: Path) -> tuple[str, str]:
    """A fake JDK (bin/java, lib/server/libjvm.so, lib/modules) and a fake PySpark home (jars/)."""
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "lib" / "server").mkdir(parents=True)
    (jdk / "bin" / "java").write_bytes(b"#!")
    (jdk / "lib" / "server" / "libjvm.so").write_bytes(b"jvm")
    (jdk / "lib" / "modules").write_bytes(b"modules")
    spark = tmp_path / "spark"
    (spark / "jars").mkdir(parents=True)
    (spark / "jars" / "spark-core_2.13-4.3.0.jar").write_bytes(b"core")
    return str(jdk / "bin" / "java"), str(spark)


def test_the_fingerprint_changes_with_the_jars_the_jdk_the_options_and_the_class_path(tmp_path):
    java, spark = _setup(tmp_path)
    first = class_archive.fingerprint(java, spark, "-XX:TieredStopAtLevel=1", "a.jar")
    assert class_archive.fingerprint(java, spark, "-XX:TieredStopAtLevel=1", "a.jar") == first
    assert class_archive.fingerprint(java, spark, "-Xint", "a.jar") != first
    assert class_archive.fingerprint(java, spark, "-XX:TieredStopAtLevel=1", "b.jar") != first
    (Path(spark) / "jars" / "spark-core_2.13-4.3.0.jar").write_bytes(b"core, rebuilt")
    second = class_archive.fingerprint(java, spark, "-XX:TieredStopAtLevel=1", "a.jar")
    assert second != first
    (Path(java).parents[1] / "lib" / "server" / "classes.jsa").write_bytes(b"base archive")
    assert class_archive.fingerprint(java, spark, "-XX:TieredStopAtLevel=1", "a.jar") != second


def test_the_cache_is_under_kconfigs_home_else_the_xdg_cache_else_home(tmp_path):
    assert class_archive.cache_dir({"KCONFIGS_HOME": "/k", "XDG_CACHE_HOME": "/x"}) == Path("/k/cache")
    assert class_archive.cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/kconfigs")
    assert class_archive.cache_dir({}) == Path.home() / ".cache" / "kconfigs"
    env = {"KCONFIGS_HOME": str(tmp_path)}
    assert class_archive.archive_path("abc", 12, env) == tmp_path / "cache" / "spark-driver-abc-12.jsa"
    assert class_archive.find_archive("abc", env) is None
    assert not (tmp_path / "cache").exists()  # looking creates nothing


def test_only_a_file_of_the_size_in_its_name_is_used(tmp_path):
    env = {"KCONFIGS_HOME": str(tmp_path)}
    path = class_archive.archive_path("abc", 4, env)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"abc")  # cut short: the JVM would map it and die
    assert class_archive.find_archive("abc", env) is None
    path.write_bytes(b"abcd")
    assert class_archive.find_archive("abc", env) == path
    assert class_archive.find_archive("abd", env) is None  # another setup's fingerprint
    class_archive.archive_path("abc", 0, env).write_bytes(b"")
    assert class_archive.find_archive("abc", env) == path


def test_other_setups_archives_are_stale(tmp_path):
    env = {"KCONFIGS_HOME": str(tmp_path)}
    keep = class_archive.archive_path("new", 1, env)
    keep.parent.mkdir(parents=True)
    keep.write_bytes(b"x")
    old = class_archive.archive_path("old", 1, env)
    old.write_bytes(b"x")
    (keep.parent / "notes.txt").write_text("not an archive")
    assert class_archive.stale_archives(keep, env) == [old]


def test_jvm_options_quote_a_path_with_blanks_and_send_the_jvm_log_to_stderr():
    options = class_archive.use_options(Path("/home/a b/spark-driver-x.jsa"))
    assert options.startswith('"-XX:SharedArchiveFile=/home/a b/spark-driver-x.jsa" -Xshare:auto ')
    assert "-XX:+VerifySharedSpaces" in options.split()
    assert options.endswith("-Xlog:disable -Xlog:all=warning:stderr")
    assert class_archive.dump_options(Path("/tmp/x.jsa")).startswith("-XX:ArchiveClassesAtExit=/tmp/x.jsa ")


def test_prepare_into_an_unwritable_cache_is_one_line_and_starts_no_spark(tmp_path):
    import subprocess
    import sys

    not_a_dir = tmp_path / "home"
    not_a_dir.write_text("a file where the kconfigs home should be")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_")}
    env["KCONFIGS_HOME"] = str(not_a_dir)
    result = subprocess.run(
        [sys.executable, "-m", "kconfigs", "analyze", "prepare", "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.startswith(f"Cannot write the class-data archive in {not_a_dir / 'cache'}: ")
    assert len(result.stderr.splitlines()) == 1
