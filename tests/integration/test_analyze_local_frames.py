"""local_frames.local_frame: driver rows as an inline table, value for value (any text, NaN,
infinities, nulls, big and negative numbers), without a Python worker or a job to plan; and
local_frames.text_frame over dumpfiles.file_lines: a file's lines, byte for byte as Spark's text
source reads them (LF, CR, CR LF, byte order marks, invalid UTF-8, empty lines, no final newline)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from kconfigs_analysis.dumpfiles import file_lines
from kconfigs_analysis.local_frames import SAMPLE_STATEMENTS, local_frame, text_frame
from kconfigs_analysis.session import SessionOptions, spark_session, warm_sql_parser

pytestmark = pytest.mark.integration
SCHEMA = "name string, n bigint, x double, flag boolean"


@pytest.fixture(scope="module")
def spark():
    with spark_session(SessionOptions(master="local[1]", shuffle_partitions=1)) as session:
        yield session


def _same(a, b) -> bool:
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.text()),
            st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
            st.one_of(st.none(), st.floats()),
            st.one_of(st.none(), st.booleans()),
        ),
        max_size=6,
    )
)
def test_rows_come_back_exactly(spark, rows):
    frame = local_frame(spark, rows, SCHEMA)
    assert frame.schema.simpleString() == "struct<name:string,n:bigint,x:double,flag:boolean>"
    got = [tuple(r) for r in frame.collect()]
    assert len(got) == len(rows)
    assert all(_same(a, b) for row, back in zip(rows, got) for a, b in zip(row, back)), (rows, got)


def test_no_python_worker_starts_for_a_local_frame(spark):
    before = spark.sparkContext.statusTracker().getJobIdsForGroup()
    local_frame(spark, [("a", 1, 1.0, True)], SCHEMA).collect()
    assert spark.sparkContext.statusTracker().getJobIdsForGroup() == before  # collected on the driver: no job


#: the bytes that decide where lines end and what a line holds, and ordinary text around them
_LINE_PIECES = [
    b"\n",
    b"\r",
    b"\r\n",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\xc3",
    b"\xc3\xa9",
    b" ",
    b",",
    b"time",
    b"1.5",
    b"\t",
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_LINE_PIECES), max_size=30))
def test_a_files_lines_are_the_text_sources_lines_byte_for_byte(spark, tmp_path_factory, pieces):
    path = tmp_path_factory.mktemp("lines") / "dump.jmx.csv"
    path.write_bytes(b"".join(pieces))

    def raw(frame):
        return [bytes(r[0]) for r in frame.select(F.col("value").cast("binary")).collect()]

    assert raw(text_frame(spark, file_lines(str(path)))) == raw(spark.read.text(str(path)))


def test_the_sql_parser_warm_up_parses_each_sample_statement_and_each_runs(spark):
    from pyspark import SparkContext

    warm_sql_parser(SparkContext._gateway)  # raises if Spark's parser object is not where it looks
    rows = [spark.sql(statement).collect() for statement in SAMPLE_STATEMENTS]
    assert [len(r) for r in rows] == [2, 1, 1]
    assert bytes(rows[0][1][0], "utf-8") == b"1714557600000,1.5"
    assert list(rows[2][0]) == [[1, None], [True, None]]
