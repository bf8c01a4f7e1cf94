"""Dump files on disk: compression by content, cut last lines, scrape times in file names."""

import bz2
import gzip
import os

import pytest
import zstandard

from kconfigs.errors import UsageError
from kconfigs_analysis import dumpfiles, readers

HEADER = (
    '"time","kafka.server:type=Produce,client-id=app:byte-rate","kafka.server:type=Produce,'
    'client-id=app:throttle-time"\n'
)
JMX = HEADER + "1714557600000,1000.0,NaN\n1714557601000,2000.0,NaN\n"
COMPRESS = {"gzip": gzip.compress, "zstd": lambda b: zstandard.ZstdCompressor().compress(b), "bz2": bz2.compress}


@pytest.mark.parametrize("codec", sorted(COMPRESS))
@pytest.mark.parametrize("name", ["broker-1.jmx.csv.gz", "broker-1.jmx.csv", "broker-1.jmx.csv.zst", "broker-1"])
def test_compressed_dumps_are_known_by_content_whatever_their_name(tmp_path, codec, name):
    path = tmp_path / name
    path.write_bytes(COMPRESS[codec](JMX.encode()))
    assert dumpfiles.compression_of(str(path)) == codec
    assert readers.sniff_format(str(path)) == "jmxtool"
    dump = readers.classify_inputs([str(path)])[0]
    assert (dump.format, dump.path) == ("jmxtool", str(path))
    with open(dump.read_path, encoding="utf-8") as plain:
        assert plain.read() == JMX
    assert not dump.read_path.endswith((".gz", ".zst", ".bz2"))  # Spark must apply no codec of its own


def test_a_directory_finds_compressed_dumps_by_suffix_and_reads_them_by_content(tmp_path):
    (tmp_path / "broker-1.jmx.csv.zst").write_bytes(COMPRESS["zstd"](JMX.encode()))
    (tmp_path / "broker-2.prom.gz").write_bytes(gzip.compress(b'kafka_server_Produce_byte_rate{client_id="a"} 1.0\n'))
    (tmp_path / "quotas.toml").write_text("")
    files = readers.classify_inputs([str(tmp_path)])
    assert [(os.path.basename(f.path), f.format) for f in files] == [
        ("broker-1.jmx.csv.zst", "jmxtool"),
        ("broker-2.prom.gz", "prometheus"),
    ]


def test_plain_files_are_read_in_place(tmp_path):
    path = tmp_path / "b.jmx.csv"
    path.write_text(JMX)
    assert readers.classify_inputs([str(path)])[0].read_path == str(path)


def test_a_corrupt_compressed_file_is_one_line(tmp_path):
    path = tmp_path / "b.prom.gz"
    path.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    with pytest.raises(UsageError, match=r"^Cannot read .*b\.prom\.gz"):
        readers.classify_inputs([str(path)])


def test_a_last_line_without_newline_is_reported_as_cut(tmp_path):
    cut, whole = tmp_path / "cut.prom", tmp_path / "whole.prom"
    cut.write_text('a{client_id="x"} 1.0 1714557600000\na{client_id="x"} 2.0 17145576')
    whole.write_text('a{client_id="x"} 1.0 1714557600000\n')
    assert dumpfiles.cut_last_line(str(cut)) == 'a{client_id="x"} 2.0 17145576'
    assert dumpfiles.cut_last_line(str(whole)) is None


def test_scrape_times_in_file_names():
    assert dumpfiles.scrape_time_of("/d/scrape-1714557600.prom") == ("scrape", 1714557600000)
    assert dumpfiles.scrape_time_of("/d/scrape-1714557600123.prom.gz") == ("scrape", 1714557600123)
    assert dumpfiles.scrape_time_of("/d/b1_20240501T100000Z.prom") == ("b1", 1714557600000)
    assert dumpfiles.scrape_time_of("/d/b1-2024-05-01T10:00:00.txt") == ("b1", 1714557600000)
    assert dumpfiles.scrape_time_of("/metrics/1714557600.prom") == ("metrics", 1714557600000)
    # broker numbers and sequence numbers are not times
    assert dumpfiles.scrape_time_of("/d/broker-1.prom") is None
    assert dumpfiles.scrape_time_of("/d/scrape-0001.prom") is None
    assert dumpfiles.scrape_time_of("/d/b-0000000001.prom") is None  # 10 digits, but 1970


def test_numbered_files_written_at_a_steady_pace_are_scrapes_not_brokers():
    t = 1_714_557_600_000
    loop = [(f"/d/scrape-{i:04d}.prom", t + 15_000 * i) for i in range(4)]
    assert dumpfiles.numbered_scrapes(loop) == ("scrape-<n>.prom", 4, 15.0)
    # brokers dumped together, or one after another as fast as they answer
    assert dumpfiles.numbered_scrapes([(f"/d/broker-{i}.prom", t + 300 * i) for i in range(1, 6)]) is None
    assert (
        dumpfiles.numbered_scrapes([(f"/d/broker-{i}.prom", t + g) for i, g in enumerate((0, 6000, 7000, 30000))])
        is None
    )
    assert dumpfiles.numbered_scrapes(loop[:2]) is None  # two files: too few to tell
