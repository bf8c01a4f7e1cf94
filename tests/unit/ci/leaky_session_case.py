"""Run only by test_descriptor_check.py (its name is not test_*, so a normal run never collects
it): with LEAK=1 a test leaves a file open past the end of the session."""

from __future__ import annotations

import os

LEFT_OPEN = []


def test_opens_a_file(tmp_path):
    handle = open(tmp_path / "left-open.txt", "w")  # left open on purpose with LEAK=1
    if os.environ.get("LEAK") == "1":
        LEFT_OPEN.append(handle)
    else:
        handle.close()
