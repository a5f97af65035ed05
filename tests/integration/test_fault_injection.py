"""Fault injection: writers killed at named points and at random times, in three ways, never damage a table.

Kill modes: the doomed process kills itself at a crash point (``HUDI_LAYOUT_FAULT=<point>``: a driver without
Spark, so the whole writer dies at once), the driver's process group is killed (``<point>@group`` or from
outside: driver and JVM die, PySpark's workers - in a group of their own - live on and may still try to
write), the driver JVM alone is killed (the Python driver survives and aborts; workers see their socket
close and flush), or one executor Python worker is killed.

After every kill: hudi-rs and ``hudi_layout.read`` return exactly the committed rows (each once, none of
the failed write); then the next write rolls the failure back and no file of the failed instant is left
(also after the orphaned workers had time to finish).

CI runs a representative subset (~3 min: the driver-side crash points of ingest, overwrite and rollback,
a JVM-only kill mid-write, a late writer; ``test_crash_recovery`` and ``test_clustering_faults`` (two of its
three points) add group kills of ingest and clustering). ``HUDI_LAYOUT_FAULTS=all`` runs every case (~25 min):
``HUDI_LAYOUT_FAULTS=all .venv/bin/python -m pytest -q tests/integration/test_fault_injection.py``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_layout
from tests.helpers.integration import (
    base_files_on_disk,
    hudi_rs_read,
    hudi_rs_slices,
    our_slices,
    rows_digest,
    timeline_files,
)
from tests.integration.fault_driver import OPTS, fault_rows

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).resolve().parent / "fault_driver.py"
ALL = os.environ.get("HUDI_LAYOUT_FAULTS") == "all"
full_only = pytest.mark.skipif(not ALL, reason="long fault case: HUDI_LAYOUT_FAULTS=all runs it")

BASE_ROWS = 300  # committed before each doomed write: ids 0..299


# ------------------------------------------------------------------------------------------ processes


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("HUDI_LAYOUT_FAULT", None)
    env.update(extra)
    return env


def start_driver(op: str, table: Path, log: Path, *args: str, **env: str) -> subprocess.Popen[bytes]:
    with open(log, "wb") as fh:  # the child keeps its own copy of the descriptor
        return subprocess.Popen([sys.executable, str(DRIVER), op, str(table), *args], stdout=fh,
                                stderr=subprocess.STDOUT, cwd=str(PROJECT), env=_env(**env), start_new_session=True)


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(stat[1]) == pid:
            out.append(int(entry))
    return out


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out.extend(kids)
        todo.extend(kids)
    return out


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def kill_all(pids: list[int]) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_output(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 240) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if text in log.read_text(errors="replace"):
            return True
        if proc.poll() is not None:
            return text in log.read_text(errors="replace")
        time.sleep(0.02)
    return False


def finish(proc: subprocess.Popen[bytes], extra: list[int] = ()) -> None:
    """Kill what is left of a doomed run (its group, recorded descendants) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    kill_all(list(extra))
    proc.wait(timeout=60)


# ------------------------------------------------------------------------------------------ tables


def ids_table(ids: list[int]) -> pa.Table:
    return pa.concat_tables([fault_rows(i, 1) for i in ids]) if ids else fault_rows(0, 0)


def digest_of(spec: list[tuple[int, int]]) -> str | None:
    return rows_digest(pa.concat_tables([fault_rows(s, n) for s, n in spec]) if spec else fault_rows(0, 0))


def data_only(t: pa.Table) -> pa.Table:
    return t.select([n for n in t.column_names if not n.startswith("_hoodie")])


def new_table(spark, path: Path) -> list[tuple[int, int]]:
    hudi_layout.write(spark.createDataFrame(fault_rows(0, BASE_ROWS)), str(path), OPTS)
    return [(0, BASE_ROWS)]


def instants_of(path: Path) -> set[str]:
    return {f.split(".")[0].split("_")[0] for f in timeline_files(path)}


def files_of(path: Path, instants: set[str]) -> set[str]:
    return {f for f in base_files_on_disk(path) if f.rsplit("_", 1)[-1].split(".")[0] in instants}


