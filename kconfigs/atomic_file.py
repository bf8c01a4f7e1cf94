"""Replace a file atomically: write a temp file beside it, then rename it over the target, so a
reader (or a crash) sees the old content or the new, never half of it."""

from __future__ import annotations

import contextlib
import os
import stat


def write_file_atomically(path: str, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path``; the temp file is removed if anything fails.

    :raises OSError: as the underlying open/write/rename raised it.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if _is_special(path):
        # /dev/null, /dev/stdout, a FIFO: renaming over it would replace the device node with a
        # regular file (for /dev/null, breaking every program on the machine); write through it
        with open(path, "wb") as handle:
            handle.write(payload)
        return
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _is_special(path: str) -> bool:
    """``path`` exists (after symlinks) and is not a regular file."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
