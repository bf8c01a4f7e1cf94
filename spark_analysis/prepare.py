"""``kconfigs analyze prepare``: the run that writes the driver's class-data archive.

Small reports over generated dumps of each input format, in one short-run session whose JVM
writes the classes it loaded on exit (class_archive). The archive is written beside its final
name and renamed, with its size in the name, once the JVM has written it whole.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Callable

from kconfigs.errors import KconfigsError

#: inputs the training reports read: each format's reader, as a small run uses it
TRAINING_FORMATS = ("jmxtool", "prometheus", "usage-log")
TRAINING_SAMPLES = 4000


def _training_dumps(directory: str) -> list[str]:
    from kconfigs_analysis.generate import GeneratorSpec, generate

    paths = []
    for fmt in TRAINING_FORMATS:
        out = os.path.join(directory, fmt)
        generate(GeneratorSpec(TRAINING_SAMPLES, out, fmt, entities=10, brokers=2))
        paths.append(out)
    return paths


def _run_training_reports(archive_to: Path, dumps: list[str], master: str, step: Callable[[str], None]) -> None:
    from kconfigs_analysis.jobs import InputArgs, ReportArgs, run_report
    from kconfigs_analysis.session import SessionOptions, spark_session

    options = SessionOptions(master=master, small_input=True, archive_classes_to=str(archive_to))
    step(f"starting Spark ({master}) with a class-data dump on exit")
    with spark_session(options) as spark:
        for dump in dumps:
            step(f"small report on a generated {os.path.basename(dump)} dump")
            run_report(spark, ReportArgs(InputArgs([dump])))
        step("writing the class-data archive (the JVM does it on exit)")


def prepare_archive(step: Callable[[str], None], master: str = "local[*]") -> tuple[Path, int]:
    """Write this setup's archive (replacing older ones); its path and size in bytes.

    :raises KconfigsError: Spark did not start, or its JVM wrote no archive.
    """
    from kconfigs_analysis import class_archive
    from kconfigs_analysis.session import short_run_driver

    directory = class_archive.cache_dir()
    digest = short_run_driver().digest
    partial = directory / f".{class_archive.ARCHIVE_PREFIX}{digest}.{os.getpid()}.partial"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="kconfigs-prepare-") as work:
            _run_training_reports(partial, _training_dumps(work), master, step)
        size_bytes = partial.stat().st_size if partial.is_file() else 0
        if not size_bytes:
            raise KconfigsError(f"The driver JVM wrote no class-data archive to {partial}")
        final = class_archive.archive_path(digest, size_bytes)
        os.replace(partial, final)
        for stale in class_archive.stale_archives(final):
            stale.unlink(missing_ok=True)
        return final, size_bytes
    except OSError as err:
        raise KconfigsError(f"Cannot write the class-data archive in {directory}: {err.strerror}") from None
    finally:
        with contextlib.suppress(OSError):  # e.g. the directory itself could not be made
            partial.unlink(missing_ok=True)
