"""Small runs are quick: something is on stderr within 1 s of ``kconfigs analyze`` starting (on a
terminal or not; nothing with --quiet), and a report over a few thousand samples costs at most a
bare Spark session start (the same session options, measured in the same test) + 3 s, the 3 s
growing with the machine's slowness past that of the machine the target was set on."""

from __future__ import annotations

import concurrent.futures
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.dumps import generated_dump

pytestmark = pytest.mark.integration
FIRST_OUTPUT_S = 1.0
OVERHEAD_S = 3.0
#: a bare session's start+stop where the +3 s target was set (benchmarks/RESULTS.md, small runs:
#: a median of 3.3 s with the archive; compared here with the quickest run, which is stricter)
REFERENCE_BARE_S = 3.3


@pytest.fixture(scope="module")
def small_dump(tmp_path_factory) -> Path:
    return generated_dump(tmp_path_factory.mktemp("small") / "dump", samples=4000, entities=10)


def _seconds_to_first_stderr_byte(argv: list[str], terminal: bool) -> tuple[float, bytes]:
    """Start ``argv``; seconds until its stderr has a byte (then the process is stopped)."""
    if terminal:
        reader, writer = pty.openpty()
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=writer, stdin=subprocess.DEVNULL)
        os.close(writer)
    else:
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        reader = process.stderr.fileno()
    started = time.monotonic()
    try:
        ready, _, _ = select.select([reader], [], [], 30)
        elapsed = time.monotonic() - started
        return elapsed, os.read(reader, 200) if ready else b""
    finally:
        process.kill()
        process.wait(timeout=30)
        if terminal:
            os.close(reader)


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_progress_is_on_stderr_within_one_second(small_dump, terminal):
    argv = [sys.executable, "-m", "kconfigs", "analyze", "report", str(small_dump), "--master", "local[2]"]
    elapsed, first = _seconds_to_first_stderr_byte(argv, terminal)
    assert first, "nothing on stderr"
    assert elapsed < FIRST_OUTPUT_S, (elapsed, first)
    if not terminal:
        assert first.startswith(b"kconfigs analyze: report: starting")


