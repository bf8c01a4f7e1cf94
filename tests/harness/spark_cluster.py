"""A standalone Spark cluster from PySpark's own jars: a master and workers on 127.0.0.1.

SPARK_HOME is pyspark's package directory (its ``jars/`` hold the whole of Spark). The executors'
Python is a separate virtual environment holding only pyspark, pandas and pyarrow (and their
dependencies), linked from the test interpreter's site-packages: kconfigs is NOT importable
there, so a job that works proves it ships its own code.
"""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

from .java import java_binary
from .processes import LOCALHOST, ServerProcess, free_ports, port_is_open

#: what an executor needs for applyInPandas, and their own dependencies
EXECUTOR_PACKAGES = (
    "pyspark",
    "py4j",
    "pandas",
    "numpy",
    "numpy.libs",
    "pyarrow",
    "dateutil",
    "pytz",
    "tzdata",
    "six.py",
)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def executor_python(directory: Path) -> str:
    """A venv with EXECUTOR_PACKAGES only (symlinked): its python cannot import kconfigs."""
    python = directory / "bin" / "python"
    if not python.exists():
        venv.create(directory, with_pip=False, symlinks=True)
        site = Path(
            subprocess.run(
                [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        ours = Path(spark_home()).parent
        for name in EXECUTOR_PACKAGES:
            if (ours / name).exists():
                (site / name).symlink_to(ours / name)
    check = subprocess.run(
        [
            str(python),
            "-c",
            "import pyspark, pandas, pyarrow\ntry:\n import kconfigs\nexcept ImportError:\n pass\n"
            "else:\n raise SystemExit('kconfigs importable')",
        ],
        capture_output=True,
        text=True,
        cwd=directory,
        env=_env(),
    )
    assert check.returncode == 0, check.stderr
    return str(python)


def _scala_version() -> str:
    library = next((spark_home() / "jars").glob("scala-library-*.jar")).name  # scala-library-2.13.16.jar
    return ".".join(library.removeprefix("scala-library-").split(".")[:2])


def _env() -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # nothing leads to this checkout
    # SPARK_SCALA_VERSION: without it, a worker launching an executor looks for a source build's
    # launcher/target/scala-* directories ("Cannot find any build directories")
    return {
        **inherited,
        "SPARK_HOME": str(spark_home()),
        "SPARK_SCALA_VERSION": _scala_version(),
        "SPARK_LOCAL_IP": LOCALHOST,
        "SPARK_MASTER_HOST": LOCALHOST,
    }


def _java(main_class: str, *args: str) -> list[str]:
    return [java_binary(), "-Xmx256m", "-cp", f"{spark_home() / 'jars'}/*", main_class, *args]


class StandaloneCluster:
    """``master_url`` = spark://127.0.0.1:PORT; ``workers`` workers with ``cores`` cores each."""

    def __init__(self, workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.workdir = workdir
        port, web = free_ports(2)
        self.port = port
        self.master_url = f"spark://{LOCALHOST}:{port}"
        self.master = ServerProcess(
            "spark master",
            _java(
                "org.apache.spark.deploy.master.Master",
                "--host",
                LOCALHOST,
                "--port",
                str(port),
                "--webui-port",
                str(web),
            ),
            workdir / "master.log",
            env=_env(),
        )
        self.workers = []
        for number in range(workers):
            (worker_web,) = free_ports(1)
            work = workdir / f"worker-{number}"
            work.mkdir(parents=True, exist_ok=True)
            argv = _java(
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                LOCALHOST,
                "--webui-port",
                str(worker_web),
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--work-dir",
                str(work),
                self.master_url,
            )
            self.workers.append(
                ServerProcess(f"spark worker {number}", argv, workdir / f"worker-{number}.log", env=_env())
            )

    def start(self) -> "StandaloneCluster":
        self.master.start()
        self.master.wait_until(lambda: port_is_open(self.port), "listening")
        for worker in self.workers:
            worker.start()
        for worker in self.workers:
            worker.wait_until(lambda w=worker: w.log_contains("Successfully registered with master"), "registered")
        return self

    def stop(self) -> None:
        for process in [*self.workers, self.master]:
            process.stop()