def check_table(spark, path: Path, committed: list[tuple[int, int]]) -> None:
    """hudi-rs and our reader return exactly the committed rows (each once), and see the same files."""
    want = digest_of(committed)
    rs = hudi_rs_read(path)
    assert rows_digest(data_only(rs)) == want, "hudi-rs does not read exactly the committed rows"
    ours = hudi_layout.read(str(path), spark=spark).toArrow()
    assert rows_digest(data_only(ours)) == want, "hudi_layout.read does not read exactly the committed rows"
    assert hudi_rs_slices(path) == our_slices(path)
    ids = ours.column("id").to_pylist()
    assert len(ids) == len(set(ids))


_next_start = [1_000_000]


def recover(spark, path: Path, committed: list[tuple[int, int]], failed: set[str]) -> list[tuple[int, int]]:
    """The next write rolls back the failed instants; none of their files stays, even after a while."""
    start = _next_start[0]
    _next_start[0] += 1000
    hudi_layout.write(spark.createDataFrame(fault_rows(start, 30)), str(path), OPTS)
    committed = [*committed, (start, 30)]
    assert not files_of(path, failed), f"files of failed instants {failed} survived the rollback"
    time.sleep(1.0)  # orphaned workers, if any, have finished by now
    assert not files_of(path, failed), f"late files of failed instants {failed} appeared after the rollback"
    check_table(spark, path, committed)
    live = {s.rsplit("/", 1)[-1] for s in our_slices(path)}
    indexed = {r["file_name"] for r in hudi_layout.ColumnStatsIndex(path).load_column("id").to_pylist()}
    assert live <= indexed, "column_stats misses live files"
    # beyond the live files only files replaced by a committed overwrite/clustering (until cleaned)
    assert not {f for f in indexed - live if f.rsplit("_", 1)[-1].split(".")[0] in failed}, \
        "column_stats still lists files of a failed write"
    return committed


# ------------------------------------------------------------------------------------------ crash points


@dataclass(frozen=True)
class Case:
    op: str            # ingest | overwrite | cluster | rollback
    point: str         # crash point name (hudi_layout.table.faults)
    commits: bool = False  # the doomed write is complete when the process dies (after_complete)
    ci: bool = True


DRIVER_CASES = [
    Case("ingest", "begin.after_requested"),
    Case("ingest", "begin.after_inflight", ci=False),
    Case("ingest", "executor.after_marker"),
    Case("ingest", "executor.mid_file", ci=False),
    Case("ingest", "write.after_files", ci=False),
    Case("ingest", "before_mdt"),
    Case("ingest", "mdt.after_log_append", ci=False),
    Case("ingest", "before_complete"),
    Case("ingest", "commit.after_complete", commits=True),
    Case("overwrite", "begin.after_inflight", ci=False),
    Case("overwrite", "executor.mid_file"),
    Case("overwrite", "before_mdt", ci=False),
    Case("overwrite", "before_complete"),
    Case("overwrite", "commit.after_complete", commits=True, ci=False),
    Case("rollback", "rollback.after_plan", ci=False),
    Case("rollback", "rollback.after_inflight"),
    Case("rollback", "rollback.mid_delete", ci=False),
    Case("rollback", "rollback.after_files", ci=False),
    Case("rollback", "rollback.after_mdt"),
    Case("rollback", "rollback.before_complete", ci=False),
]
SPARK_CASES = [
    Case("cluster", "cluster.after_plan", ci=False),
    Case("cluster", "cluster.after_inflight", ci=False),
    Case("cluster", "before_mdt@group", ci=False),  # CI: test_clustering_faults kills clusterings
    Case("cluster", "before_complete@group", ci=False),
    Case("cluster", "commit.after_complete@group", commits=True, ci=False),
    Case("ingest", "before_complete@group", ci=False),
]


def _params(cases: list[Case]) -> list:
    return [pytest.param(c, id=f"{c.op}-{c.point}", marks=() if c.ci else full_only) for c in cases]


def _doomed(op: str, path: Path, log: Path, point: str, *args: str) -> subprocess.Popen[bytes]:
    return start_driver(op, path, log, *args, HUDI_LAYOUT_FAULT=point)


