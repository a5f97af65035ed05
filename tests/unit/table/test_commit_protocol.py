"""Commit protocol without Spark: begin / complete / abort / rollback of dead writers, clustering resume."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_layout.format.commit_metadata import commit_metadata_bytes, decode_rollback_metadata
from hudi_layout.format.properties import load_properties
from hudi_layout.table import commit_protocol as cp
from hudi_layout.table.create import create_table_layout, table_properties_for
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import Heartbeat, TableLock, writer_is_alive

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def _table(tmp_path: Path) -> Path:
    base = tmp_path / "t"
    base.mkdir()
    create_table_layout(base, table_properties_for(table_name="t", schema=SCHEMA, record_key_fields=["id"],
                                                   partition_fields=[], hive_style=False))
    return base


def _data_file(base: Path, pending: cp.PendingWrite, n: int = 3) -> str:
    from hudi_layout.table.partition_metadata import write_partition_metadata

    write_partition_metadata(base, pending.instant_time, 0)
    name = f"11111111-2222-3333-4444-555555555555-0_0-1-2_{pending.instant_time}.parquet"
    marker = pending.marker_dir / f"{name}.marker.CREATE"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    t = pa.table({"_hoodie_commit_time": [pending.instant_time] * n, "_hoodie_commit_seqno": ["x"] * n,
                  "_hoodie_record_key": [str(i) for i in range(n)], "_hoodie_partition_path": [""] * n,
                  "_hoodie_file_name": [name] * n, "id": list(range(n)), "s": ["a"] * n})
    pq.write_table(t, base / name)
    return name


def _commit_bytes(base: Path, name: str, instant: str) -> bytes:
    stat = {"fileId": name.split("_")[0], "path": name, "prevCommit": "null", "numWrites": 3,
            "partitionPath": "", "fileSizeInBytes": (base / name).stat().st_size}
    return commit_metadata_bytes({"partitionToWriteStats": {"": [stat]}, "operationType": "BULK_INSERT"}, 9)


def test_complete_makes_files_visible_atomically(tmp_path: Path) -> None:
    base = _table(tmp_path)
    pending = cp.begin_write(base, "commit")
    name = _data_file(base, pending)
    assert HudiTable(base).file_slices() == []  # pending: invisible
    stray = pending.marker_dir / "stray_0-1-3_x.parquet.marker.CREATE"
    stray.touch()
    (base / "stray_0-1-3_x.parquet").write_bytes(b"junk")
    cp.complete_write(pending, _commit_bytes(base, name, pending.instant_time), committed_files=[name])
    slices = HudiTable(base).file_slices()
    assert [s.base_file_name for s in slices] == [name]
    assert not (base / "stray_0-1-3_x.parquet").exists(), "marker reconciliation deletes uncommitted files"
    assert not pending.marker_dir.exists()
    assert not writer_is_alive(base, pending.instant_time)


def test_an_abort_from_a_stale_copy_never_undoes_a_completed_instant(tmp_path: Path) -> None:
    """The data source writer is pickled into Spark's Python workers: when the worker running ``commit`` died
    after completing, Spark called ``abort`` on another copy that still saw the write pending, and the
    rollback deleted the data files of a completed commit (crash probe, session 27)."""
    import dataclasses

    base = _table(tmp_path)
    pending = cp.begin_write(base, "commit")
    name = _data_file(base, pending)
    stale = dataclasses.replace(pending)  # what another worker unpickled before the commit
    cp.complete_write(pending, _commit_bytes(base, name, pending.instant_time), committed_files=[name])
    assert not stale.completed
    cp.abort_write(stale)
    assert [s.base_file_name for s in HudiTable(base).file_slices()] == [name]
    assert (base / name).exists()
    assert cp.pending_write_instants(base, load_properties(base / ".hoodie")) == []


def test_dead_writer_is_rolled_back_with_a_rollback_instant(tmp_path: Path) -> None:
    base = _table(tmp_path)
    pending = cp.begin_write(base, "commit")
    name = _data_file(base, pending)
    pending.heartbeat.stop(delete=False)  # the writer "dies": its heartbeat lock is released
    props = load_properties(base / ".hoodie")
    done = cp.rollback_failed_writes(base, props)
    assert done == [pending.instant_time]
    assert not (base / name).exists()
    instants = cp.list_instants(base, props)
    assert not [i for i in instants if i.requested_time == pending.instant_time]
    rollbacks = [i for i in instants if i.action == "rollback" and i.is_completed]
    assert len(rollbacks) == 1
    meta = decode_rollback_metadata((cp.timeline_dir(base, props) / rollbacks[0].file_name).read_bytes())
    assert meta["commitsRollback"] == [pending.instant_time]


def test_live_writer_is_not_rolled_back(tmp_path: Path) -> None:
    base = _table(tmp_path)
    pending = cp.begin_write(base, "commit")
    _data_file(base, pending)
    assert writer_is_alive(base, pending.instant_time)
    assert cp.rollback_failed_writes(base) == []
    cp.abort_write(pending)
    assert cp.pending_write_instants(base, load_properties(base / ".hoodie")) == []


def test_interrupted_clustering_goes_back_to_requested(tmp_path: Path) -> None:
    base = _table(tmp_path)
    from hudi_layout.format.commit_metadata import clustering_plan_metadata, requested_replace_bytes

    plan = {"inputGroups": [], "strategy": {"strategyClassName": "x", "strategyParams": {}, "version": 1},
            "extraMetadata": {}, "version": 1, "preserveHoodieMetadata": True, "missingSchedulePartitions": []}
    t = "20260101000000000"
    tdir = cp.timeline_dir(base, load_properties(base / ".hoodie"))
    (tdir / f"{t}.clustering.requested").write_bytes(requested_replace_bytes(clustering_plan_metadata(plan)))
    pending = cp.resume_clustering(base, t)
    assert (tdir / f"{t}.clustering.inflight").exists()
    name = _data_file(base, pending)
    pending.heartbeat.stop(delete=False)
    assert cp.rollback_failed_writes(base) == [t]
    assert (tdir / f"{t}.clustering.requested").exists(), "the plan is kept for the next run"
    assert not (tdir / f"{t}.clustering.inflight").exists()
    assert not (base / name).exists()
    # a requested-only clustering is a plan, not a failure
    assert cp.rollback_failed_writes(base) == []


def test_table_lock_times_out_while_held(tmp_path: Path) -> None:
    base = _table(tmp_path)
    from hudi_layout.table.locks import LockTimeoutError

    with TableLock(base):
        with pytest.raises(LockTimeoutError):
            TableLock(base, timeout_s=0.2).acquire()


def test_heartbeat_marks_alive_until_stopped(tmp_path: Path) -> None:
    hb = Heartbeat(tmp_path, "20260101000000001")
    assert writer_is_alive(tmp_path, "20260101000000001")
    hb.stop()
    assert not writer_is_alive(tmp_path, "20260101000000001")


def test_a_rolled_back_instant_cannot_complete(tmp_path: Path) -> None:
    from hudi_layout.errors import CommitConflictError

    base = _table(tmp_path)
    pending = cp.begin_write(base, "commit")
    name = _data_file(base, pending)
    payload = _commit_bytes(base, name, pending.instant_time)
    pending.heartbeat.stop(delete=False)  # judged dead ...
    cp.rollback_failed_writes(base)
    with pytest.raises(CommitConflictError):  # ... so its late completion must fail
        cp.complete_write(pending, payload, committed_files=[name])
    assert HudiTable(base).file_slices() == []


def test_a_leftover_marker_folder_of_an_archived_instant_never_deletes_its_files(tmp_path: Path) -> None:
    """A crash after a commit completed can leave its marker folder; once Hudi archives that instant (its
    files leave the active timeline), the instant is neither pending nor completed there. The sweep of stray
    markers deleted the files it names, live committed files (session 19: 40 rows read, then 20)."""
    base = _table(tmp_path)
    first = cp.begin_write(base, "commit")
    name = _data_file(base, first)
    cp.complete_write(first, _commit_bytes(base, name, first.instant_time), committed_files=[name])
    second = cp.begin_write(base, "commit")
    other = _data_file(base, second)
    cp.complete_write(second, _commit_bytes(base, other, second.instant_time), committed_files=[other])
    timeline = base / ".hoodie" / "timeline"
    (timeline / "history").mkdir(exist_ok=True)
    for f in timeline.iterdir():  # Hudi's archival: the first instant leaves the active timeline
        if f.name.startswith(first.instant_time):
            f.unlink()
    (timeline / "history" / f"{first.instant_time}_{first.instant_time}_0.parquet").write_bytes(b"PAR1PAR1")
    leftover = base / ".hoodie" / ".temp" / first.instant_time
    leftover.mkdir(parents=True)
    (leftover / f"{name}.marker.CREATE").touch()
    third = cp.begin_write(base, "commit")  # sweeps stray markers
    assert (base / name).exists() and (base / other).exists()
    assert not leftover.exists(), "the leftover folder itself goes"
    cp.abort_write(third)
    # a marker folder of an instant newer than the timeline's start that never completed: its files go
    fourth = cp.begin_write(base, "commit")
    orphan = _data_file(base, fourth)
    fourth.heartbeat.stop(delete=False)
    for f in timeline.iterdir():
        if f.name.startswith(fourth.instant_time):
            f.unlink()
    cp.abort_write(cp.begin_write(base, "commit"))
    assert not (base / orphan).exists()


def test_a_pending_instant_of_a_hudi_writer_with_a_fresh_heartbeat_is_left_alone(tmp_path: Path) -> None:
    """Hudi's writers heartbeat by re-creating an empty file every 60 s and count it expired after 120 s
    (HoodieHeartbeatClient). A pending instant whose empty heartbeat is fresh belongs to a running Hudi
    writer: rolling it back (as before session 19) deleted files that writer would then commit."""
    import os
    import time

    base = _table(tmp_path)
    pending = cp.begin_write(base, "commit")
    name = _data_file(base, pending)
    pending.heartbeat.stop(delete=True)
    beat = base / ".hoodie" / ".heartbeat" / pending.instant_time
    beat.write_bytes(b"")  # Hudi's heartbeat: an empty file, just re-created
    props = load_properties(base / ".hoodie")
    assert cp.rollback_failed_writes(base, props) == []
    assert (base / name).exists()
    old = time.time() - 300
    os.utime(beat, (old, old))  # expired: that writer is gone
    assert cp.rollback_failed_writes(base, props) == [pending.instant_time]
    assert not (base / name).exists()


def test_our_heartbeat_refreshes_its_file_for_hudis_writers(tmp_path: Path, monkeypatch) -> None:
    import os
    import time

    from hudi_layout.table import locks

    monkeypatch.setattr(locks, "HEARTBEAT_REFRESH_SECONDS", 0.05)
    base = _table(tmp_path)
    beat = Heartbeat(base, "20261127000000000")
    old = time.time() - 300
    os.utime(beat.path, (old, old))
    deadline = time.time() + 5
    while os.stat(beat.path).st_mtime < time.time() - 60 and time.time() < deadline:
        time.sleep(0.02)
    assert os.stat(beat.path).st_mtime > time.time() - 60, "the heartbeat file was not refreshed"
    beat.stop()
    assert not beat.path.exists()


def test_a_pending_restore_stops_every_change_before_it_touches_anything(tmp_path: Path) -> None:
    """Hudi's writers refuse to start an instant while a restore is pending (the table may be half restored);
    so do ours: the check sits in the rollback of failed writes, which every changing operation runs first."""
    from hudi_layout.errors import UnsupportedTableError
    from hudi_layout.format.instant import State, instant_file_name
    from tests.helpers.integration import diff_snapshots, tree_snapshot

    base = _table(tmp_path)
    pending = cp.begin_write(base, "commit")
    name = _data_file(base, pending)
    cp.complete_write(pending, _commit_bytes(base, name, pending.instant_time), committed_files=[name])
    tdir = cp.timeline_dir(base, load_properties(base / ".hoodie"))
    (tdir / instant_file_name("20990101000000000", "restore", State.INFLIGHT)).write_bytes(b"")
    before = tree_snapshot(base)
    with pytest.raises(UnsupportedTableError, match="a restore is pending .*20990101000000000") as err:
        cp.begin_write(base, "commit")
    assert "finish the restore with Hudi" in (err.value.hint or "")
    with pytest.raises(UnsupportedTableError, match="restore is pending"):
        cp.rollback_failed_writes(base)
    assert diff_snapshots(before, tree_snapshot(base)) == []
    assert [s.base_file_name for s in HudiTable(base).file_slices()] == [name]  # reads go on
