"""A short run's driver class path names Spark's most used jars first, in their order of use."""

from __future__ import annotations

import os

from kconfigs_analysis.session import HOT_JAR_PREFIXES, hot_jars_first


def test_the_most_used_jars_come_first_in_that_order_and_others_are_left_out(tmp_path):
    jars = tmp_path / "jars"
    jars.mkdir()
    for name in ["avro-1.12.0.jar", "spark-sql_2.13-4.3.0.jar", "scala-library-2.13.18.jar"]:
        (jars / name).write_bytes(b"")
    (jars / "spark-catalyst_2.13-4.3.0.jar").write_bytes(b"")
    (jars / "spark-catalyst_2.13-4.3.0.jar.sha1").write_bytes(b"")  # not a jar
    prefix = hot_jars_first(str(tmp_path))
    assert prefix.split(os.pathsep) == [
        str(jars / "spark-catalyst_2.13-4.3.0.jar"),
        str(jars / "scala-library-2.13.18.jar"),
        str(jars / "spark-sql_2.13-4.3.0.jar"),
    ]
    assert HOT_JAR_PREFIXES.index("spark-catalyst_") < HOT_JAR_PREFIXES.index("spark-sql_")


def test_no_jars_directory_gives_no_prefix(tmp_path):
    assert hot_jars_first(str(tmp_path)) is None
    (tmp_path / "jars").mkdir()
    assert hot_jars_first(str(tmp_path)) is None
