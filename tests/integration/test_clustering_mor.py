"""Clustering Merge-on-Read tables: slices are read merged (base + log blocks) and rewritten as new base files.

Tables are built by hand (``tests/helpers/mor_builder.py``) with Avro and parquet data blocks, deletes, a
rollback command block, a corrupt block and a log-only file group, or come from Hudi (the v9 MOR fixture).
hudi-rs reads every table before and after: the rows must not change, the per-file ranges of the clustering
columns must narrow, and a log appended to an input file group while a clustering runs must make the
clustering fail rather than be lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import hudi_layout
from hudi_layout import HudiTable
from hudi_layout.clustering.schedule import load_pending_plans, schedule_clustering
from hudi_layout.errors import CommitConflictError, UnsupportedTableError
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.services import clustering as executor
from hudi_layout.table.locks import Heartbeat
from tests.helpers.clustering import completed_replacecommits, hudi_rs_arrow, pending_clusterings, timeline_files
from tests.helpers.integration import rows_digest
from tests.helpers.mor_builder import MorTable, Upserts, make_mor_table, row
from tests.helpers.mor_samples import FIELDS, hudi_rs_listing_storage, sample_mor_table

pytestmark = pytest.mark.integration

SMALL_FILES = {"hoodie.clustering.plan.strategy.target.file.max.bytes": "4096",
               "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)}


def build_mor(path: Path, **kw: Any) -> MorTable:
    return sample_mor_table(path, **kw)


def _data(table: pa.Table) -> pa.Table:
    return table.select([c for c, _ in FIELDS])


def _spans(path: Path, column: str) -> list[int]:
    """Per latest slice, max - min of ``column`` over its merged rows."""
    from hudi_layout.scan.merge import merge_file_slice, merge_spec_for_table

    table = HudiTable(path)
    spec = merge_spec_for_table(table, columns=[column])
    out = []
    for s in table.file_slices():
        col = merge_file_slice(s.base_file_path, s.log_file_paths(path), spec=spec).column(column).to_numpy()
        if col.size:
            out.append(int(col.max() - col.min()))
    return out


@pytest.mark.parametrize("strategy, method", [("hilbert", "sample"), ("linear", "direct")])
def test_clustering_merges_slices_and_keeps_every_row(spark, tmp_path: Path, strategy: str, method: str) -> None:
    t = build_mor(tmp_path / "t")
    before = hudi_rs_listing_storage(t.base, tmp_path)
    assert rows_digest(_data(t.read_ours())) == rows_digest(_data(before))
    slices_before = HudiTable(t.base).file_slices()
    assert sum(len(s.log_file_names) for s in slices_before) >= 5 and any(not s.has_base_file for s in slices_before)
    spans_before = _spans(t.base, "x")

    m = hudi_layout.cluster(str(t.base), ["x", "y"] if strategy != "linear" else ["x"], spark=spark,
                            strategy=strategy, method=method, options=SMALL_FILES)
    assert m is not None and m.records == before.num_rows and m.files_out > 1
    assert m.instant_time in completed_replacecommits(t.base)
    after = hudi_rs_arrow(t.base)
    assert (after.num_rows, rows_digest(_data(after))) == (before.num_rows, rows_digest(_data(before)))
    # the record metadata is preserved (commit times of the merged records, keys)
    def keys_and_times(table: pa.Table) -> list[tuple[str, str]]:
        return sorted(zip(table.column("_hoodie_record_key").to_pylist(),
                          table.column("_hoodie_commit_time").to_pylist()))

    assert keys_and_times(after) == keys_and_times(before)
    slices_after = HudiTable(t.base).file_slices()
    assert all(s.has_base_file and not s.log_file_names for s in slices_after)
    spans_after = _spans(t.base, "x")
    assert np.mean(spans_after) < 0.75 * np.mean(spans_before), (spans_before, spans_after)
    # the metadata table indexes the new base files with exact stats
    stats = ColumnStatsIndex(t.base).load_column("x").to_pylist()
    by_name = {r["file_name"]: r for r in stats}
    for s in slices_after:
        assert s.base_file_name in by_name


def test_executes_a_pending_plan_and_refuses_unmergeable_tables_before_scheduling(spark, tmp_path: Path) -> None:
    t = build_mor(tmp_path / "t", groups=2, rows_per_group=100)
    before = rows_digest(_data(t.read_ours()))
    res = schedule_clustering(t.base, {**SMALL_FILES, "hoodie.metadata.enable": "true"}, columns="x,y")
    assert res is not None
    done = hudi_layout.execute_pending(str(t.base), spark=spark)
    assert [d.instant_time for d in done] == [res[0]] and not pending_clusterings(t.base)
    assert rows_digest(_data(hudi_rs_arrow(t.base))) == before

    custom = make_mor_table(tmp_path / "custom", fields=FIELDS, merge_mode="CUSTOM")
    custom.deltacommit(inserts={"": [row("a", 1, x=1, y=1)]})
    files = timeline_files(custom.base)
    with pytest.raises(UnsupportedTableError, match="CUSTOM"):
        hudi_layout.cluster(str(custom.base), ["x", "y"], spark=spark, options=SMALL_FILES)
    assert timeline_files(custom.base) == files


def test_log_appended_before_the_commit_fails_the_clustering(spark, tmp_path: Path) -> None:
    """Hudi's writers reject updates to file groups under a pending clustering; a log that lands anyway (here:
    after the plan, before the executor) must fail the clustering, and the update stays visible."""
    t = build_mor(tmp_path / "t", groups=2, rows_per_group=100)
    instant, plan = schedule_clustering(t.base, SMALL_FILES, columns="x,y")  # type: ignore[misc]
    fid = sorted(plan.file_groups)[0][1]
    t.deltacommit(logs={fid: [Upserts([row("k00005", 50, name="late", x=7, y=7)])]})
    expected = hudi_rs_arrow(t.base)
    assert "late" in expected.column("name").to_pylist()
    with pytest.raises(CommitConflictError, match="got log file"):
        hudi_layout.execute_pending(str(t.base), spark=spark)
    assert instant not in completed_replacecommits(t.base) and pending_clusterings(t.base) == [instant]
    assert rows_digest(_data(hudi_rs_arrow(t.base))) == rows_digest(_data(expected))
    assert not [p for p in t.base.glob(f"*_{instant}.parquet")]


def test_log_appended_while_the_job_runs_fails_the_clustering(spark, tmp_path: Path, monkeypatch) -> None:
    t = build_mor(tmp_path / "t", groups=2, rows_per_group=100)
    fid = HudiTable(t.base).file_slices()[0].file_id
    real = executor.run_groups

    def run_then_append(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        t.deltacommit(logs={fid: [Upserts([row("k00005", 50, name="during", x=7, y=7)])]})
        return out

    monkeypatch.setattr(executor, "run_groups", run_then_append)
    with pytest.raises(CommitConflictError, match="while clustering"):
        hudi_layout.cluster(str(t.base), ["x", "y"], spark=spark, options=SMALL_FILES)
    rows = hudi_rs_arrow(t.base)
    assert "during" in rows.column("name").to_pylist()
    assert not completed_replacecommits(t.base)
    assert {s.file_group for s in HudiTable(t.base).file_slices()} >= {("", fid)}


def test_log_of_a_pending_deltacommit_fails_the_clustering(spark, tmp_path: Path) -> None:
    """A deltacommit still inflight on an input file group may complete after the clustering: not allowed."""
    t = build_mor(tmp_path / "t", groups=2, rows_per_group=100)
    instant, plan = schedule_clustering(t.base, SMALL_FILES, columns="x,y")  # type: ignore[misc]
    fid = sorted(plan.file_groups)[0][1]
    inflight = t.deltacommit(logs={fid: [Upserts([row("k00005", 50, name="inflight", x=7, y=7)])]}, complete=False)
    alive = Heartbeat(t.base, inflight.instant)  # a live writer: not rolled back as a failed write
    try:
        with pytest.raises(CommitConflictError, match="got log file"):
            hudi_layout.execute_pending(str(t.base), spark=spark)
    finally:
        alive.stop()
    assert instant not in completed_replacecommits(t.base)
    t.complete(inflight.instant)
    assert "inflight" in hudi_rs_arrow(t.base).column("name").to_pylist()


# ------------------------------------------------------------------------------------------- Hudi's tables

FIXTURE = "mor_avro_v9_txns_simple_meta.zip"


def test_fixture_with_record_index_is_refused_naming_the_indexes(spark, fixture_table) -> None:
    path = fixture_table(FIXTURE)
    files = timeline_files(path)
    with pytest.raises(UnsupportedTableError, match="record_index|secondary_index|partition_stats") as info:
        hudi_layout.cluster(str(path), ["amount", "txn_ts"], spark=spark, options=SMALL_FILES)
    assert info.value.hint and timeline_files(path) == files


def test_fixture_clustered_keeps_the_rows_of_expected_json(spark, fixture_table, expected_tables,
                                                           shared_rows_digest) -> None:
    path = fixture_table(FIXTURE)
    expected = expected_tables[FIXTURE]
    m = hudi_layout.cluster(str(path), ["amount", "txn_ts"], spark=spark,
                            options={**SMALL_FILES, "hoodie.metadata.enable": "false"})
    assert m is not None and m.records == expected["snapshot_rows"]
    rows = hudi_rs_arrow(path)
    assert (rows.num_rows, shared_rows_digest(rows)) == (expected["snapshot_rows"], expected["rows_digest_sha256_16"])


def test_fixture_plan_scheduled_by_hudi_executes(spark, fixture_table, expected_tables, shared_rows_digest) -> None:
    """The fixture's last clustering (scheduled and run by Hudi on the MOR table) made pending again, then
    executed by us."""
    path = fixture_table(FIXTURE)
    tdir = path / ".hoodie" / "timeline"
    t = "20260307162619269"
    (next(tdir.glob(f"{t}_*.replacecommit"))).unlink()
    for p in path.rglob(f"*_{t}.parquet"):
        p.unlink()
    assert pending_clusterings(path) == [t] and [i for i, _ in load_pending_plans(path)] == [t]
    done = hudi_layout.execute_pending(str(path), spark=spark, options={"hoodie.metadata.enable": "false"})
    assert [d.instant_time for d in done] == [t]
    rows = hudi_rs_arrow(path)
    expected = expected_tables[FIXTURE]
    assert (rows.num_rows, shared_rows_digest(rows)) == (expected["snapshot_rows"], expected["rows_digest_sha256_16"])
