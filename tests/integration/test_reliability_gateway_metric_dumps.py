"""Hostile input (docs/RELIABILITY.md section 2),
metric dumps for ``kconfigs analyze``: 1,200 malformed lines (seeded) mixed into
JmxTool CSV, Prometheus and gateway usage-log files are each counted as malformed (``_bad``, with
their text) and never crash a reader; the valid lines around them are still read. One Spark
session, one file per format with many lines each."""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dumps"
SEED = 88
BAD_PER_FORMAT = 400


def _word(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(string.ascii_letters) for _ in range(n))


def bad_jmx_line(rng: random.Random, cells: int) -> str:
    return rng.choice(
        [
            lambda: "garbage-" + _word(rng) + "," + _word(rng),
            lambda: "1714557600000," + ",".join("1.0" for _ in range(rng.randint(0, cells - 1))),  # too few cells
            lambda: "1714557600000," + ",".join(rng.choice(["abc", "1.0.0", "--1", "0x10", ""]) for _ in range(cells)),
            lambda: "1714557600000" + ",1.0" * (cells + rng.randint(1, 5)),  # too many cells
            lambda: "\u00e9\u00e8" + _word(rng) + ";" + str(rng.random()),
            lambda: "2024-13-45 99:99:99" + ",1.0" * cells,  # an impossible date
        ]
    )()


def bad_prometheus_line(rng: random.Random) -> str:
    return rng.choice(
        [
            lambda: 'kafka_server_produce_byte_rate{user="' + _word(rng) + '"',  # no closing brace, no value
            lambda: 'kafka_server_produce_byte_rate{user="a",client_id="b"} v_' + _word(rng),  # not a number
            lambda: '{user="' + _word(rng) + '"} 12.0',  # no metric name
            lambda: "v_" + _word(rng, 20),  # a name alone
            lambda: "kafka_server_fetch_byte_rate 1.0 2.0 3.0 " + _word(rng),
        ]
    )()


def bad_usage_line(rng: random.Random, valid: str) -> str:
    record = json.loads(valid)
    return rng.choice(
        [
            lambda: "not json " + _word(rng),
            lambda: valid[: rng.randint(1, len(valid) - 2)],  # truncated
            lambda: json.dumps({**record, "window_ms": 0}),
            lambda: json.dumps({**record, "kind": "bogus-" + _word(rng, 3)}),
            lambda: json.dumps({**record, "value": -rng.randint(1, 10**6)}),
            lambda: json.dumps({**record, "ts_ms": "yesterday"}),
            lambda: json.dumps({**{k: v for k, v in record.items() if k != "ts_ms"}, "note": _word(rng)}),
        ]
    )()


def _valid_usage(line: str) -> bool:
    """The fixture holds a deliberately malformed line too: keep only well-formed records."""
    try:
        record = json.loads(line)
    except ValueError:
        return False
    kinds = {"produce", "fetch", "request", "controller_mutation", "connection", "producer_id"}
    return (
        isinstance(record.get("ts_ms"), int)
        and record.get("window_ms", 0) > 0
        and record.get("value", -1) >= 0
        and record.get("kind") in kinds
    )


def write_hostile_dumps(workdir: Path, seed: int = SEED) -> dict[str, tuple[Path, set[str], int]]:
    """One file per format: the fixture's valid lines repeated, with malformed lines between them.
    Returns format -> (path, malformed lines written, valid data lines written)."""
    rng = random.Random(seed)
    jmx_lines = (FIXTURES / "broker-1.jmx.csv").read_text().splitlines()
    header_at = next(i for i, l in enumerate(jmx_lines) if l.startswith('"time"'))
    cells = jmx_lines[header_at].count('","')  # number of columns after "time"
    jmx_row = re.compile(
        r"^[0-9]+(,(-?[0-9]+(\.[0-9]+)?(E-?[0-9]+)?|NaN|-?Infinity))*$"
    )  # the fixture has bad rows too
    jmx_valid = [l for l in jmx_lines[header_at + 1 :] if jmx_row.match(l.strip()) and l.count(",") == cells]
    prom_valid = [
        l for l in (FIXTURES / "default-naming.prom").read_text().splitlines() if l.strip() and not l.startswith("#")
    ]
    usage_valid = [l for l in (FIXTURES / "gateway-usage.jsonl").read_text().splitlines() if _valid_usage(l)]
    plans = {
        "jmxtool": (jmx_lines[: header_at + 1], jmx_valid, lambda: bad_jmx_line(rng, cells), "hostile.jmx.csv"),
        "prometheus": ([], prom_valid, lambda: bad_prometheus_line(rng), "hostile.prom"),
        "usage-log": ([], usage_valid, lambda: bad_usage_line(rng, rng.choice(usage_valid)), "hostile.jsonl"),
    }
    written = {}
    for fmt, (head, valid, make_bad, name) in plans.items():
        body, bad, good = list(head), set(), 0
        while len(bad) < BAD_PER_FORMAT:
            line = make_bad()
            if line.strip() and line not in bad:
                bad.add(line)
                body.append(line)
            body.append(rng.choice(valid))
            good += 1
        path = workdir / name
        path.write_text("\n".join(body) + "\n")
        written[fmt] = (path, bad, good)
    return written


def test_malformed_metric_dump_lines_are_counted_never_fatal(tmp_path):
    from pyspark.sql import functions as F

    from kconfigs_analysis.dumpfiles import ReadOptions, dump_file
    from kconfigs_analysis.readers import load_dumps
    from kconfigs_analysis.session import SessionOptions, spark_session

    written = write_hostile_dumps(tmp_path)
    with spark_session(SessionOptions(master="local[1]", shuffle_partitions=2)) as spark:
        for fmt, (path, bad_lines, good_lines) in written.items():
            # the Prometheus file repeats timestamp-less lines: appended scrapes, which need their interval
            frame = load_dumps(spark, [dump_file(str(path), fmt)], ReadOptions(scrape_interval_ms=15_000))
            bad = {row["_line"].strip() for row in frame.filter(F.col("_bad")).select("_line").collect()}
            parsed = frame.filter(~F.col("_bad")).count()
            assert bad == {l.strip() for l in bad_lines}, (fmt, sorted(bad ^ {l.strip() for l in bad_lines})[:5])
            # the valid lines around them still count (usage-log lines of one entity and window are
            # summed into one sample, so repeated copies of the fixture's lines merge there)
            assert parsed >= (good_lines if fmt != "usage-log" else 1), (fmt, parsed, good_lines)
    assert sum(len(b) for _p, b, _g in written.values()) == 3 * BAD_PER_FORMAT
