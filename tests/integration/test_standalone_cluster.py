"""A real Spark standalone cluster on loopback (a master and two workers started with ``spark-class`` from
the installed pyspark) runs ingest -> cluster -> skipping query; the skipping read must count what a plain
parquet scan of the same files counts (the long profile also runs the job in local mode and compares)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROWS = 40_000
JOB = Path(__file__).with_name("standalone_job.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _run_job(master: str, work: Path) -> dict:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    out = subprocess.run([sys.executable, str(JOB), master, str(work), str(ROWS)], capture_output=True, text=True,
                         env=env, timeout=600)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert out.returncode == 0 and lines, f"job failed on {master}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def _wait_for_workers(ui_port: int, want: int, timeout: float = 90.0) -> None:
    import urllib.request

    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
                state = json.loads(r.read())
            if len([w for w in state.get("workers", []) if w.get("state") == "ALIVE"]) >= want:
                return
        except OSError:
            pass
        time.sleep(1)
    raise AssertionError(f"standalone cluster did not get {want} workers in {timeout}s")


def test_standalone_cluster_matches_local_mode(tmp_path: Path) -> None:
    spark_class = _spark_class()
    if not spark_class.exists():
        pytest.skip(f"{spark_class} not found in the installed pyspark")
    port, ui = _free_port(), _free_port()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(tmp_path / "work"),
               PYSPARK_PYTHON=sys.executable)
    procs = []
    try:
        procs.append(subprocess.Popen([str(spark_class), "org.apache.spark.deploy.master.Master", "--host",
                                       "127.0.0.1", "--port", str(port), "--webui-port", str(ui)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        for _ in range(2):
            procs.append(subprocess.Popen([str(spark_class), "org.apache.spark.deploy.worker.Worker",
                                           f"spark://127.0.0.1:{port}", "--host", "127.0.0.1", "--cores", "1",
                                           "--memory", "1500m", "--webui-port", str(_free_port())], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        _wait_for_workers(ui, 2)
        cluster = _run_job(f"spark://127.0.0.1:{port}", tmp_path / "cluster")
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, 15)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
    assert cluster["master"].startswith("spark://")
    assert cluster["records"] == ROWS
    assert cluster["count"] == cluster["full_count"] > 0  # the skipping read against a plain parquet scan
    if os.environ.get("HUDI_LAYOUT_LONG_TESTS") == "1":  # the same job in local mode (the whole suite's mode)
        local = _run_job("local[2]", tmp_path / "local")
        assert local["records"] == ROWS and local["count"] == local["full_count"] == cluster["count"]
    assert cluster["files_after"] < cluster["files_total"], "clustering + index should skip files"
