"""Replace a file atomically: write a temp file beside it, then rename it over the target, so a
reader (or a crash) sees the old content or the new, never half of it."""

from __future__ import annotations

import contextlib
import os


def write_file_atomically(path: str, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path``; the temp file is removed if anything fails.

    :raises OSError: as the underlying open/write/rename raised it.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
