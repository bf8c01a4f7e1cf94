"""The metric inputs named on a command line, checked before Spark starts.

Which files the DUMP arguments name (files, globs, directories), what each file is (its format,
or what else it looks like: a quota file, a note), and outputs that would replace one of them.
No Spark here: a wrong input is one line within a second, not after a JVM has started.
"""

from __future__ import annotations

import glob
import json
import os
import re

from kconfigs.errors import UsageError
from kconfigs_analysis import dumpfiles
from kconfigs_analysis import metric_names as names

FORMATS = ("jmxtool", "prometheus", "usage-log")
TRACE_HEADER = "time_ms,user,client_id,ip,kind,value"  # kconfigs simulate --trace (what-if only)
SNIFF_LINES = 50
FORMAT_NAMES = {"jmxtool": "JmxTool", "prometheus": "Prometheus", "usage-log": "gateway usage-log", "trace": "trace"}

#: in a directory, only these are read (a generated dump sits next to quotas.toml / truth.json),
#: also compressed (dumpfiles.COMPRESSED_SUFFIXES); files named explicitly are always read.
#: Whether a file is compressed is decided by its content, never by its name.
DUMP_SUFFIXES = (".csv", ".tsv", ".prom", ".txt", ".metrics", ".jsonl", ".ndjson", ".log")

#: a Prometheus text sample (``name{labels} value [ts]``), a promtool tsdb dump line
#: (``{labels} value ts``) or a ``# HELP`` / ``# TYPE`` line
_PROMETHEUS_LINE = re.compile(
    r"^(?:# (?:HELP|TYPE) \S+.*|[A-Za-z_:][A-Za-z0-9_:]*(?:\{.*\})?\s+\S+(?:\s+\S+)?|\{.*\}\s+\S+(?:\s+\S+)?)$"
)
#: a quota file's first table in TOML, YAML or JSON (docs/quota-file.md)
_QUOTA_FILE_LINE = re.compile(r'^(?:\[\[quota\]\]|quota:|-\s+entity:|\{\s*"quota"\s*:)')


def expand_inputs(paths: list[str]) -> list[str]:
    """Files named by paths, globs and directories (recursively), sorted. :raises UsageError:"""
    files: list[str] = []
    for path in paths:
        matches = sorted(glob.glob(path)) if glob.has_magic(path) else [path]
        if not matches or not all(os.path.exists(m) for m in matches):
            raise UsageError(f"Input path not found: {path}")
        for match in matches:
            if os.path.isdir(match):
                for root, _, children in os.walk(match):
                    files.extend(os.path.join(root, c) for c in children if _is_dump_name(c))
            else:
                files.append(match)
    if not files:
        raise UsageError(f"No input files under: {' '.join(paths)}")
    return sorted(set(files))


def _is_dump_name(name: str) -> bool:
    stem = name
    for suffix in dumpfiles.COMPRESSED_SUFFIXES:
        stem = stem.removesuffix(suffix)
    return not name.startswith(".") and stem.endswith(DUMP_SUFFIXES)


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def recognised_format(lines: list[str]) -> str | None:
    """The dump format these first (non-blank, stripped) lines are in, or None."""
    if any(names.split_jmxtool_header(line) for line in lines):
        return "jmxtool"
    if not lines:
        return None
    if lines[0].replace(" ", "") == TRACE_HEADER:
        return "trace"
    if lines[0].startswith('{"') or _is_json_object(lines[0]):
        return "usage-log"
    samples = [line for line in lines if not line.startswith("#") or _PROMETHEUS_LINE.match(line)]
    if samples and all(_PROMETHEUS_LINE.match(line) for line in samples[:5]):
        return "prometheus"
    return None


def _head(path: str) -> list[str]:
    return [line.strip() for line in dumpfiles.head_lines(path, SNIFF_LINES) if line.strip()]


def file_format(path: str, given: str | None = None) -> str:
    """The format of one input file, checked against what it holds. :raises UsageError: a quota
    file, a file in no dump format, or one in a format other than ``given`` (``--input-format``)."""
    lines = _head(path)
    if any(_QUOTA_FILE_LINE.match(line) for line in lines[:SNIFF_LINES]):
        raise UsageError(f"{path} is a quota file, not a metric dump: give it with --quotas (whatif: --proposed)")
    found = recognised_format(lines)
    if given is not None and found is not None and found != given:
        raise UsageError(
            f"{path} looks like {FORMAT_NAMES[found]}, not {FORMAT_NAMES[given]}: "
            f"use --input-format {found}, or leave --input-format out"
        )
    if given is not None:
        return given
    if found is None:
        first = lines[0][:60] if lines else ""
        what = f"first line {first!r}" if lines else "it is empty"
        raise UsageError(
            f"{path} is not a metric dump ({what}): give JmxTool, Prometheus or gateway usage-log files, "
            f"or --input-format {'|'.join(FORMATS)}"
        )
    return found


def check_inputs(paths: list[str], given: str | None = None) -> list[tuple[str, str]]:
    """(file, format) of every file the DUMP arguments name. :raises UsageError:"""
    return [(path, file_format(path, given)) for path in expand_inputs(paths)]
