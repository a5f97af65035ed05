"""A clustering that fails (a damaged input file) never leaves a stuck table (issue #11, finding 4): the error
names the file, the plan stays pending and is reported (the next run retries it, as Hudi's clustering job does;
``--no-resume`` leaves it and says so), and the retry finishes it once the file is repaired,
``--abandon-pending`` rolls it back (a Hudi rollback instant), and an overwrite blocked by it says which
command unblocks it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_layout
from hudi_layout import errors
from hudi_layout.tools.cli import main
from tests.helpers.integration import data_only, hudi_rs_read, rows_digest, timeline_files

pytestmark = pytest.mark.integration

OPTS = {"hoodie.table.name": "recov", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p"}


def rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int32()), "v": [i * 7 % 101 for i in range(n)],
                     "p": ["x"] * n})


@pytest.fixture()
def damaged(spark, tmp_path: Path) -> tuple[Path, Path, Path, str]:
    """A table of three commits whose newest base file is damaged; returns (table, file, intact copy, digest)."""
    path = tmp_path / "t"
    for k in range(3):
        hudi_layout.write(spark.createDataFrame(rows(k * 100, 100)), str(path), OPTS)
    digest = rows_digest(data_only(hudi_rs_read(path)))
    victim = sorted(path.glob("x/*.parquet"))[-1]
    intact = tmp_path / "intact.parquet"
    shutil.copy(victim, intact)
    victim.write_bytes(victim.read_bytes()[:200])  # truncated: no footer
    return path, victim, intact, digest


def pending(path: Path) -> list[str]:
    tl = timeline_files(path)
    done = {f.split("_")[0].split(".")[0] for f in tl if f.endswith(".replacecommit")}
    return sorted({f.split(".")[0] for f in tl if ".clustering." in f or ".replacecommit." in f} - done)


def test_failed_clustering_names_the_file_and_is_resumable(spark, damaged, capsys):
    path, victim, intact, digest = damaged
    with pytest.raises(errors.CorruptFileError) as e:
        hudi_layout.cluster(str(path), ["v", "id"], spark=spark)
    assert str(victim) in str(e.value)
    assert "--resume" in e.value.hint and "--abandon-pending" in e.value.hint
    [plan] = pending(path)
    # never "nothing to cluster": the next run retries the pending plan (Hudi's retry) and names the file again
    with pytest.raises(errors.CorruptFileError) as e2:
        hudi_layout.cluster(str(path), ["v", "id"], spark=spark)
    assert str(victim) in str(e2.value) and plan in e2.value.hint and "--abandon-pending" in e2.value.hint
    assert pending(path) == [plan]
    # --no-resume leaves it and says so
    assert main(["cluster", str(path), "--columns", "v,id", "--no-resume"]) == 0
    out = capsys.readouterr().out
    assert f"pending: clustering {plan}" in out or (plan in out and "pending" in out), out
    # an overwrite blocked by the plan names the command that unblocks it
    with pytest.raises(errors.CommitConflictError) as e3:
        hudi_layout.write(spark.createDataFrame(rows(5000, 10)), str(path), OPTS, mode="overwrite")
    assert "hudi-layout cluster" in e3.value.hint and "--abandon-pending" in e3.value.hint
    # repaired, the same plan resumes and completes
    shutil.copy(intact, victim)
    assert main(["cluster", str(path), "--resume"]) == 0
    capsys.readouterr()
    assert pending(path) == []
    assert any(f.startswith(plan) and f.endswith(".replacecommit") for f in timeline_files(path))
    assert rows_digest(data_only(hudi_rs_read(path))) == digest
    assert rows_digest(data_only(hudi_layout.read(str(path), spark=spark).toArrow())) == digest


def test_pending_plan_can_be_abandoned(spark, damaged, capsys):
    path, victim, _intact, digest = damaged
    with pytest.raises(errors.CorruptFileError):
        hudi_layout.cluster(str(path), ["v", "id"], spark=spark)
    [plan] = pending(path)
    code = main(["cluster", str(path), "--abandon-pending", "--columns", "v,id"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and str(victim) in err[0] and err[1].startswith("hint:")  # the new plan hits the file too
    assert plan not in pending(path)
    assert [f for f in timeline_files(path) if f.endswith(".rollback")], "abandoning records a rollback instant"
    # abandon only (no new clustering): the table is free again, exit 0 with one line per plan (it rolled the
    # plan back, then said "name the columns" with exit 2; a probe, session 31)
    left = pending(path)
    assert main(["cluster", str(path), "--abandon-pending"]) == 0
    out = capsys.readouterr().out
    assert all(f"rolled back pending clustering {t}" in out for t in left)
    assert pending(path) == []
    hudi_layout.write(spark.createDataFrame(rows(5000, 10)), str(path), OPTS, mode="overwrite")
    assert rows_digest(data_only(hudi_rs_read(path))) == rows_digest(rows(5000, 10))
