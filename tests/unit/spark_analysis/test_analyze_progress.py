"""Progress is decoration: on a real pseudo-terminal, a step after the Spark session stopped and
a step onto a terminal that went away never raise (the command's result must not be lost)."""

from __future__ import annotations

import os
import pty
import select
import time

from kconfigs_analysis.session import Progress


class StoppedSession:
    """What a stopped SparkSession answers for its context (PySpark sets it to None)."""

    sparkContext = None


def _shown(master: int) -> bytes:
    shown = b""
    while select.select([master], [], [], 0.2)[0]:
        shown += os.read(master, 65536)
    return shown


def test_a_step_after_the_session_stopped_is_shown_without_raising():
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as terminal:
            with Progress(stream=terminal, poll_interval_s=0.01) as progress:
                progress.watch(StoppedSession())
                progress.step("writing the report")  # raised AttributeError: no statusTracker on None
                time.sleep(0.3)  # rich redraws its status line about 12 times a second
            assert b"writing the report" in _shown(master)
    finally:
        os.close(master)
        os.close(slave)


def test_a_step_onto_a_closed_stream_does_not_raise():
    master, slave = pty.openpty()
    os.close(master)
    terminal = os.fdopen(slave, "w")
    progress = Progress(stream=terminal)
    terminal.close()
    progress.step("writing the report")  # a terminal that went away: the result still matters
