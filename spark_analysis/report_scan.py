"""The report's passes over its inputs: one for the statistics and summary, one small one for charts.

JmxTool files are read in the narrow shape (``jmxtool.cells``: a small int ``series`` per
(source, entity), the strings kept here on the driver); Prometheus scrapes and usage logs in the
canonical shape (``readers.load_dumps``). Nothing is persisted: a cached copy of 2e8 cells costs
more (memory, spill to disk) than parsing the text a second time, and the chart pass only
explodes the few charted columns of each line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from kconfigs_analysis import cell_stats, jmxtool, readers, transforms
from kconfigs_analysis.dumpfiles import ReadOptions
from kconfigs_analysis.schemas import ENTITY_COLUMNS

_CANONICAL_KEYS = ENTITY_COLUMNS + ["source"]


@dataclass
class Inputs:
    """The classified input files, with the series numbering of the JmxTool ones."""

    spark: SparkSession
    others: list  # readers.DumpFile of every non-JmxTool input
    options: ReadOptions
    jmx: list = field(default_factory=list)  # (JmxFile, {column index: series}, bad-line series)
    dims: dict = field(default_factory=dict)  # series -> (kind, user, client_id, ip, source)
    #: small inputs: the chart pass filters the statistics pass's frames (kept here) instead of
    #: building a narrower parse; on a cold JVM building a plan costs more than parsing a small file
    reuse_scan: bool = False
    scanned: dict = field(default_factory=dict)  # "narrow" / "canonical" -> DataFrame (reuse_scan)
    #: tiny JmxTool-only inputs: Spark parses while planning (jmxtool.line_cells), the driver
    #: aggregates the collected cells (cell_stats): no Spark job instead of two with a shuffle
    local_stats: bool = False
    cells: list | None = None  # cell_stats.Cell of every narrow cell (local_stats)


def open_inputs(
    spark: SparkSession,
    files: list,
    options: ReadOptions | None = None,
    reuse_scan: bool = False,
    local_stats: bool = False,
) -> Inputs:
    """Read the JmxTool headers and number their series (same source + entity = same series).

    ``local_stats``: aggregate on the driver when every input is a JmxTool file of fewer lines
    than cell_stats.EXACT_PERCENTILE_VALUES (ignored otherwise).
    """
    others = [f for f in files if f.format != "jmxtool"]
    local_stats = local_stats and not others and all(_lines_fewer_than(f.read_path) for f in files)
    inputs = Inputs(spark, others, options or ReadOptions(), reuse_scan=reuse_scan, local_stats=local_stats)
    numbers: dict[tuple, int] = {}

    def number(key: tuple) -> int:
        if key not in numbers:
            numbers[key] = len(numbers)
            inputs.dims[numbers[key]] = key
        return numbers[key]

    for dump in (f for f in files if f.format == "jmxtool"):
        header = jmxtool.read_header(dump)
        series_of = {c.index: number((c.kind, c.user, c.client_id, c.ip, header.source)) for c in header.columns}
        inputs.jmx.append((header, series_of, number((None, None, None, None, header.source))))
    return inputs


def _lines_fewer_than(path: str, limit: int = cell_stats.EXACT_PERCENTILE_VALUES) -> bool:
    """The file has fewer than ``limit`` lines: no series in it has that many values."""
    with open(path, "rb") as text:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: text.read(1 << 20), b"")) < limit - 1


def _narrow(inputs: Inputs, only: set[int] | None = None, check_cells: bool = True) -> DataFrame | None:
    frames = [
        jmxtool.cells(inputs.spark, header, inputs.options, series_of, bad, only, check_cells, inputs.local_stats)
        for header, series_of, bad in inputs.jmx
        if only is None or only & set(series_of.values())
    ]
    return _union(frames)


def _optimistic_narrow(inputs: Inputs) -> DataFrame | None:
    """Every JmxTool cell, exploded before it is cast (jmxtool.optimistic_cells)."""
    frames = [
        jmxtool.optimistic_cells(inputs.spark, header, inputs.options, series_of, bad)
        for header, series_of, bad in inputs.jmx
    ]
    return _union(frames)


def _canonical(inputs: Inputs) -> DataFrame | None:
    return readers.load_dumps(inputs.spark, inputs.others, inputs.options) if inputs.others else None


def _union(frames: list[DataFrame]) -> DataFrame | None:
    if not frames:
        return None
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def scan_stats(inputs: Inputs) -> list[dict]:
    """:func:`transforms.group_stats` rows with entity and source columns (one Spark job per shape)."""
    groups = []
    canonical = _canonical(inputs)
    narrow, stats = None, []
    if inputs.local_stats:
        stats = _local_stats(inputs)
    elif inputs.jmx:
        narrow = _optimistic_narrow(inputs)
        stats = _spark_stats(narrow)
        if any(values["series"] == jmxtool.NOT_A_NUMBER_SERIES for values in stats):
            narrow = _narrow(inputs)  # a quota cell is text: its line is malformed, checked line by line
            stats = _spark_stats(narrow)
    if inputs.reuse_scan:
        inputs.scanned.update(narrow=narrow, canonical=canonical)
    for values in stats:
        groups.append({**dict(zip(_CANONICAL_KEYS, inputs.dims[values.pop("series")])), **values})
    if canonical is not None:
        groups += [row.asDict() for row in transforms.group_stats(canonical, _CANONICAL_KEYS).collect()]
    return groups


def _spark_stats(narrow: DataFrame) -> list[dict]:
    return [row.asDict() for row in transforms.group_stats(narrow, ["series"]).collect()]


def _local_stats(inputs: Inputs) -> list[dict]:
    """group_stats rows computed on the driver from the collected cells (kept for the charts).

    The cells are jmxtool.cells' (line by line, column by column), each with its file's number
    as its partition: Spark reads a file this small as one partition, and cell_stats adds in
    partition order to give Spark's sums.
    """
    inputs.cells = []
    for number, (header, series_of, bad_series) in enumerate(inputs.jmx):
        for line in jmxtool.line_cells(inputs.spark, header, inputs.options, series_of).collect():
            if line["_bad"]:
                inputs.cells.append(cell_stats.Cell(number, bad_series, None, None, None, True))
                continue
            for cell in line["cells"]:
                inputs.cells.append(cell_stats.Cell(number, cell[0], line["ts_ms"], cell[1], cell[2], False))
    return cell_stats.group_stats(inputs.cells)


def source_rows(groups: list[dict]) -> list[dict]:
    """The good groups as per-source statistics rows (``rollup.entity_stats``' input)."""
    return [{c: g[c] for c in transforms.SOURCE_STATS_COLUMNS} for g in groups if not g["_bad"]]


def malformed_examples(inputs: Inputs, limit: int = 5) -> list[str]:
    frames = [f.filter(F.col("_bad")).select("_line") for f in (_narrow(inputs), _canonical(inputs)) if f is not None]
    return [r["_line"] for r in _union(frames).limit(limit).collect()]


def chart_points(inputs: Inputs, entities: list[tuple], bucket_ms: int, inputs_clean: bool = False) -> list:
    """transforms.chart_buckets rows for ``entities`` (chart_id = index), by chart then bucket.

    ``inputs_clean``: the statistics pass found no malformed line, so JmxTool lines need not
    have every cell checked again (only the charted cells are cast).
    """
    chart_of = {s: entities.index(d[:4]) for s, d in inputs.dims.items() if d[:4] in entities}
    if inputs.cells is not None:
        return [Row(**p) for p in cell_stats.chart_buckets(inputs.cells, chart_of, bucket_ms)] if entities else []
    frames = []
    narrow = _charted_cells(inputs, set(chart_of), inputs_clean) if chart_of else None
    if narrow is not None:
        # a literal map, not a join: a broadcast of even a tiny table is one more Spark job
        chart_id = F.expr("map(" + ", ".join(f"{s}, {c}" for s, c in chart_of.items()) + ")")[F.col("series")]
        frames.append(narrow.select(chart_id.alias("chart_id"), "ts_ms", "rate", "throttle_ms"))
    canonical = inputs.scanned["canonical"] if "canonical" in inputs.scanned else _canonical(inputs)
    if canonical is not None:
        frames.append(transforms.chart_cells(transforms.valid_samples(canonical), inputs.spark, entities))
    cells = _union(frames)
    if cells is None or not entities:
        return []
    # ordered here, not by Spark: a sort is one more operator for a cold JVM to load and plan
    return sorted(transforms.chart_buckets(cells, bucket_ms).collect(), key=lambda p: (p["chart_id"], p["bucket_ms"]))


def _charted_cells(inputs: Inputs, series: set[int], inputs_clean: bool) -> DataFrame | None:
    """The good JmxTool cells of ``series``: from the statistics pass's frame when it was kept."""
    scanned = inputs.scanned.get("narrow")
    if scanned is None:
        return _narrow(inputs, series, check_cells=not inputs_clean)
    is_charted = ~F.col("_bad") & F.col("series").isin(*sorted(series))
    return scanned.filter(is_charted)
