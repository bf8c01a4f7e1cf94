"""``kconfigs analyze --master spark://...`` on a standalone cluster started from PySpark's own jars
(a master and two one-core workers on 127.0.0.1) whose executors run a Python WITHOUT kconfigs:
the job ships its code (the what-if's rate math included) and its answers equal local[*]'s."""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.dumps import generated_dump
from harness.processes import LOCALHOST
from harness.spark_cluster import StandaloneCluster, executor_python

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    work = tmp_path_factory.mktemp("spark-cluster")
    started = StandaloneCluster(work).start()
    try:
        yield started, executor_python(work / "executor-venv")
    finally:
        started.stop()


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    return generated_dump(tmp_path_factory.mktemp("cluster-dump") / "dump", samples=20000, entities=8)


def _analyze(master: str, executor: str, *args: str) -> dict:
    env = {**os.environ, "PYSPARK_PYTHON": executor, "SPARK_LOCAL_IP": LOCALHOST}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kconfigs",
            "analyze",
            *args,
            "--master",
            master,
            "--driver-memory",
            "1g",
            "--format",
            "json",
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _on_cluster_and_local(cluster, *args: str) -> tuple[dict, dict]:
    """The same command on the cluster and on local[*], run at the same time: the answers are
    compared, not timed, and each run spends most of its time starting JVMs."""
    standalone, executor = cluster
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        on_cluster = pool.submit(_analyze, standalone.master_url, executor, *args)
        local = pool.submit(_analyze, "local[*]", sys.executable, *args)
        return on_cluster.result(), local.result()


def test_report_on_the_cluster_equals_local(cluster, dump):
    args = ("report", str(dump), "--quotas", str(dump / "quotas.toml"))
    on_cluster, local = _on_cluster_and_local(cluster, *args)
    assert on_cluster["summary"] == local["summary"] and on_cluster["summary"]["samples"] > 0
    assert on_cluster["entities"] == local["entities"]


def test_whatif_ships_the_rate_math_to_executors_without_kconfigs(cluster, dump):
    args = ("whatif", str(dump), "--proposed", str(dump / "quotas.toml"))
    on_cluster, local = _on_cluster_and_local(cluster, *args)
    assert on_cluster == local
    assert any(row["throttled_events"] for row in on_cluster["entities"])  # the replay decided something