def _run_to_death(proc: subprocess.Popen[bytes], log: Path) -> None:
    try:
        proc.wait(timeout=300)
    finally:
        finish(proc)
    text = log.read_text(errors="replace")
    assert "WRITING" in text and "DONE" not in text, f"the writer was not killed at its crash point:\n{text[-3000:]}"
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, text[-3000:])


@pytest.mark.parametrize("case", _params(DRIVER_CASES))
def test_driver_killed_at_crash_point(spark, tmp_path: Path, case: Case):
    path = tmp_path / "t"
    committed = new_table(spark, path)
    before = instants_of(path)
    start = 500_000
    if case.op == "rollback":
        # a failed write to roll back (killed after its files and MDT entries), then a rollback killed midway
        _run_to_death(_doomed("ingest", path, tmp_path / "w.log", "before_complete", "--start", str(start),
                              "--max-file-size", "20000"), tmp_path / "w.log")
        failed = instants_of(path) - before
        _run_to_death(_doomed("rollback", path, tmp_path / "r.log", case.point), tmp_path / "r.log")
    else:
        args = ["--start", str(start), "--rows", "900", "--max-file-size", "20000"]
        _run_to_death(_doomed(case.op, path, tmp_path / "w.log", case.point, *args), tmp_path / "w.log")
        failed = instants_of(path) - before
        if case.commits:
            committed = [(start, 900)] if case.op == "overwrite" else [*committed, (start, 900)]
            failed = set()
    check_table(spark, path, committed)
    recover(spark, path, committed, failed - {t for t in failed if _is_rollback(path, t)})


def _is_rollback(path: Path, t: str) -> bool:
    return any(f.startswith(t) and ".rollback" in f for f in timeline_files(path))


@pytest.mark.parametrize("case", _params(SPARK_CASES))
def test_spark_driver_killed_at_crash_point(spark, tmp_path: Path, case: Case):
    path = tmp_path / "t"
    committed = new_table(spark, path)
    if case.op == "cluster":  # a few more commits: a clustering with several input files
        for k in range(2):
            hudi_layout.write(spark.createDataFrame(fault_rows(2000 + k * 100, 100)), str(path), OPTS)
            committed.append((2000 + k * 100, 100))
    before = instants_of(path)
    proc = _doomed(case.op, path, tmp_path / "w.log", case.point, "--spark", "--start", "500000", "--rows", "900",
                   "--max-file-size", "20000")
    _run_to_death(proc, tmp_path / "w.log")
    failed = instants_of(path) - before
    if case.commits:
        failed = set()
        if case.op == "ingest":
            committed.append((500_000, 900))
    check_table(spark, path, committed)
    committed = recover(spark, path, committed, failed)
    if case.op == "cluster":
        hudi_layout.execute_pending(str(path), spark=spark, options=OPTS)  # the plan survives and completes
        check_table(spark, path, committed)


# ------------------------------------------------------------------------------------------ kill modes


def _spark_tree(proc: subprocess.Popen[bytes]) -> tuple[list[int], list[int]]:
    """(JVM pids, PySpark worker pids: the daemon and its forks) under a driver process."""
    tree = descendants(proc.pid)
    jvms = [p for p in tree if "java" in cmdline(p).split(" ")[0]]
    workers = [p for p in tree if "pyspark.daemon" in cmdline(p) or "pyspark.worker" in cmdline(p)]
    return jvms, workers


def _markers(path: Path) -> bool:
    tmp = path / ".hoodie" / ".temp"
    return tmp.is_dir() and any(p.name.endswith(".marker.CREATE") for p in tmp.rglob("*"))


