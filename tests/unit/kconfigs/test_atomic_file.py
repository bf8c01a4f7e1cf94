"""write_file_atomically: the old content or the new, never half; no temp file left behind."""

from __future__ import annotations

import os
import stat
import threading

import pytest

from kconfigs.atomic_file import write_file_atomically


def test_replaces_text_and_bytes(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    write_file_atomically(str(target), "time_ms,throttle_ms\r\n1,0\n")
    assert target.read_bytes() == b"time_ms,throttle_ms\r\n1,0\n"  # written as given, UTF-8
    write_file_atomically(str(target), b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_failed_rename_keeps_the_target_and_removes_the_temp_file(tmp_path):
    target = tmp_path / "taken"
    target.mkdir()
    (target / "keep").write_text("x")
    with pytest.raises(OSError):
        write_file_atomically(str(target), "new")
    assert (target / "keep").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_an_unwritable_directory_raises_and_writes_nothing(tmp_path):
    missing = tmp_path / "no" / "such" / "dir" / "f.toml"
    with pytest.raises(OSError):
        write_file_atomically(str(missing), "x")
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_is_written_through_not_replaced(tmp_path):
    # the same path as /dev/null or /dev/stdout: a rename would turn the node into a regular file
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_file_atomically(str(fifo), "through\n")
    reader.join(10)
    assert received == [b"through\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]
