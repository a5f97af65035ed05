"""Merge-on-Read compaction (``hudi_layout.compact``, docs/compaction.md): a plan, then one ``commit`` whose new
base files hold each planned slice merged.

hudi-rs reads every table before and after and must read the same rows; time travel to before the compaction
reads the old slices, an incremental read over it returns nothing (records keep their commit times), plans
Hudi scheduled are executed, a killed compaction goes back to its plan and runs again, and a clean then removes
the old slices.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import hudi_layout as hl
from hudi_layout import HudiTable
from hudi_layout.errors import UnsupportedTableError
from hudi_layout.format.compaction_plan import decode_compaction_plan
from hudi_layout.tools.cli import main as cli_main
from tests.helpers.integration import hudi_rs_read
from tests.helpers.mor_builder import Deletes, Upserts, make_mor_table, row
from tests.helpers.mor_samples import hudi_rs_listing_storage, sample_mor_table
from tests.integration.test_mor_log_appends import UPSERT, commit_doc, slices_of
from tests.integration.test_mor_writes import OPTS, REWRITE, SCHEMA, hudi_rs_incremental, ours, rows_of, with_logs

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def timeline_names(path: Path) -> list[str]:
    return sorted(os.listdir(path / ".hoodie" / "timeline"))


def completion_of(path: Path, instant: str) -> str:
    return next(n.split("_")[1].split(".")[0] for n in timeline_names(path)
                if n.startswith(instant + "_") and n.endswith(".commit"))


def all_rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "ts", "name", "amount"))))


@pytest.mark.parametrize("version", [8, 9])
def test_compaction_merges_every_slice_with_logs_into_a_commit_every_reader_reads(spark, tmp_path: Path,
                                                                                  version: int) -> None:
    t, (g1, g2) = with_logs(version, tmp_path / "t")  # g1: Hudi-style Avro / parquet / delete blocks
    # our appended update into g2 too, so both groups have logs of both writers
    hl.write(spark.createDataFrame([("f", 7, "f7", 7.0), ("a", 9, "a9", 9.0)], SCHEMA), str(t.base), UPSERT)
    old = slices_of(t.base)
    assert old[g1].log_file_names and old[g2].log_file_names
    before = rows_of(hudi_rs_read(t.base))
    before_full = all_rows(hudi_rs_read(t.base))
    last_write = max(n.split("_")[0] for n in timeline_names(t.base) if n.endswith(".deltacommit"))
    [result] = hl.compact(str(t.base), spark=spark)
    assert (result.slices, result.log_files, result.executed) == (2, len(old[g1].log_file_names) + 1, True)
    assert result.records == len(before)
    # every reader reads the same rows (all columns), from base files only now
    assert all_rows(hudi_rs_read(t.base)) == before_full
    assert ours(spark, t.base) == before
    now = slices_of(t.base)
    for fid in (g1, g2):
        assert not now[fid].log_file_names
        assert now[fid].commit_time == result.instant_time
        assert now[fid].base_file_name.endswith(f"_{result.instant_time}.parquet")
    # the timeline: Hudi's plan, an empty inflight, and a completed commit
    names = timeline_names(t.base)
    assert f"{result.instant_time}.compaction.requested" in names
    assert f"{result.instant_time}.compaction.inflight" in names
    assert os.path.getsize(t.base / ".hoodie" / "timeline" / f"{result.instant_time}.compaction.inflight") == 0
    ops = decode_compaction_plan((t.base / ".hoodie" / "timeline" / f"{result.instant_time}.compaction.requested")
                                 .read_bytes(), "plan")
    assert {op.file_id: (op.base_file, op.log_files) for op in ops} == {
        fid: (old[fid].base_file_name, old[fid].log_file_names) for fid in (g1, g2)}
    doc = commit_doc(t.base, result.instant_time)
    assert doc["compacted"] is True and doc["operationType"] == "COMPACT"
    assert doc["extraMetadata"]["schema"]
    stats = {s["fileId"]: s for ss in doc["partitionToWriteStats"].values() for s in ss}
    for fid in (g1, g2):
        assert stats[fid]["prevCommit"] == old[fid].commit_time
        assert stats[fid]["prevBaseFile"] == old[fid].base_file_name
        assert stats[fid]["totalLogFilesCompacted"] == len(old[fid].log_file_names)
    # records keep the commit time of the write that made them (not the compaction's)
    commit_times = set()
    for fid in (g1, g2):
        commit_times |= set(pq.read_table(now[fid].base_file_path).column("_hoodie_commit_time").to_pylist())
    assert result.instant_time not in commit_times
    # time travel to before the compaction reads the old slices; after it, the new ones: both readers
    assert rows_of(t.read_hudi_rs(as_of=last_write)) == before
    assert ours(spark, t.base, **{"as.of.instant": last_write}) == before
    assert ours(spark, t.base, **{"as.of.instant": result.instant_time}) == before
    # an incremental read over the compaction alone returns nothing: it changed no record
    done_last = next(n.split("_")[1].split(".")[0] for n in timeline_names(t.base)
                     if n.startswith(last_write + "_"))
    done = completion_of(t.base, result.instant_time)
    incremental = {"hoodie.datasource.query.type": "incremental",
                   "hoodie.datasource.read.begin.instanttime": done_last,
                   "hoodie.datasource.read.end.instanttime": done}
    assert ours(spark, t.base, **incremental) == []
    assert rows_of(hudi_rs_incremental(t.base, done_last, done)) == []
    # a second compaction has nothing to do; an upsert appends to the new slice and reads right
    assert hl.compact(str(t.base), spark=spark) == []
    hl.write(spark.createDataFrame([("b", 10, "b10", 1.0)], SCHEMA), str(t.base), UPSERT)
    want = sorted([r for r in before if r[0] != "b"] + [("b", 10, "b10")])
    assert rows_of(hudi_rs_read(t.base)) == want and ours(spark, t.base) == want
    assert len(slices_of(t.base)[g1].log_file_names) == 1


def test_skipping_uses_the_compacted_files_statistics(spark, tmp_path: Path) -> None:
    t = make_mor_table(tmp_path / "t", version=9, column_stats=True)
    t.deltacommit(inserts={"": [row(k, 1) for k in "abc"]})
    t.deltacommit(inserts={"": [row(k, 1) for k in "xyz"]})
    hl.write(spark.createDataFrame([("b", 100, "b100", 1.0)], SCHEMA), str(t.base), UPSERT)
    hl.compact(str(t.base), spark=spark)
    plan = hl.explain(str(t.base), "ts >= 60", spark=spark)
    assert plan.files_read == 1 and plan.files_total == 2, plan.render()
    assert plan.files_read == len([s for s in slices_of(t.base).values() if not s.log_file_names][:1])
    assert ours(spark, t.base, **{}) == sorted([("a", 1, "a"), ("b", 100, "b100"), ("c", 1, "c"), ("x", 1, "x"),
                                               ("y", 1, "y"), ("z", 1, "z")])
    assert sorted(r["id"] for r in hl.read(str(t.base), "ts >= 60", spark=spark).collect()) == ["b"]


def test_a_plan_hudi_scheduled_is_executed_and_writes_go_on(spark, tmp_path: Path) -> None:
    t, (g1, g2) = with_logs(9, tmp_path / "t")
    planned = t.schedule_compaction([g1])
    before = rows_of(hudi_rs_read(t.base))
    with pytest.raises(UnsupportedTableError, match="pending compaction") as refused:
        hl.write(spark.createDataFrame([("d", 5, "d5", 5.0)], SCHEMA), str(t.base), {**UPSERT, **REWRITE})
    assert "hudi-layout compact" in (refused.value.hint or "")
    [result] = hl.compact(str(t.base), spark=spark, instant=planned)
    assert result.instant_time == planned and result.resumed and result.slices == 1
    assert rows_of(hudi_rs_read(t.base)) == before and ours(spark, t.base) == before
    assert slices_of(t.base)[g1].commit_time == planned and not slices_of(t.base)[g1].log_file_names
    hl.write(spark.createDataFrame([("d", 5, "d5", 5.0)], SCHEMA), str(t.base), UPSERT)
    want = sorted([r for r in before if r[0] != "d"] + [("d", 5, "d5")])
    assert rows_of(hudi_rs_read(t.base)) == want and ours(spark, t.base) == want


def test_log_only_slices_and_fully_deleted_slices_are_compacted(spark, tmp_path: Path) -> None:
    t = sample_mor_table(tmp_path / "t", groups=2, rows_per_group=20)  # has a log-only file group
    # hudi-rs leaves log-only groups out when it lists through the metadata table: read a copy without it
    before = hudi_rs_listing_storage(t.base, tmp_path)
    key = "id"
    ours_before = sorted(r[key] for r in hl.read(str(t.base), spark=spark).collect())
    assert sorted(before.column(key).to_pylist()) == ours_before
    results = hl.compact(str(t.base), spark=spark)
    assert len(results) == 1 and results[0].records == len(ours_before) and results[0].slices == 3
    assert sorted(hudi_rs_read(t.base).column(key).to_pylist()) == ours_before
    assert sorted(r[key] for r in hl.read(str(t.base), spark=spark).collect()) == ours_before
    assert all(s.has_base_file and not s.has_log_files for s in HudiTable(str(t.base)).file_slices())
    # a clean keeping one version deletes the old slices, the log-only one too (its logs are all it has)
    logs_before = [p for p in t.base.rglob(".*.log.*")]
    assert logs_before
    hl.clean(str(t.base), options={"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                                   "hoodie.cleaner.fileversions.retained": "1",
                                   "hudi_layout.clean.grace.period.seconds": "0"})
    assert [p for p in t.base.rglob(".*.log.*") if ".hoodie" not in p.parts] == []
    assert sorted(hudi_rs_read(t.base).column(key).to_pylist()) == ours_before
    # a group whose every row is deleted by a log: compacted into an empty base file, read as no rows
    u = make_mor_table(tmp_path / "u", version=9)
    g = u.deltacommit(inserts={"": [row(k, 1) for k in "ab"]}).file_ids[0]
    u.deltacommit(inserts={"": [row(k, 1) for k in "xy"]})
    u.deltacommit(logs={g: [Deletes(["a", "b"])]})
    [done] = hl.compact(str(u.base), spark=spark)
    assert done.records == 0
    assert rows_of(hudi_rs_read(u.base)) == [("x", 1, "x"), ("y", 1, "y")] == ours(spark, u.base)
    assert pq.read_metadata(slices_of(u.base)[g].base_file_path).num_rows == 0


def test_schedule_only_leaves_a_plan_that_rewrites_wait_for(spark, tmp_path: Path) -> None:
    t, (g1, _g2) = with_logs(9, tmp_path / "t")
    [scheduled] = hl.compact(str(t.base), spark=spark, schedule_only=True)
    assert not scheduled.executed and scheduled.slices == 1
    assert any(n.endswith(".compaction.requested") for n in timeline_names(t.base))
    before = rows_of(hudi_rs_read(t.base))
    assert ours(spark, t.base) == before
    with pytest.raises(UnsupportedTableError, match="pending compaction"):
        hl.write(spark.createDataFrame([("a", 50, "a50", 1.0)], SCHEMA), str(t.base), {**UPSERT, **REWRITE})
    [done] = hl.compact(str(t.base), spark=spark)
    assert done.instant_time == scheduled.instant_time and done.resumed
    assert rows_of(hudi_rs_read(t.base)) == before


def test_copy_on_write_tables_are_refused(spark, tmp_path: Path) -> None:
    path = tmp_path / "cow"
    hl.write(spark.createDataFrame([("a", 1, "a", 1.0)], SCHEMA), str(path), {**OPTS})
    with pytest.raises(UnsupportedTableError, match="Copy-on-Write"):
        hl.compact(str(path), spark=spark)


def test_clean_after_compaction_removes_the_old_slices(spark, tmp_path: Path) -> None:
    t, (g1, _g2) = with_logs(9, tmp_path / "t")
    old = slices_of(t.base)[g1]
    before = rows_of(hudi_rs_read(t.base))
    hl.compact(str(t.base), spark=spark)
    hl.clean(str(t.base), options={"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                                   "hoodie.cleaner.fileversions.retained": "1",
                                   "hudi_layout.clean.grace.period.seconds": "0"})
    assert not (t.base / old.base_file_name).exists()
    assert not any((t.base / n).exists() for n in old.log_file_names)
    assert rows_of(hudi_rs_read(t.base)) == before == ours(spark, t.base)


def test_cli_compacts_and_abandons(spark, tmp_path: Path, capsys) -> None:
    t, (g1, _g2) = with_logs(9, tmp_path / "t")
    assert cli_main(["compact", str(t.base), "--schedule-only"]) == 0
    out = capsys.readouterr().out
    assert "scheduled compaction" in out
    planned = out.split("scheduled compaction ")[1].split(":")[0]
    assert cli_main(["inspect", str(t.base)]) == 0
    assert f"pending compaction (hudi-layout compact executes it):\n  {planned} (1 file groups)" in \
        capsys.readouterr().out
    assert cli_main(["compact", str(t.base), "--schedule-only", "--instant", planned]) == 2
    assert "exclude each other" in capsys.readouterr().err
    assert cli_main(["compact", str(t.base), "--abandon", planned]) == 0
    assert not any(n.startswith(planned) and "compaction" in n for n in timeline_names(t.base))
    assert cli_main(["compact", str(t.base), "--abandon", planned]) == 2
    assert "no pending compaction" in capsys.readouterr().err
    before = rows_of(hudi_rs_read(t.base))
    assert cli_main(["compact", str(t.base)]) == 0
    assert "compaction" in capsys.readouterr().out
    assert not slices_of(t.base)[g1].log_file_names
    assert rows_of(hudi_rs_read(t.base)) == before


def _compact_in_child(path: Path, fault: str) -> int:
    code = ("import hudi_layout as hl, sys\n"
            "from hudi_layout.spark.session import get_spark\n"
            "hl.compact(sys.argv[1], spark=get_spark('fault', master='local[1]'))\n")
    env = {**os.environ, "HUDI_LAYOUT_FAULT": fault, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code, str(path)], env=env, cwd=REPO,
                          capture_output=True, timeout=300, start_new_session=True).returncode


#: CI kills at three points (after the plan, inside a task, in the commit before the instant completes); the
#: long profile (``HUDI_LAYOUT_LONG_TESTS=1``) also before the metadata table's update: each case starts a
#: Spark JVM of its own (~20 s)
KILL_POINTS = ["compact.after_plan", "executor.mid_file", "before_complete@group"] + (
    ["before_mdt@group"] if os.environ.get("HUDI_LAYOUT_LONG_TESTS") == "1" else [])


@pytest.mark.parametrize("fault", KILL_POINTS)
def test_a_killed_compaction_leaves_a_readable_table_and_runs_again(spark, tmp_path: Path, fault: str) -> None:
    t, (g1, g2) = with_logs(9, tmp_path / "t")
    hl.write(spark.createDataFrame([("f", 7, "f7", 7.0)], SCHEMA), str(t.base), UPSERT)
    before = rows_of(hudi_rs_read(t.base))
    assert _compact_in_child(t.base, fault) != 0
    assert rows_of(hudi_rs_read(t.base)) == before and ours(spark, t.base) == before
    pending = HudiTable(str(t.base)).timeline.pending_compactions()
    assert len(pending) == 1
    [result] = hl.compact(str(t.base), spark=spark)
    assert result.resumed and result.instant_time in pending
    assert rows_of(hudi_rs_read(t.base)) == before and ours(spark, t.base) == before
    assert all(not s.log_file_names for s in slices_of(t.base).values())
    # no file of the killed attempt is left beside the committed ones
    for fid in (g1, g2):
        named = [n for n in os.listdir(t.base) if n.startswith(fid) and result.instant_time in n]
        assert len(named) == 1, named


def test_upserts_appended_after_compaction_keep_hudi_rs_in_step(spark, tmp_path: Path) -> None:
    """Several rounds: appends, a compaction, appends: hudi-rs and ours read the model after each."""
    path = tmp_path / "t"
    model = {k: (k, 1, k) for k in "abcdefghij"}
    mor = {**OPTS, "hoodie.datasource.write.table.type": "MERGE_ON_READ",
           "hoodie.datasource.write.operation": "bulk_insert"}
    hl.write(spark.createDataFrame([(k, 1, k, 1.0) for k in model], SCHEMA), str(path), mor)
    for round_ in range(3):
        for step in range(2):
            ts = 10 * round_ + step + 2
            keys = "abcdefghij"[round_ + step::3]
            hl.write(spark.createDataFrame([(k, ts, f"{k}{ts}", 1.0) for k in keys], SCHEMA), str(path), UPSERT)
            model.update({k: (k, ts, f"{k}{ts}") for k in keys})
        hl.compact(str(path), spark=spark)
        want = sorted(model.values())
        assert rows_of(hudi_rs_read(path)) == want and ours(spark, path) == want


def test_incremental_reads_over_writes_and_a_compaction_return_each_change_once(spark, tmp_path: Path) -> None:
    """A range holding an appended update and the compaction that merged it: the update once (from the
    log, not again from the new base file), by hudi-rs and ours alike."""
    t, (_g1, _g2) = with_logs(9, tmp_path / "t")
    start = max(n.split("_")[1].split(".")[0] for n in timeline_names(t.base) if n.endswith(".deltacommit"))
    u1 = hl.write(spark.createDataFrame([("a", 20, "a20", 1.0), ("g", 20, "g20", 1.0)], SCHEMA), str(t.base),
                  UPSERT).instant_time
    [c] = hl.compact(str(t.base), spark=spark)
    u2 = hl.write(spark.createDataFrame([("f", 30, "f30", 1.0)], SCHEMA), str(t.base), UPSERT).instant_time
    done = {i: next(n.split("_")[1].split(".")[0] for n in timeline_names(t.base) if n.startswith(i + "_"))
            for i in (u1, c.instant_time, u2)}

    def both(begin: str, end: str) -> tuple[list[Any], list[Any]]:
        opts = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin,
                "hoodie.datasource.read.end.instanttime": end}
        return ours(spark, t.base, **opts), rows_of(hudi_rs_incremental(t.base, begin, end))

    first = [("a", 20, "a20"), ("g", 20, "g20")]
    assert both(start, done[c.instant_time]) == (first, first)
    assert both(start, done[u2]) == (sorted(first + [("f", 30, "f30")]),) * 2
    assert both(done[u1], done[u2]) == ([("f", 30, "f30")],) * 2
    assert both(done[u1], done[c.instant_time]) == ([], [])


def test_inline_compaction_runs_after_enough_deltacommits(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    mor = {**OPTS, "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.compact.inline": "true",
           "hoodie.compact.inline.max.delta.commits": "3"}
    hl.write(spark.createDataFrame([(k, 1, k, 1.0) for k in "abcdef"], SCHEMA), str(path),
             {**mor, "hoodie.datasource.write.operation": "bulk_insert"})
    compactions = []
    for n, k in enumerate("abcde"):
        hl.write(spark.createDataFrame([(k, 10 + n, f"{k}{n}", 1.0)], SCHEMA), str(path), {**mor, **UPSERT})
        compactions.append(sum(1 for x in timeline_names(path) if x.endswith(".compaction.requested")))
    # the bulk insert and two upserts make 3 deltacommits: the third write compacts; then 3 more are needed
    assert compactions == [0, 1, 1, 1, 2]
    want = sorted([(k, 10 + n, f"{k}{n}") for n, k in enumerate("abcde")] + [("f", 1, "f")])
    assert rows_of(hudi_rs_read(path)) == want and ours(spark, path) == want
    assert all(not s.log_file_names for s in slices_of(path).values())
    # the data source writer cannot run it, and says so
    with pytest.raises(Exception, match="hoodie.compact.inline"):
        (spark.createDataFrame([("z", 1, "z", 1.0)], SCHEMA).write.format("hudi_layout")
         .options(**{**mor, "hoodie.datasource.write.operation": "insert"}).mode("append").save(str(path)))


@pytest.mark.parametrize("kind", ["update", "delete", "stale"])
def test_a_key_stored_twice_reads_and_compacts_as_hudi_reads_it(spark, tmp_path: Path, kind: str) -> None:
    """A plain insert stores ``a`` twice in one base file, then a Hudi-style log names ``a``: Hudi's file-group
    reader (and hudi-rs) apply the log record to the first copy only; ours did to both before session 22, and a
    compaction then wrote our reading for every reader (the probe's ``edge2.py``)."""
    from tests.helpers.hudi_logs import append_hudi_logs

    path = tmp_path / "t"
    mor = {**OPTS, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    hl.write(spark.createDataFrame([("a", 5, "a5", 1.0), ("a", 6, "a6", 1.0), ("b", 1, "b1", 1.0)], SCHEMA)
             .coalesce(1), str(path), {**mor, "hoodie.datasource.write.operation": "insert"})
    [fid] = list(slices_of(path))
    record = {"update": {"id": "a", "ts": 7, "name": "a7", "amount": 7.0},
              "stale": {"id": "a", "ts": 4, "name": "a4", "amount": 4.0}}.get(kind)
    append_hudi_logs(path, {fid: [record]} if record else {}, {} if record else {fid: ["a"]})
    want = {"update": [("a", 6, "a6"), ("a", 7, "a7"), ("b", 1, "b1")], "delete": [("a", 6, "a6"), ("b", 1, "b1")],
            "stale": [("a", 5, "a5"), ("a", 6, "a6"), ("b", 1, "b1")]}[kind]
    assert rows_of(hudi_rs_read(path)) == want and ours(spark, path) == want
    hl.compact(str(path), spark=spark)
    assert rows_of(hudi_rs_read(path)) == want and ours(spark, path) == want


def test_an_upsert_that_began_before_a_compaction_completed_inserts_and_updates(spark, tmp_path: Path,
                                                                                monkeypatch) -> None:
    """The second probe's race: a plan scheduled, an upsert begins, the compaction completes, the upsert tags
    the new slices and commits. Its check for concurrent inserts of the same new keys took the compaction for
    such a write and failed it; a compaction adds no key."""
    import hudi_layout.services.write as write_service

    t, (g1, _g2) = with_logs(9, tmp_path / "t")
    [planned] = hl.compact(str(t.base), spark=spark, schedule_only=True)
    before = rows_of(hudi_rs_read(t.base))
    run_upsert = write_service.run_upsert

    def compaction_first(df: Any, session: Any) -> Any:
        hl.compact(str(t.base), spark=spark, instant=planned.instant_time)  # completes while this write is pending
        return run_upsert(df, session)

    monkeypatch.setattr(write_service, "run_upsert", compaction_first)
    hl.write(spark.createDataFrame([("a", 50, "a50", 1.0), ("zz", 1, "zz", 1.0)], SCHEMA), str(t.base), UPSERT)
    want = sorted([r for r in before if r[0] != "a"] + [("a", 50, "a50"), ("zz", 1, "zz")])
    assert rows_of(hudi_rs_read(t.base)) == want and ours(spark, t.base) == want
    assert slices_of(t.base)[g1].commit_time == planned.instant_time


def test_compact_reports_the_plans_it_ran_and_names_a_plan_running_elsewhere(spark, tmp_path: Path,
                                                                            monkeypatch) -> None:
    """The second probe: the pending plan ran and committed, then scheduling another failed on a write pending
    in another process, and the error hid the compaction that was done; a plan asked for by its instant that
    another process executes was answered with "nothing to compact"."""
    import hudi_layout.services.compaction as service
    from hudi_layout.errors import CommitConflictError

    t, (g1, _g2) = with_logs(9, tmp_path / "t")
    [planned] = hl.compact(str(t.base), spark=spark, schedule_only=True)

    def busy(_base: Any, **_kw: Any) -> None:
        raise CommitConflictError("cannot schedule a compaction while write 1 (deltacommit) is pending")

    monkeypatch.setattr(service, "writer_is_alive", lambda _b, _t: True)
    with pytest.raises(CommitConflictError, match="being executed by another process"):
        hl.compact(str(t.base), spark=spark, instant=planned.instant_time)
    monkeypatch.undo()
    monkeypatch.setattr(service, "schedule_compaction", busy)
    [done] = hl.compact(str(t.base), spark=spark)
    assert done.instant_time == planned.instant_time and done.resumed
    assert not slices_of(t.base)[g1].log_file_names
    with pytest.raises(CommitConflictError, match="is pending"):  # nothing done: the refusal is the answer
        hl.compact(str(t.base), spark=spark)


@pytest.mark.parametrize("meanwhile", ["executed", "abandoned"])
def test_a_plan_taken_by_another_process_before_its_execution_starts(spark, tmp_path: Path, monkeypatch,
                                                                     meanwhile: str) -> None:
    """The probe of session 23: between our plan and its execution another process executed it (we ran it a
    second time, left a second set of its base files and blamed the plan's own slice) or abandoned it (we
    failed with "no requested plan" and a hint to restore files)."""
    import hudi_layout.services.compaction as service
    from hudi_layout.errors import CommitConflictError

    t, (g1, _g2) = with_logs(9, tmp_path / "t")
    before = rows_of(hudi_rs_read(t.base))
    real = service.schedule_compaction
    planned: list[str] = []

    def other_process_first(base: Any, **kw: Any) -> Any:
        got = real(base, **kw)
        planned.append(got[0])
        if meanwhile == "executed":
            hl.compact(str(t.base), spark=spark, instant=got[0])
        else:
            assert service.abandon_pending_compaction(str(t.base), got[0])
        return got

    monkeypatch.setattr(service, "schedule_compaction", other_process_first)
    if meanwhile == "executed":
        assert hl.compact(str(t.base), spark=spark) == []
    else:
        with pytest.raises(CommitConflictError, match="no longer pending: another process rolled it back") as e:
            hl.compact(str(t.base), spark=spark)
        assert "schedule a new plan" in (e.value.hint or "")
    named = [n for n in os.listdir(t.base) if planned[0] in n]
    assert named == ([n for n in named if n.startswith(g1)] if meanwhile == "executed" else [])
    assert len(named) == (1 if meanwhile == "executed" else 0), named
    assert rows_of(hudi_rs_read(t.base)) == before and ours(spark, t.base) == before


def test_hudis_plan_strategy_options_choose_the_slices(spark, tmp_path: Path, capsys) -> None:
    """``hoodie.compaction.logfile.num.threshold`` with Hudi's LogFileNumBased strategy plans only the slice
    with enough log files; the next default run takes the rest; a strategy hudi_layout does not implement is
    refused in one line before anything is written."""
    from tests.helpers.integration import diff_snapshots, tree_snapshot

    t, (g1, g2) = with_logs(9, tmp_path / "t")  # g1 has two log files
    t.deltacommit(logs={g2: [Upserts([row("f", 2, name="f2")])]})  # g2 one
    before = rows_of(hudi_rs_read(t.base))
    snapshot = tree_snapshot(t.base)
    code = cli_main(["compact", str(t.base), "-o", "hoodie.compaction.strategy=DayBasedCompactionStrategy"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 2 and "DayBasedCompactionStrategy" in err[0], err
    assert diff_snapshots(snapshot, tree_snapshot(t.base)) == []
    [first] = hl.compact(str(t.base), spark=spark, options={
        "hoodie.compaction.strategy": "LogFileNumBasedCompactionStrategy",
        "hoodie.compaction.logfile.num.threshold": "2"})
    assert first.slices == 1
    assert not slices_of(t.base)[g1].has_log_files and slices_of(t.base)[g2].has_log_files
    plan = (t.base / ".hoodie" / "timeline" / f"{first.instant_time}.compaction.requested").read_bytes()
    from hudi_layout.format.commit_metadata import decode_avro_container

    assert decode_avro_container(plan, "plan")["missingSchedulePartitions"] == [""]
    [second] = hl.compact(str(t.base), spark=spark)
    assert second.slices == 1 and not slices_of(t.base)[g2].has_log_files
    assert rows_of(hudi_rs_read(t.base)) == ours(spark, t.base) == sorted(
        [r for r in before if r[0] != "f"] + [("f", 2, "f2")])