def _kill_mid_write(spark, tmp_path: Path, op: str, mode: str, delay: float) -> None:
    path = tmp_path / "t"
    committed = new_table(spark, path)
    before = instants_of(path)
    log = tmp_path / "w.log"
    args = ["--spark", "--start", "500000", "--rows", "400000", "--max-file-size", "262144", "--partitions", "4"]
    proc = start_driver(op, path, log, *args, FAULT_MASTER="local[2,2]" if mode == "worker" else "local[2]")
    tree: list[int] = []
    try:
        try:
            assert wait_output(log, "WRITING", proc), log.read_text(errors="replace")[-3000:]
            assert _wait(lambda: _markers(path), proc, 240), "no file was started:\n" + log.read_text()[-3000:]
            time.sleep(delay)
            jvms, workers = _spark_tree(proc)
            tree = descendants(proc.pid)
            if mode == "group":
                os.killpg(proc.pid, signal.SIGKILL)  # driver + JVM; the worker daemon's group lives on
            elif mode == "jvm":
                kill_all(jvms)  # as the OOM killer does: the Python driver lives on and aborts
                proc.wait(timeout=120)
            elif mode == "worker":
                forks = [p for p in workers if "pyspark.daemon" not in cmdline(p)] or workers
                assert forks, "no PySpark worker found"
                kill_all(forks[-1:])
                proc.wait(timeout=300)
        finally:
            finish(proc)  # the driver's own group only: orphaned workers keep running, as in real life
        text = log.read_text(errors="replace")
        failed = instants_of(path) - before
        if mode == "worker" and "DONE" in text:  # the task was retried and the write committed
            committed = [(0, BASE_ROWS), (500_000, 400_000)] if op == "ingest" else [(500_000, 400_000)]
            check_table(spark, path, committed)
            new = instants_of(path) - before
            stray = files_of(path, new) - our_slices(path)
            assert not stray, f"files of the killed task attempt stayed: {sorted(stray)[:3]}"
            return
        assert "DONE" not in text, "the write finished before it could be killed"
        check_table(spark, path, committed)
        committed = recover(spark, path, committed, failed)
        deadline = time.time() + 20  # let orphaned workers run to their end, then look again
        while [p for p in tree if alive(p)] and time.time() < deadline:
            time.sleep(0.1)
        assert not files_of(path, failed), "an orphaned worker added files after the rollback"
        check_table(spark, path, committed)
    finally:
        kill_all(tree)


def _wait(cond, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        if proc.poll() is not None:
            return bool(cond())
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("mode", [pytest.param("group", marks=full_only), "jvm",
                                  pytest.param("worker", marks=full_only)])
def test_ingest_killed_mid_write(spark, tmp_path: Path, mode: str):
    """Real late writers: workers outlive a killed driver group / flush after a JVM-only kill."""
    _kill_mid_write(spark, tmp_path, "ingest", mode, 0.3)


@full_only
@pytest.mark.parametrize("mode", ["group", "jvm", "worker"])
@pytest.mark.parametrize("op", ["ingest", "overwrite"])
@pytest.mark.parametrize("seed", [1, 2])
def test_killed_at_random_times(spark, tmp_path: Path, op: str, mode: str, seed: int):
    _kill_mid_write(spark, tmp_path, op, mode, random.Random(f"{op}{mode}{seed}").uniform(0.0, 2.0))


# ------------------------------------------------------------------------------------------ late writer


def test_late_writer_cannot_add_files_after_rollback(spark, tmp_path: Path):
    """A writer's executor in another process group keeps writing after its driver is SIGKILLed: every file
    it tries to create after the driver died is refused, and the rollback leaves nothing behind."""
    path = tmp_path / "t"
    committed = new_table(spark, path)
    before = instants_of(path)
    log = tmp_path / "w.log"
    proc = start_driver("late-writer", path, log, "--start", "500000", "--rows", "4000", "--max-file-size", "4000")
    tree: list[int] = []
    try:
        exe_log = tmp_path / "w.log.executor"
        assert _wait(lambda: exe_log.exists() and "WROTE" in exe_log.read_text(errors="replace"), proc, 120), \
            log.read_text(errors="replace")[-3000:]
        tree = descendants(proc.pid)
        executor = [p for p in tree if "--executor" in cmdline(p)]
        assert executor, tree
        os.kill(proc.pid, signal.SIGKILL)  # the driver only: its executor lives on
        proc.wait(timeout=30)
        failed = instants_of(path) - before
        check_table(spark, path, committed)
        committed = recover(spark, path, committed, failed)
        for p in executor:  # the orphan tried again and was refused
            deadline = time.time() + 30
            while alive(p) and time.time() < deadline:
                time.sleep(0.05)
        assert "REFUSED" in (tmp_path / "w.log.executor").read_text(errors="replace")
        assert not files_of(path, failed)
        check_table(spark, path, committed)
    finally:
        finish(proc, tree)
