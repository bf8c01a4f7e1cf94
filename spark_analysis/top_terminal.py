"""``kconfigs top`` on a terminal: a full-screen rich Live view and single-key commands.

Keys are read in cbreak mode (no Enter needed, no echo; Ctrl-C still interrupts) with ``select``
between refreshes, so a key acts at once and a refresh never waits for one.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
import tty
from dataclasses import replace

from kconfigs.clock import MONOTONIC, Clock
from kconfigs_analysis.top_model import SORT_KEYS

#: single keys that pick a sort column
SORT_BY_KEY = {"%": "percent", "r": "rate", "t": "throttle", "u": "user", "c": "client", "k": "kind"}
SORT_CYCLE = list(SORT_KEYS)
ESCAPE, ENTER, BACKSPACES = "\x1b", ("\r", "\n"), ("\x7f", "\b")


@contextlib.contextmanager
def _cbreak(fd: int):
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _read_keys(fd: int, timeout_s: float) -> str:
    """The keys typed since the last read ("" when none came within ``timeout_s``)."""
    ready, _, _ = select.select([fd], [], [], max(timeout_s, 0.0))
    if not ready:
        return ""
    data = os.read(fd, 64).decode("utf-8", errors="replace")
    if not data:
        return "q"  # end of input: quit
    if data.startswith(ESCAPE + "[") or data.startswith(ESCAPE + "O"):
        return ""  # an arrow or function key: not a command here
    return data


def apply_key(options: dict, key: str) -> tuple[dict, bool]:
    """(new screen options, quit?) after ``key``; pure, so the key map is tested without a terminal."""
    options = dict(options)
    if options.get("filter_editing"):
        if key in ENTER:
            options["filter_editing"] = False
        elif key == ESCAPE:
            options.update(filter_editing=False, filter_text="")
        elif key in BACKSPACES:
            options["filter_text"] = options["filter_text"][:-1]
        elif key.isprintable():
            options["filter_text"] += key
        return options, False
    if key == "q":
        return options, True
    if key in ("p", " "):
        options["paused"] = not options.get("paused", False)
    elif key == "s":
        options["sort"] = SORT_CYCLE[(SORT_CYCLE.index(options["sort"]) + 1) % len(SORT_CYCLE)]
    elif key in SORT_BY_KEY:
        options["sort"] = SORT_BY_KEY[key]
    elif key == "/":
        options.update(filter_editing=True, filter_text="")
    elif key == ESCAPE:
        options["filter_text"] = ""
    elif key == "d":
        options["per_source"] = not options.get("per_source", False)
    return options, False


def run_interactive(poller, interval_s: float, screen_options: dict, clock: Clock = MONOTONIC) -> None:
    from rich.console import Console
    from rich.live import Live

    from kconfigs_analysis.top_view import render

    console = Console()
    fd = sys.stdin.fileno()
    options = {"paused": False, "filter_editing": False, **screen_options}
    interval_ms = round(interval_s * 1000)
    screen = poller.poll(clock.now_ms())
    next_poll_ms = clock.now_ms() + interval_ms
    with _cbreak(fd), Live(console=console, screen=True, auto_refresh=False) as live:
        while True:
            frame = replace(screen, refresh_s=interval_s, **options)
            live.update(render(frame, console.size.height), refresh=True)
            for key in _read_keys(fd, (next_poll_ms - clock.now_ms()) / 1000):
                options, done = apply_key(options, key)
                if done:
                    return
            if clock.now_ms() >= next_poll_ms:
                if not options["paused"]:
                    screen = poller.poll(clock.now_ms())
                next_poll_ms = clock.now_ms() + interval_ms
