"""Upserts and deletes into the file groups of a pending compaction (docs/compaction.md, "Writes while a plan is
pending"): they append log files, which join the compaction's future slice, as Hudi's writers do; rewrites
stay refused.

Each step is read by hudi-rs and by ours against a model of the rows; the plan is ours (``schedule_only``) or
written as Hudi writes it, and then executed, abandoned, or completed while an upsert is running.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_layout as hl
from hudi_layout import HudiTable
from hudi_layout.errors import UnsupportedTableError
from hudi_layout.tools.cli import main as cli_main
from tests.helpers.integration import diff_snapshots, hudi_rs_read, tree_snapshot
from tests.integration.test_mor_log_appends import DELETE, UPSERT, slices_of
from tests.integration.test_mor_writes import SCHEMA, ours, rows_of, use_merge_path, with_logs

pytestmark = pytest.mark.integration

KEEP_ONE = {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", "hoodie.cleaner.fileversions.retained": "1",
            "hudi_layout.clean.grace.period.seconds": "0"}


def both_read(spark: Any, path: Path, want: list[tuple[Any, ...]], **options: str) -> None:
    """hudi-rs and ours read ``want`` (a snapshot, or time travel with ``as.of.instant``)."""
    assert rows_of(hudi_rs_as_of(path, options.get("as.of.instant"))) == want
    assert ours(spark, path, **options) == want


def hudi_rs_as_of(path: Path, as_of: str | None) -> pa.Table:
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    options = hudi.HudiReadOptions().with_as_of_timestamp(as_of) if as_of else None
    return pa.Table.from_batches(table.read(options))


def plan_on(kind: str, spark: Any, t: Any, g1: str) -> str:
    if kind == "hudi":
        return str(t.schedule_compaction([g1]))
    [scheduled] = hl.compact(str(t.base), spark=spark, schedule_only=True)
    return scheduled.instant_time


@pytest.mark.parametrize("plan", ["ours", "hudi"])
@pytest.mark.parametrize("merge_path", ["broadcast", "shuffle"])
def test_upserts_and_deletes_append_to_a_pending_compactions_groups(spark, tmp_path: Path, monkeypatch,
                                                                    plan: str, merge_path: str) -> None:
    use_merge_path(monkeypatch, merge_path)
    t, (g1, g2) = with_logs(9, tmp_path / "t")
    planned = plan_on(plan, spark, t, g1)
    old = slices_of(t.base)[g1]
    model = {r[0]: r for r in rows_of(hudi_rs_read(t.base))}
    before = sorted(model.values())
    # an update of d (in the planned group, whose slice holds three logs), an insert, an update of f elsewhere
    first = hl.write(spark.createDataFrame([("d", 5, "d5", 5.0), ("z", 1, "z", 1.0), ("f", 3, "f3", 1.0)],
                                           SCHEMA), str(t.base), UPSERT)
    assert first.log_files_appended == 2 and first.file_groups_rewritten == 0
    model.update(d=("d", 5, "d5"), z=("z", 1, "z"), f=("f", 3, "f3"))
    both_read(spark, t.base, sorted(model.values()))
    # a stale update (ts 0 < 1) changes nothing; a delete of e appends a delete block
    hl.write(spark.createDataFrame([("a", 0, "a0", 0.0)], SCHEMA), str(t.base), UPSERT)
    hl.write(spark.createDataFrame([("e", 9, "", 0.0)], SCHEMA), str(t.base), DELETE)
    del model["e"]
    want = sorted(model.values())
    both_read(spark, t.base, want)
    now = slices_of(t.base)[g1]
    assert now.base_file_name == old.base_file_name and now.log_file_names[:len(old.log_file_names)] == \
        old.log_file_names and len(now.log_file_names) == len(old.log_file_names) + 2
    # the plan runs: it merges what it planned; our logs stay in its new slice, over the new base file
    [done] = hl.compact(str(t.base), spark=spark, instant=planned)
    assert done.resumed and done.slices == 1
    compacted = slices_of(t.base)[g1]
    assert compacted.commit_time == planned
    assert compacted.log_file_names == now.log_file_names[len(old.log_file_names):]
    both_read(spark, t.base, want)
    # time travel: before the first append, the old slice; at the first append, the plan's slice plus it
    both_read(spark, t.base, before, **{"as.of.instant": planned})
    after_first = sorted({**{r[0]: r for r in before}, "d": ("d", 5, "d5"), "z": ("z", 1, "z"),
                          "f": ("f", 3, "f3")}.values())
    both_read(spark, t.base, after_first, **{"as.of.instant": first.instant_time})
    # the next compaction merges the new slice; a clean keeps one version; every reader still agrees
    hl.compact(str(t.base), spark=spark)
    assert not slices_of(t.base)[g1].log_file_names
    hl.clean(str(t.base), options=KEEP_ONE)
    both_read(spark, t.base, want)


def test_abandoning_a_plan_after_appends_keeps_them(spark, tmp_path: Path) -> None:
    """Version 8 / 9 logs are named after their own deltacommit: without the plan they belong to the old
    slice again, nothing to rename."""
    t, (g1, _g2) = with_logs(9, tmp_path / "t")
    planned = plan_on("ours", spark, t, g1)
    hl.write(spark.createDataFrame([("a", 7, "a7", 7.0)], SCHEMA), str(t.base), UPSERT)
    want = sorted({**{r[0]: r for r in rows_of(hudi_rs_read(t.base))}, "a": ("a", 7, "a7")}.values())
    both_read(spark, t.base, want)
    assert cli_main(["compact", str(t.base), "--abandon", planned]) == 0
    assert HudiTable(str(t.base)).timeline.pending_compactions() == {}
    both_read(spark, t.base, want)
    [done] = hl.compact(str(t.base), spark=spark)
    assert done.instant_time != planned and not slices_of(t.base)[g1].log_file_names
    both_read(spark, t.base, want)


def test_a_compaction_completing_while_an_upsert_appends_does_not_fail_it(spark, tmp_path: Path,
                                                                         monkeypatch) -> None:
    """The upsert reads the planned slice, the compaction of exactly that slice commits, then the upsert
    commits its log: it joins the compaction's slice, over the same rows it was merged against."""
    from hudi_layout.writer.transaction import WriteSession

    t, (g1, _g2) = with_logs(9, tmp_path / "t")
    planned = plan_on("ours", spark, t, g1)
    real_commit = WriteSession.commit
    ran = []

    def compaction_first(self: Any, written: Any, **kw: Any) -> Any:
        if not ran:
            ran.append(hl.compact(str(t.base), spark=spark, instant=planned))
        return real_commit(self, written, **kw)

    monkeypatch.setattr(WriteSession, "commit", compaction_first)
    before = {r[0]: r for r in rows_of(hudi_rs_read(t.base))}
    result = hl.write(spark.createDataFrame([("d", 5, "d5", 5.0), ("b", 9, "b9", 1.0)], SCHEMA), str(t.base),
                      UPSERT)
    assert ran and result.log_files_appended == 1
    want = sorted({**before, "d": ("d", 5, "d5"), "b": ("b", 9, "b9")}.values())
    both_read(spark, t.base, want)
    s = slices_of(t.base)[g1]
    assert s.commit_time == planned and len(s.log_file_names) == 1
    assert s.log_file_names[0].split("_")[1].startswith(result.instant_time)


def test_a_write_that_would_rewrite_a_planned_group_is_refused_and_rolled_back(spark, tmp_path: Path) -> None:
    """A null ordering value needs a rewrite (readers rank a null differently): the task refuses in one line,
    the write is rolled back, and the table reads as before."""
    t, (g1, _g2) = with_logs(9, tmp_path / "t")
    plan_on("ours", spark, t, g1)
    before = rows_of(hudi_rs_read(t.base))
    snapshot = tree_snapshot(t.base)
    with pytest.raises(UnsupportedTableError, match="pending compaction .* null ordering value") as refused:
        hl.write(spark.createDataFrame([("d", None, "d?", 5.0)], SCHEMA), str(t.base), UPSERT)
    assert "Traceback" not in str(refused.value) and "hudi-layout compact" in (refused.value.hint or "")
    both_read(spark, t.base, before)
    added = [d for d in diff_snapshots(snapshot, tree_snapshot(t.base))
             if ".hoodie" not in d and ".locks" not in d]
    assert added == [], added
    assert not [n for n in os.listdir(t.base) if n.startswith(f".{g1}_") and n not in
                slices_of(t.base)[g1].log_file_names]
