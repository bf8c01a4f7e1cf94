"""Dump files on disk: compression found by content, the plain text Spark reads, a cut last line.

Spark picks a codec from the file *name* (``.gz``, ``.bz2``) and has no usable zstd reader
without Hadoop's native library, so a ``.jmx.csv.gz`` renamed, a gzip saved as ``.prom`` or a
``.zst`` would be read as binary garbage (and sniffed as the wrong format). Each compressed
input is therefore decompressed once, by its magic bytes, into a private temporary directory
that is removed when the process exits; plain files are read where they are.
"""

from __future__ import annotations

import atexit
import bz2
import datetime
import gzip
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import IO

from kconfigs.errors import UsageError

#: magic bytes -> codec (gzip RFC 1952, zstd RFC 8878 frame, bzip2 "BZh")
MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"BZh", "bz2"))
#: name endings of compressed files (stripped to find the dump's own suffix)
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".zst", ".zstd")
#: samples stamped later than this after the file was last written cannot be real
FUTURE_SLACK_MS = 24 * 3600 * 1000
#: epoch ms before 2001-09-09 (fewer than 13 digits): a timestamp cut short, not a Kafka sample
MIN_PLAUSIBLE_TS_MS = 1_000_000_000_000
_TAIL_BYTES = 65536
_scratch: list[str] = []


@dataclass(frozen=True)
class DumpFile:
    """One input: its name as given, its format, and the plain-text file Spark reads.

    ``cut_tail``: the last line's text when the file does not end with a newline (both JmxTool
    and the Prometheus text format end every line with one, so such a line was cut short and
    a number in it may have lost digits); ``max_ts_ms``: the latest plausible sample time.
    """

    path: str
    format: str
    read_path: str
    mtime_ms: int
    cut_tail: str | None = None

    @property
    def max_ts_ms(self) -> int:
        return self.mtime_ms + FUTURE_SLACK_MS


@dataclass(frozen=True)
class ReadOptions:
    """How to read the inputs' times.

    ``jmx_date_format``: JmxTool's ``--date-format`` pattern (None: epoch ms, else
    ``yyyy-MM-dd HH:mm:ss``); ``timezone``: the zone such times were written in (JmxTool formats
    in the JVM's local zone; None = this machine's); ``scrape_interval_ms``: the period of scrapes
    appended to one file without timestamps (``curl >> file`` in a loop).
    """

    jmx_date_format: str | None = None
    timezone: str | None = None
    scrape_interval_ms: int | None = None


def machine_timezone() -> str:
    """This machine's time zone: ``$TZ``, else the zone /etc/localtime links to, else its offset."""
    if os.environ.get("TZ", "").strip():
        return os.environ["TZ"].strip().lstrip(":")
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        target = ""
    if "/zoneinfo/" in target:
        return target.split("/zoneinfo/", 1)[1]
    offset = time.strftime("%z")  # e.g. +0200
    return f"{offset[:3]}:{offset[3:]}" if offset else "UTC"


def compression_of(path: str) -> str | None:
    """``gzip`` / ``zstd`` / ``bz2`` from the first bytes, or None. :raises UsageError:"""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError as err:
        raise UsageError(f"Cannot read {path}: {err.strerror}") from None
    return next((codec for magic, codec in MAGIC if head.startswith(magic)), None)


def open_binary(path: str) -> IO[bytes]:
    """The file's decompressed bytes. :raises UsageError: unreadable or zstandard missing."""
    codec = compression_of(path)
    if codec == "gzip":
        return gzip.open(path, "rb")
    if codec == "bz2":
        return bz2.open(path, "rb")
    if codec == "zstd":
        try:
            import zstandard
        except ImportError:
            raise UsageError(f"{path} is zstd-compressed: pip install zstandard (or decompress it)") from None
        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
    return open(path, "rb")


def _read_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "this file cannot be read/decompressed" (zstandard has its own)."""
    try:
        from zstandard import ZstdError
    except ImportError:
        return (OSError, EOFError)
    return (OSError, EOFError, ZstdError)


def head_lines(path: str, count: int) -> list[str]:
    """The first ``count`` lines (decompressed). :raises UsageError:"""
    try:
        with open_binary(path) as raw:
            lines = []
            for line in _lines(raw):
                lines.append(line.decode("utf-8", errors="replace"))
                if len(lines) == count:
                    break
            return lines
    except _read_errors() as err:
        raise UsageError(f"Cannot read {path}: {getattr(err, 'strerror', None) or err}") from None


def _lines(raw: IO[bytes]):
    buffer = b""
    while chunk := raw.read(65536):
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        yield from (line + b"\n" for line in complete)
    if buffer:
        yield buffer


def scratch_dir() -> str:
    """A private temporary directory of this process, removed when it exits."""
    if not _scratch:
        _scratch.append(tempfile.mkdtemp(prefix="kconfigs-analyze-"))
        atexit.register(shutil.rmtree, _scratch[0], True)
    return _scratch[0]


def file_stem(path: str) -> str:
    """The file name up to its first dot: the broker a dump came from (``broker-1.jmx.csv``)."""
    return os.path.basename(path).split(".")[0] or path


def _plain_name(path: str) -> str:
    name = os.path.basename(path)
    for suffix in COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


def plain_copy(path: str) -> str:
    """The path Spark reads: ``path`` itself when plain text under a plain name, else a plain
    copy (decompressed, named without the codec suffix, so Spark applies no codec of its own)."""
    if compression_of(path) is None and _plain_name(path) == os.path.basename(path):
        return path
    directory = tempfile.mkdtemp(dir=scratch_dir())
    target = os.path.join(directory, _plain_name(path))
    try:
        with open_binary(path) as source, open(target, "wb") as sink:
            shutil.copyfileobj(source, sink, 1 << 20)
    except _read_errors() as err:
        raise UsageError(f"Cannot decompress {path}: {getattr(err, 'strerror', None) or err}") from None
    return target


#: a line ends at LF, CR or CR LF, as in Hadoop's LineRecordReader (Spark's text source)
_LINE_END = re.compile(rb"\r\n|\r|\n")
_UTF8_BOM = b"\xef\xbb\xbf"


def text_lines(data: bytes) -> list[bytes]:
    """The lines Spark's text source reads from ``data``: split at LF, CR or CR LF, a UTF-8 byte
    order mark at the start dropped, no empty line after a final line end. Pure."""
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    lines = _LINE_END.split(data)
    if lines[-1] == b"":
        lines.pop()  # the text after the last line end, when there is none
    return lines


def file_lines(read_path: str) -> list[bytes]:
    """:func:`text_lines` of a plain file. :raises UsageError: it cannot be read."""
    try:
        with open(read_path, "rb") as handle:
            return text_lines(handle.read())
    except _read_errors() as err:
        raise UsageError(f"Cannot read {read_path}: {getattr(err, 'strerror', None) or err}") from None


def cut_last_line(read_path: str) -> str | None:
    """The last line's text (stripped) if the file does not end with a newline, else None."""
    size = os.path.getsize(read_path)
    if size == 0:
        return None
    with open(read_path, "rb") as handle:
        handle.seek(max(0, size - _TAIL_BYTES))
        tail = handle.read()
    if tail.endswith(b"\n"):
        return None
    return tail.rsplit(b"\n", 1)[-1].decode("utf-8", errors="replace").strip() or None


