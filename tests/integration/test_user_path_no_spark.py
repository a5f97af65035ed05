"""Commands that need no Spark never start it: run as a user would (a subprocess of the installed
``hudi-layout`` entry point) with ``JAVA_HOME`` pointing nowhere and no ``java`` on ``PATH``, so any attempt
to start the JVM fails. Also: no progress bar without a terminal, and a clean report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

FIXTURE = "cow_v9_txns_simple_meta.zip"


def _no_java_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME", "HUDI_LAYOUT_PROGRESS")}
    env["JAVA_HOME"] = str(tmp_path / "no-java-here")
    env["PATH"] = str(bin_dir)  # the venv only: no java
    env["PYSPARK_SUBMIT_ARGS"] = "--this-would-fail pyspark-shell"
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    cli = Path(sys.executable).parent / "hudi-layout"
    return subprocess.run([str(cli), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_commands_that_need_no_spark_run_without_java(fixture_table, tmp_path: Path) -> None:
    env = _no_java_env(tmp_path)
    assert shutil.which("java", path=env["PATH"]) is None
    table = fixture_table(FIXTURE)
    bare = fixture_table("cow_v9_txns_simple_nometa.zip")
    steps = [
        ["inspect", str(table)],
        ["inspect", str(table), "--json"],
        ["explain", str(table), "WHERE region = 'us' AND amount > 10"],
        ["report", str(table), "--columns", "amount,txn_id,region", "--out", str(tmp_path / "r"),
         "--where", "amount > 100"],
        ["index", str(bare)],
        # the preview says what the run would do: with this table's metadata table, only after dropping it
        ["cluster", str(table), "--columns", "amount,txn_id", "--dry-run", "-o", "hoodie.metadata.enable=false"],
        # its metadata table has partitions hudi_layout cannot maintain: dropped first, as Hudi's writer does
        ["cluster", str(table), "--columns", "amount,txn_id", "--strategy", "hilbert", "--schedule-only",
         "-o", "hoodie.metadata.enable=false"],
        ["cluster", str(table), "--columns", "amount,txn_id", "--no-resume"],
    ]
    outputs = {}
    for args in steps:
        done = _run(args, env, tmp_path)
        assert done.returncode == 0, f"{args}: {done.stderr[-2000:]}"
        assert "java" not in done.stderr.lower() and "\x1b[" not in done.stderr, (args, done.stderr[-500:])
        outputs[" ".join(args[:1] + args[2:])] = done.stdout
    info = json.loads(outputs["inspect --json"])
    assert info["defaults_file"] and info["pending_clustering"] == []
    assert "would cluster" in outputs["cluster --columns amount,txn_id --dry-run -o hoodie.metadata.enable=false"]
    assert "scheduled clustering" in outputs[
        "cluster --columns amount,txn_id --strategy hilbert --schedule-only -o hoodie.metadata.enable=false"]
    waiting = outputs["cluster --columns amount,txn_id --no-resume"]
    assert "pending: clustering" in waiting and "waiting to be executed" in waiting
    assert "nothing new to cluster" in waiting
    for png in ("layout_boxes.png", "query_files.png"):
        assert (tmp_path / "r" / png).stat().st_size > 10_000


def test_commands_that_need_spark_say_why_they_fail_without_java(fixture_table, tmp_path: Path) -> None:
    """Executing the pending plan needs Spark: without Java the command fails with one line, not a traceback
    from the launcher."""
    env = _no_java_env(tmp_path)
    table = fixture_table(FIXTURE)
    assert _run(["cluster", str(table), "--columns", "amount,txn_id", "--schedule-only", "-o",
                 "hoodie.metadata.enable=false"], env, tmp_path).returncode == 0
    done = _run(["cluster", str(table), "--columns", "amount,txn_id"], env, tmp_path)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[0].startswith("error:"), done.stderr[-1500:]