def _timed(argv: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    return time.monotonic() - started, result


def _env_with_home(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KCONFIGS_")}
    env["KCONFIGS_HOME"] = str(home)
    return env


TERMINAL_TIMEOUT_S = 600


def _on_a_terminal(argv: list[str], env: dict) -> tuple[int, str]:
    """Run ``argv`` with stdin, stdout and stderr on a new pseudo-terminal (as an operator at a
    shell, or under tmux or script): its exit code and everything the terminal showed."""
    master, slave = pty.openpty()
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    shown, deadline = b"", time.monotonic() + TERMINAL_TIMEOUT_S
    poller = select.poll()  # not select: late in a long session the descriptor can be above 1024
    poller.register(master, select.POLLIN)
    while time.monotonic() < deadline:
        if poller.poll(200):
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    process.wait(timeout=60)
    os.close(master)
    return process.returncode, shown.decode("utf-8", "replace")


def _terminal_env(home: Path) -> dict:
    return {**_env_with_home(home), "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "50"}


@pytest.fixture(scope="module")
def prepared_home(tmp_path_factory) -> Path:
    """A kconfigs home whose cache holds the driver's class-data archive (``analyze prepare``,
    run on a terminal: its progress is drawn live there)."""
    home = tmp_path_factory.mktemp("prepared") / "home"
    code, shown = _on_a_terminal([sys.executable, "-m", "kconfigs", "analyze", "prepare"], _terminal_env(home))
    assert code == 0, shown
    (archive,) = (home / "cache").glob("spark-driver-*.jsa")
    assert f"Wrote {archive} (" in shown
    assert "small report on a generated" in shown  # the progress, on the terminal
    assert "Traceback" not in shown
    return home


def _analyze_argv(command: str, dump: Path, out: Path) -> list[str]:
    quotas = str(dump / "quotas.toml")
    extra = {
        "report": [str(dump), "--quotas", quotas],
        "recommend": [str(dump), "--quotas", quotas, "--write", str(out / "plan.toml")],
        "whatif": [str(dump), "--quotas", quotas, "--proposed", quotas],
        "generate": ["--samples", "400", "--out", str(out / "generated")],
    }[command]
    master = [] if command == "generate" else ["--master", "local[2]"]
    return [sys.executable, "-m", "kconfigs", "analyze", command, *extra, *master]


#: what each command prints on stdout when it worked (its result, not its progress)
_RESULT_SHOWN = {
    "report": "Top 10 entities",
    "recommend": "Plan: ",
    "whatif": "would be throttled under the proposed quotas",
    "generate": '"entities": 20',
}


@pytest.mark.parametrize("command", ["report", "recommend", "whatif", "generate"])
def test_every_command_works_on_a_terminal(small_dump, prepared_home, tmp_path, command):
    """At a terminal the progress is drawn live, from Spark's status tracker: after the session
    stopped, the last progress step asked a stopped context for it and every report failed
    ('NoneType' object has no attribute 'statusTracker'), with no result and exit 1."""
    code, shown = _on_a_terminal(_analyze_argv(command, small_dump, tmp_path), _terminal_env(prepared_home))
    assert (code, "Traceback" in shown, "Error" in shown) == (0, False, False), shown
    assert _RESULT_SHOWN[command] in shown, shown
    if command != "generate":  # generate has no Spark and no progress
        # the spinner draws the step current at each refresh: a quick one (starting Spark on a
        # prepared home) may fall between two, reading the inputs lasts through several
        assert "reading 2 input(s)" in shown, shown
        assert "Quotas in force: file " in shown


def _report_argv(dump: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kconfigs",
        "analyze",
        "report",
        str(dump),
        "--master",
        "local[2]",
        "--format",
        "json",
        "--quiet",
    ]


#: the session the command starts for a small input (spark_session, same options and archive)
_BARE_CODE = (
    "from kconfigs_analysis.session import SessionOptions, spark_session\n"
    "with spark_session(SessionOptions(master='local[2]', small_input=True)):\n    pass\n"
)
PAIRS = 3


def test_small_report_costs_at_most_a_bare_session_plus_three_seconds(small_dump, prepared_home):
    # Pairs run back to back (bare, then report) so both see the same load on a shared machine.
    # Each side's cost is its quickest run: what else the machine does only ever adds time, so
    # the minimum is the best estimate of a run's own cost (on a noisy machine a bare session
    # took 3.9-5.8 s and a report 5.9-8.4 s, idle, one after another).
    # The report's extra seconds are JVM work like the session start itself, so both grow alike
    # on a slower machine: where a bare session takes longer than REFERENCE_BARE_S, the 3 s grow
    # in proportion (a CI machine's bare sessions took 5.9-7.3 s, and a report 9.0-9.8 s).
    env = _env_with_home(prepared_home)
    bare_runs, report_runs = [], []
    for _ in range(PAIRS):
        bare_s, bare = _timed([sys.executable, "-c", _BARE_CODE], env)
        report_s, result = _timed(_report_argv(small_dump), env)
        assert bare.returncode == 0, bare.stderr
        assert result.returncode == 0 and result.stderr == "", result.stderr  # --quiet: nothing on stderr
        assert '"samples": 8000' in result.stdout
        bare_runs.append(bare_s)
        report_runs.append(report_s)
    overhead_s = min(report_runs) - min(bare_runs)
    allowed_s = OVERHEAD_S * max(1.0, min(bare_runs) / REFERENCE_BARE_S)
    print(
        f"small report {min(report_runs):.1f} s, bare session {min(bare_runs):.1f} s: +{overhead_s:.1f} s "
        f"(allowed +{allowed_s:.1f} s)"
    )
    assert overhead_s <= allowed_s, f"report runs {report_runs} s, bare sessions {bare_runs} s"


_WARM_UP_CODE = """
from kconfigs_analysis import session
started = []
class Recorded(session.SqlParserWarmUp):
    def __init__(self):
        super().__init__()
        started.append(self)
session.SqlParserWarmUp = Recorded
with session.spark_session(session.SessionOptions(master="local[2]", small_input=True)):
    (warm_up,) = started
    assert warm_up.parsed.wait(60), f"the SQL parser warm-up failed: {warm_up.error!r}"
"""


def test_a_small_runs_session_warms_the_sql_parser_while_the_jvm_starts(prepared_home):
    _, result = _timed([sys.executable, "-c", _WARM_UP_CODE], _env_with_home(prepared_home))
    assert result.returncode == 0, result.stderr


def _reports_at_once(dump: Path, homes: list[Path]) -> list[subprocess.CompletedProcess]:
    """The small report of ``dump`` under each kconfigs home, run at the same time (these runs
    are compared, not timed)."""
    with concurrent.futures.ThreadPoolExecutor(len(homes)) as pool:
        runs = [pool.submit(_timed, _report_argv(dump), _env_with_home(home)) for home in homes]
        return [run.result()[1] for run in runs]


def test_a_damaged_archive_falls_back_to_the_same_report_and_a_run_creates_no_file(small_dump, prepared_home, tmp_path):
    home = tmp_path / "home"
    reference, with_archive = _reports_at_once(small_dump, [home, prepared_home])
    assert reference.returncode == 0, reference.stderr
    assert not home.exists()  # reads never create files: no cache directory, no archive
    assert with_archive.stdout == reference.stdout
    (archive,) = (prepared_home / "cache").glob("spark-driver-*.jsa")
    whole = archive.read_bytes()
    middle = len(whole) // 2
    damages = (
        whole[:middle],  # cut short (a JDK 17 that mapped it would die of SIGBUS)
        whole[:middle] + bytes(4096) + whole[middle + 4096 :],  # same size, a region zeroed
        bytes(4096) + whole[4096:],  # same size, no header
    )
    homes = [tmp_path / f"damaged-{n}" for n in range(len(damages))]
    for damaged_home, content in zip(homes, damages):
        damaged = damaged_home / "cache" / archive.name  # the name this setup looks for
        damaged.parent.mkdir(parents=True)
        damaged.write_bytes(content)
    for result in _reports_at_once(small_dump, homes):
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert result.stdout == reference.stdout