def dump_file(path: str, fmt: str) -> DumpFile:
    """Describe one input: plain copy if compressed, modification time, a cut last line."""
    read_path = plain_copy(path)
    return DumpFile(path, fmt, read_path, int(os.path.getmtime(path) * 1000), cut_last_line(read_path))


#: a scrape time at the end of a file name: epoch seconds or ms, or a compact/ISO date-time (UTC)
_NAME_EPOCH_RE = re.compile(r"^(?P<prefix>.*?)[-_.@]?(?P<epoch>\d{13}|\d{10})$")
_NAME_DATE_RE = re.compile(
    r"^(?P<prefix>.*?)[-_.@]?(?P<date>\d{4}-?\d{2}-?\d{2})[T_-]?(?P<time>\d{2}[:-]?\d{2}[:-]?\d{2})Z?$"
)
#: name endings that are not part of the scrape's name (compression, then the dump suffix)
_DUMP_NAME_SUFFIXES = (".prom", ".txt", ".metrics", ".out")


def scrape_time_of(path: str) -> tuple[str, int] | None:
    """``(source, epoch ms)`` for a file named after its scrape time, e.g. ``scrape-1714557600.prom``
    (one file per scrape, as ``curl -o scrape-$(date +%s).prom`` in a loop writes), else None.

    The source is the name without the time (``scrape``), or the directory's name when nothing
    is left. A time before 2001 (fewer than 13 digits in ms) is not taken for one.
    """
    name = _plain_name(path)
    for suffix in _DUMP_NAME_SUFFIXES:
        name = name.removesuffix(suffix)
    match = _NAME_EPOCH_RE.match(name)
    if match:
        digits = match.group("epoch")
        ts_ms = int(digits) * (1000 if len(digits) == 10 else 1)
    else:
        match = _NAME_DATE_RE.match(name)
        if not match:
            return None
        stamp = re.sub(r"\D", "", match.group("date") + match.group("time"))
        moment = datetime.datetime.strptime(stamp, "%Y%m%d%H%M%S").replace(tzinfo=datetime.timezone.utc)
        ts_ms = int(moment.timestamp() * 1000)
    if ts_ms < MIN_PLAUSIBLE_TS_MS:
        return None
    source = (
        match.group("prefix").rstrip("-_.@") or os.path.basename(os.path.dirname(os.path.abspath(path))) or "scrape"
    )
    return source, ts_ms


#: one file per scrape, numbered rather than timed: at least this many files, written this far apart
NUMBERED_SCRAPES_MIN_FILES = 3
NUMBERED_SCRAPES_MIN_GAP_MS = 5000


def numbered_scrapes(untimed: list[tuple[str, int]]) -> tuple[str, int, float] | None:
    """Timestamp-less files that look like one scrape each, numbered (``scrape-0001.prom``):
    ``(name pattern, files, seconds apart)``, else None.

    Brokers' dumps are named alike too (``broker-1.prom``, ``broker-2.prom``) but are taken
    together; files of one name pattern written at a steady pace, at least 5 s apart, are a
    loop's scrapes. Read as brokers they would give each entity the maximum of n samples.
    ``untimed``: (path, modification time ms) of files without any timestamp nor a time in the name.
    """
    groups: dict[str, list[int]] = {}
    for path, mtime_ms in untimed:
        groups.setdefault(re.sub(r"\d+", "<n>", _plain_name(path)), []).append(mtime_ms)
    for pattern, mtimes in sorted(groups.items()):
        if len(mtimes) < NUMBERED_SCRAPES_MIN_FILES:
            continue
        ordered = sorted(mtimes)
        gaps = [b - a for a, b in zip(ordered, ordered[1:])]
        if min(gaps) >= NUMBERED_SCRAPES_MIN_GAP_MS and max(gaps) <= 1.5 * min(gaps):
            return pattern, len(mtimes), sum(gaps) / len(gaps) / 1000
    return None
