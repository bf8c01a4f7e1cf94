"""Small DataFrames from driver-side rows, built in the JVM (an inline ``VALUES`` table).

``spark.createDataFrame(list)`` ships pickled rows through Python worker processes (PySpark
re-serializes a parallelized list with a Python ``map``): on a small run, starting those workers
cost about 4 s, more than the whole analysis. An inline table is a ``LocalRelation``: no Python
worker, no job to broadcast it, and one py4j call however many rows. Strings go in as hex
(``CAST(X'..' AS STRING)``), so no text can break the SQL. The SQL text of each shape (inline
table, a file's lines, a literal array) is built here only; :data:`SAMPLE_STATEMENTS` has one of
each for the session's early parser warm-up.
"""

from __future__ import annotations

import math
from typing import Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.types import StructType, _parse_datatype_string


def _literal(value) -> str:
    """A foldable SQL literal for one Python value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return f"{value}L" if abs(value) < 2**63 else f"{value}BD"
    if isinstance(value, float):  # Java's Double.parseDouble reads repr() back to the same double
        text = (
            "NaN"
            if math.isnan(value)
            else ("Infinity" if value > 0 else "-Infinity")
            if math.isinf(value)
            else repr(value)
        )
        return f"CAST('{text}' AS DOUBLE)"
    return f"CAST(X'{str(value).encode('utf-8').hex()}' AS STRING)"


def _struct(schema: StructType | str) -> StructType:
    struct = _parse_datatype_string(schema) if isinstance(schema, str) else schema
    assert isinstance(struct, StructType)
    return struct


def values_sql(rows: Iterable[tuple], schema: StructType | str) -> str:
    """The query :func:`local_frame` runs: ``rows`` as an inline ``VALUES`` table of ``schema``."""
    struct = _struct(schema)
    names = [f"c{i}" for i in range(len(struct.fields))]
    casts = ", ".join(f"CAST({n} AS {f.dataType.simpleString()}) AS `{f.name}`" for n, f in zip(names, struct.fields))
    values = ", ".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in rows)
    if not values:  # an empty table still needs typed columns
        nulls = ", ".join(f"CAST(NULL AS {f.dataType.simpleString()}) AS `{f.name}`" for f in struct.fields)
        return f"SELECT {nulls} WHERE FALSE"
    return f"SELECT {casts} FROM VALUES {values} AS t({', '.join(names)})"


def local_frame(spark: SparkSession, rows: Iterable[tuple], schema: StructType | str) -> DataFrame:
    """``rows`` (tuples in ``schema`` order) as a DataFrame of exactly ``schema``'s columns and types."""
    return spark.sql(values_sql(rows, schema))


def text_sql(lines: list[bytes]) -> str:
    """The query :func:`text_frame` runs: ``lines`` as one ``value`` string each, bytes as they are."""
    if not lines:
        return values_sql([], "value string")
    values = ", ".join(f"(X'{line.hex()}')" for line in lines)
    return f"SELECT CAST(c0 AS STRING) AS value FROM VALUES {values} AS t(c0)"


def text_frame(spark: SparkSession, lines: list[bytes]) -> DataFrame:
    """``lines`` as ``spark.read.text`` gives a file's lines: one ``value`` string per line, its
    bytes as they are (a string made from binary is not decoded, as the text source's is not)."""
    return spark.sql(text_sql(lines))


def array_sql(values: list, sql_type: str) -> str:
    """``values`` (ints, bools or None) as one array literal of ``sql_type`` elements (folded to a
    constant: a lookup table in an expression, without a join)."""
    text = ", ".join("NULL" if v is None else str(v).lower() if isinstance(v, bool) else str(int(v)) for v in values)
    return f"CAST(array({text}) AS array<{sql_type}>)"


#: one of each statement shape above (the SQL parser's warm-up in session.py parses these)
SAMPLE_STATEMENTS = (
    text_sql([b'"time","kafka.server:type=Produce,user=a:byte-rate"', b"1714557600000,1.5"]),
    values_sql(
        [(0, "a", None, 1.5, True)],
        # a StructType, not DDL text: parsing DDL takes a JVM, and these are built before one is up
        T.StructType(
            [
                T.StructField("i", T.IntegerType()),
                T.StructField("s", T.StringType()),
                T.StructField("n", T.StringType()),
                T.StructField("d", T.DoubleType()),
                T.StructField("b", T.BooleanType()),
            ]
        ),
    ),
    f"SELECT {array_sql([1, None], 'int')}, {array_sql([True, None], 'boolean')}",
)
