"""kconfigs' own code for Spark executors that do not have kconfigs installed (a real cluster).

The what-if replays each sensor with ``enforcement/`` inside Spark's Python workers, so on a
cluster (``--master spark://...``, YARN, Kubernetes) the executors need ``enforcement``,
``kconfigs`` (its sanitizer) and ``spark_analysis``. The session ships them as one zip of their
``.py`` files (``SparkContext.addPyFile``), built once per process. Compiled modules cannot be
imported from a zip, so executors run enforcement's pure-Python rate (``kconfigs_enforcement.rates``
falls back to it, with the same answers); rbloom (producer-id Bloom filters) is used when the
executors have it and otherwise fails clearly, only when a producer-id replay needs it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
import zipfile

# installed names (the folders enforcement/ and spark_analysis/ install under the project's own)
PACKAGES = ("kconfigs", "kconfigs_enforcement", "kconfigs_analysis")
_built: dict[str, str] = {}


def _package_dir(name: str) -> str:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, name
    return list(spec.submodule_search_locations)[0]


def code_zip(directory: str) -> str:
    """A zip of PACKAGES' Python sources in ``directory`` (built once per process)."""
    if directory in _built:
        return _built[directory]
    path = os.path.join(directory, "kconfigs-code.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PACKAGES:
            root = _package_dir(package)
            for folder, children, files in os.walk(root):
                children[:] = [c for c in children if c != "__pycache__" and not c.startswith(".")]
                for name in files:
                    if name.endswith(".py"):
                        full = os.path.join(folder, name)
                        archive.write(full, os.path.join(package, os.path.relpath(full, root)))
    _built[directory] = path
    return path


def ship_code(spark, directory: str) -> None:
    """Make PACKAGES importable on the executors of ``spark`` (no-op in local mode: same process tree)."""
    if spark.sparkContext.master.startswith("local"):
        return
    spark.sparkContext.addPyFile(code_zip(directory))


class _MissingNative(types.ModuleType):
    """Stands in for an optional compiled module the executor lacks; fails when used."""

    def __getattr__(self, attribute: str):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise ImportError(
            f"{self.__name__} is not installed on this Spark executor: the what-if's producer-id "
            f"replay needs it (pip install {self.__name__} on the executors)"
        )


def executor_imports() -> None:
    """Before importing ``enforcement`` in a Spark task: stand in for rbloom if it is missing."""
    try:
        import rbloom  # noqa: F401
    except ImportError:
        sys.modules.setdefault("rbloom", _MissingNative("rbloom"))
