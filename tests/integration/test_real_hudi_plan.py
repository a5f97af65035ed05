"""Plans that real Hudi scheduled execute with our executor.

``cow_v9_txns_simple_meta.zip`` ends with a completed clustering. We undo it (delete its completed instant
file and the base files it wrote) so its real ``T.clustering.requested`` is pending again, then run it.
The table's metadata table has partitions hudi_layout cannot maintain (record_index, secondary indexes,
partition_stats): by default we refuse, naming them; with ``hoodie.metadata.enable=false`` the MDT is
dropped (as Hudi does) and the plan executes. hudi-rs must then read exactly the rows of EXPECTED.json.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import hudi_layout
from hudi_layout import HudiTable
from hudi_layout.clustering.schedule import load_pending_plans
from hudi_layout.errors import UnsupportedTableError
from hudi_layout.services import clustering as executor
from tests.helpers.clustering import (
    completed_replacecommits,
    hudi_rs_arrow,
    hudi_rs_slice_names,
    our_slice_names,
    pending_clusterings,
    timeline_dir,
    timeline_files,
)

pytestmark = pytest.mark.integration

ZIP = "cow_v9_txns_simple_meta.zip"


def _undo_last_clustering(path: Path) -> tuple[str, list[str]]:
    """Delete the last completed clustering's completed instant and its base files; return (T, files)."""
    tdir = timeline_dir(path)
    requested = sorted(f for f in timeline_files(path) if f.endswith(".clustering.requested"))
    assert requested, timeline_files(path)
    t = requested[-1].split(".")[0]
    done = [f for f in timeline_files(path) if f.startswith(f"{t}_") and f.endswith(".replacecommit")]
    assert len(done) == 1
    (tdir / done[0]).unlink()
    removed = []
    for p in path.rglob(f"*_{t}.parquet"):
        if ".hoodie" not in p.parts:
            removed.append(str(p.relative_to(path)))
            p.unlink()
    assert removed
    return t, removed


@pytest.fixture()
def pending_real_plan(fixture_table, expected_tables):
    path = fixture_table(ZIP)
    t, removed = _undo_last_clustering(path)
    assert pending_clusterings(path) == [t]
    return path, t, removed, expected_tables[ZIP]


def test_undone_table_still_reads_expected_rows(pending_real_plan, shared_rows_digest):
    """Sanity of the setup: with the clustering undone, its input file groups are live again."""
    path, t, removed, expected = pending_real_plan
    rows_digest = shared_rows_digest
    rows = hudi_rs_arrow(path)
    assert rows.num_rows == expected["snapshot_rows"]
    assert rows_digest(rows) == expected["rows_digest_sha256_16"]
    assert our_slice_names(path) == hudi_rs_slice_names(path)
    assert not (set(removed) & our_slice_names(path))


def test_refuses_mdt_partitions_it_cannot_maintain(spark, pending_real_plan, monkeypatch):
    path, t, removed, _expected = pending_real_plan
    before_timeline = timeline_files(path)
    before_slices = our_slice_names(path)

    def no_writes(*_a, **_k):
        raise AssertionError("clustering files were written before the MDT was refused")

    monkeypatch.setattr(executor, "run_groups", no_writes)
    with pytest.raises(UnsupportedTableError) as ei:
        hudi_layout.execute_pending(str(path), spark=spark)
    msg = str(ei.value)
    # the check stops at the first partition it cannot maintain (listed order: partition_stats first)
    assert any(name in msg for name in ("record_index", "secondary_index", "partition_stats")), msg
    # nothing visible changed: the plan is still pending and no new base file is live or left behind
    assert pending_clusterings(path) == [t]
    assert t not in completed_replacecommits(path)
    assert our_slice_names(path) == before_slices
    assert not [p for p in path.rglob(f"*_{t}.parquet") if ".hoodie" not in p.parts]
    assert (path / ".hoodie" / "metadata").is_dir()
    # the timeline as it was: the metadata table is refused before the dead attempt's inflight file is rolled
    # back (session 30: a refused command changes nothing on disk)
    assert timeline_files(path) == before_timeline
    assert not (path / ".hoodie" / ".temp" / t).exists()


def test_executes_real_plan_with_metadata_disabled(spark, pending_real_plan, shared_rows_digest):
    path, t, removed, expected = pending_real_plan
    rows_digest = shared_rows_digest
    plan_groups = {(s.partition_path, s.file_id)
                   for _t, plan in load_pending_plans(path)
                   for g in plan.groups for s in g.slices}
    done = hudi_layout.execute_pending(str(path), spark=spark, options={"hoodie.metadata.enable": "false"})
    assert [m.instant_time for m in done] == [t]
    m = done[0]
    assert m.records > 0

    # like Hudi with the MDT disabled: metadata table deleted, its partitions cleared from the properties
    assert not (path / ".hoodie" / "metadata").exists()
    table = HudiTable(str(path))
    assert not table.properties.metadata_partitions

    assert t in completed_replacecommits(path)
    assert pending_clusterings(path) == []
    assert f"{t}.clustering.requested" in timeline_files(path)

    rows = hudi_rs_arrow(path)
    assert rows.num_rows == expected["snapshot_rows"]
    assert rows_digest(rows) == expected["rows_digest_sha256_16"]
    ours = hudi_layout.read(str(path), spark=spark).toArrow()
    assert ours.num_rows == expected["snapshot_rows"]
    assert sorted(ours.column("txn_id").to_pylist()) == sorted(rows.column("txn_id").to_pylist())

    slices = table.file_slices()
    assert our_slice_names(path) == hudi_rs_slice_names(path)
    assert not ({s.file_group for s in slices} & plan_groups)
    new = [s for s in slices if s.commit_time == t]
    assert len(new) == m.files_out
    for s in new:
        names = set(pq.read_table(s.base_file_path, columns=["_hoodie_file_name"]).column(0).to_pylist())
        assert names == {s.base_file_name}
