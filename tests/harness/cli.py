"""Run the ``kconfigs`` entry point in-process, as the console script would, capturing its output."""

from __future__ import annotations

import contextlib
import io

from kconfigs.__main__ import main


def run_main(*argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``kconfigs ARGV``. The code is the process's: ``sys.exit()``
    and a normal return are 0, a non-int exit value (a message) is 1."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
            code = 0
        except SystemExit as exit_:
            code = 0 if exit_.code is None else exit_.code if isinstance(exit_.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def created_store(path):
    """``path`` made a new, empty embedded store by ``kconfigs init`` (a write to a named store
    that does not exist is refused), for a test that writes there next."""
    code, _, err = run_main("init", "--store", str(path))
    assert code == 0, err
    return path
