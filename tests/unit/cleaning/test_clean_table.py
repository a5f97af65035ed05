"""Cleaning real tables (built without Spark): the clean instant, the metadata table, readers, recovery."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from hudi_layout.cleaning import clean, clean_if_due, execute
from hudi_layout.errors import CommitConflictError, CorruptFileError, UnsupportedTableError
from hudi_layout.format.clean_metadata import CleanerPlan, cleaner_plan_bytes, decode_clean_metadata
from hudi_layout.format.instant import State, instant_file_name
from hudi_layout.format.properties import load_properties
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.metadata.mdt_reader import MetadataTableReader
from hudi_layout.metadata.mdt_writer import MetadataWriter
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.integration import hudi_rs_read, hudi_rs_slices, our_slices
from tests.helpers.live_tables import LiveTable

NOW_GRACE = {"hudi_layout.clean.grace.period.seconds": "0"}


def opts(**kw: str) -> dict[str, str]:
    out = dict(NOW_GRACE)
    out.update({k.replace("_", "."): v for k, v in kw.items()})
    return out


RETAIN_2 = {**NOW_GRACE, "hoodie.cleaner.commits.retained": "2"}


def clustered(tmp_path: Path, times: int, **kw) -> LiveTable:
    t = LiveTable.create(tmp_path / "t", **kw)
    t.insert({"region=us": 2, "region=eu": 2} if t.partitioned else {"": 3})
    for _ in range(times):
        t.replace(t.live_groups())
    return t


def index_files(base: Path, column: str = "v", live_only: bool = False) -> set[str]:
    return set(ColumnStatsIndex(base).load_column(column, live_only=live_only).column("file_name").to_pylist())


def mdt_files(base: Path) -> set[str]:
    listing = MetadataTableReader(base).files_listing()
    return {f"{p}/{n}" if p else n for p, names in listing.items() for n in names}


def test_clean_after_clusterings(tmp_path: Path) -> None:
    t = clustered(tmp_path, 5)
    before = t.rows()
    files_before = t.data_files()
    assert len(files_before) == 24
    (res,) = clean(t.base, RETAIN_2)
    # 6 commits, retain 2: ECTR = 5th; groups replaced before it (those of the insert and the first two
    # clusterings) are deleted; the three newest layouts stay (the oldest for readers of the retained instants)
    assert res.files_deleted == 12 and not res.resumed
    assert len(t.data_files()) == 12
    assert t.rows() == before == t.values
    # the clean instant, as Hudi writes it
    names = t.timeline_names()
    for state in (State.REQUESTED, State.INFLIGHT):
        assert instant_file_name(res.instant_time, "clean", state) in names
    done = [n for n in names if n.startswith(res.instant_time + "_") and n.endswith(".clean")]
    assert len(done) == 1
    meta = decode_clean_metadata((t.base / ".hoodie" / "timeline" / done[0]).read_bytes())
    assert meta.total_files_deleted == 12 and meta.earliest_commit_to_retain == res.earliest_commit_to_retain
    assert {n for p in meta.partitions.values() for n in p.deleted} == {Path(f).name for f in
                                                                        files_before - t.data_files()}
    # metadata table: files listing and column_stats hold exactly what is on disk
    assert mdt_files(t.base) == t.data_files()
    on_disk = {Path(f).name for f in t.data_files()}
    for column in ("v", "id", "_hoodie_record_key", "region"):
        assert index_files(t.base, column) == on_disk
        assert index_files(t.base, column, live_only=True) == {Path(s).name for s in our_slices(t.base)}
    # independent reader
    assert hudi_rs_slices(t.base) == our_slices(t.base)
    rs = hudi_rs_read(t.base)
    assert dict(zip(rs.column("id").to_pylist(), rs.column("v").to_pylist())) == before
    # every retained instant can still be read (time travel): all its files exist
    ectr = res.earliest_commit_to_retain
    table = HudiTable(t.base)
    for inst in table.timeline.completed().commits_and_replaces():
        if inst.requested_time >= ectr:
            slices = table.file_slices(as_of=inst.requested_time)
            assert slices and all(Path(s.base_file_path).exists() for s in slices)
    # nothing left to delete: no new instant
    assert clean(t.base, RETAIN_2) == []


def test_twenty_files_clustered_three_times_index_shows_twenty(tmp_path: Path) -> None:
    t = LiveTable.create(tmp_path / "t", partitioned=False)
    t.insert({"": 20})
    for _ in range(3):
        t.replace(t.live_groups())
    assert len(t.data_files()) == 80
    for column in ("v", "id"):
        assert len(ColumnStatsIndex(t.base).load_column(column)) == 20
        assert len(ColumnStatsIndex(t.base).load_column(column, live_only=False)) == 80


def test_compaction_drops_tombstones(tmp_path: Path) -> None:
    t = clustered(tmp_path, 4)
    clean(t.base, RETAIN_2)
    writer = MetadataWriter(t.base)
    writer.compact()
    reader = MetadataTableReader(t.base)
    for sl in reader.file_slices("column_stats"):
        assert not sl.log_files
    records = list(reader.records("column_stats"))
    assert records and not any(r.column_stats.is_deleted for r in records)
    assert index_files(t.base) == {Path(f).name for f in t.data_files()}
    assert mdt_files(t.base) == t.data_files()


def test_space_bound_after_ten_clusterings(tmp_path: Path) -> None:
    t = LiveTable.create(tmp_path / "t", partitioned=False)
    t.insert({"": 20})
    for _ in range(10):
        t.replace(t.live_groups())
        clean_if_due(t.base, RETAIN_2)  # as after every clustering
    live = our_slices(t.base)
    assert len(live) == 20
    assert len(t.data_files()) <= 3 * len(live)
    assert len(ColumnStatsIndex(t.base).load_column("v", live_only=False)) <= 3 * len(live)


def test_keep_latest_file_versions(tmp_path: Path) -> None:
    t = LiveTable.create(tmp_path / "t")
    t.insert({"region=us": 2})
    g = t.live_groups()
    for _ in range(4):
        t.update([g[0]])
    before = t.rows()
    # the index keeps every slice's record until the clean; load_column shows the latest slices only
    assert index_files(t.base, live_only=True) == {Path(s).name for s in our_slices(t.base)}
    assert len(index_files(t.base)) == 6
    (res,) = clean(t.base, opts(hoodie_cleaner_policy="KEEP_LATEST_FILE_VERSIONS",
                                hoodie_cleaner_fileversions_retained="2"))
    assert res.files_deleted == 3 and res.earliest_commit_to_retain == ""
    assert len(t.data_files()) == 3  # g0: two versions, g1: one
    assert t.rows() == before == t.values


def test_grace_period_defers_deletion(tmp_path: Path) -> None:
    t = clustered(tmp_path, 3)
    o = {"hoodie.cleaner.commits.retained": "1", "hudi_layout.clean.grace.period.seconds": "3600"}
    assert clean(t.base, o) == []  # everything left the snapshot seconds ago
    assert len(t.data_files()) == 16
    later = datetime.now() + timedelta(hours=2)
    (res,) = clean(t.base, o, now=later)
    assert res.files_deleted == 8


def test_pending_clustering_caps_retention_and_is_protected(tmp_path: Path) -> None:
    t = clustered(tmp_path, 2)
    plan_instant = t.schedule_clustering(t.live_groups())
    for _ in range(3):
        t.insert({"region=us": 1})
    # the plan is pending: the ECTR cannot pass it (it stays at the second clustering), so only the groups
    # replaced by the first clustering may go, not those replaced by the second
    (res,) = clean(t.base, {**RETAIN_2, "hoodie.cleaner.commits.retained": "1"})
    assert res.earliest_commit_to_retain < plan_instant
    assert res.files_deleted == 4 and len(t.data_files()) == 8 + 3
    slices = HudiTable(t.base).file_slices()
    assert all(Path(s.base_file_path).exists() for s in slices)
    # the plan still executes: its inputs are all there
    before = t.rows()
    groups = [g for g in t.live_groups() if g in {(s.partition_path, s.file_id) for s in slices}]
    t.execute_clustering(plan_instant, [g for g in groups if g[0] == "region=us"][:1])
    assert t.rows() == before


def test_orphans_of_aborted_writes_are_deleted(tmp_path: Path) -> None:
    from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS
    from hudi_layout.table.commit_protocol import abort_write, begin_write

    t = clustered(tmp_path, 2)
    pending = begin_write(t.base, "commit", hooks=COMMIT_HOOKS)
    late = t.base / "region=us" / f"deadbeef-0000-0000-0000-000000000000-0_0-1-0_{pending.instant_time}.parquet"
    abort_write(pending)
    late.write_bytes(b"late file of an aborted write")  # an executor finishing after the abort
    t.insert({"region=us": 1})
    (res,) = clean(t.base, opts(hoodie_cleaner_commits_retained="10"))
    assert res.files_deleted == 1 and not late.exists()


def test_files_of_a_running_write_are_never_touched(tmp_path: Path) -> None:
    from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS
    from hudi_layout.table.commit_protocol import begin_write

    t = clustered(tmp_path, 3)
    pending = begin_write(t.base, "commit", hooks=COMMIT_HOOKS)
    mine = t.base / "region=us" / f"deadbeef-0000-0000-0000-000000000000-0_0-1-0_{pending.instant_time}.parquet"
    mine.write_bytes(b"being written")
    clean(t.base, RETAIN_2)
    assert mine.exists()
    pending.heartbeat.stop()


@pytest.mark.parametrize("crash_at", ["clean_after_plan", "clean_mid_deletes", "clean_before_mdt",
                                      "clean_before_complete"])
def test_interrupted_clean_is_finished_by_the_next(tmp_path: Path, monkeypatch, crash_at: str) -> None:
    t = clustered(tmp_path, 5)
    before = t.rows()

    class Crash(BaseException):
        pass

    def crash(name: str) -> None:
        if name == crash_at:
            raise Crash(name)

    monkeypatch.setattr(execute, "crash_point", crash)
    with pytest.raises(Crash):
        clean(t.base, RETAIN_2)
    monkeypatch.undo()
    assert t.rows() == before  # a pending clean never hides or duplicates a row
    assert hudi_rs_slices(t.base) == our_slices(t.base)
    # the next clean (automatic, after a commit) finishes the pending one first
    t.insert({"region=eu": 1})
    results = clean_if_due(t.base, RETAIN_2)
    assert results[0].resumed and results[0].files_deleted == 12
    assert len({r.instant_time for r in results}) == len(results)
    assert not [n for n in t.timeline_names() if n.endswith((".clean.inflight", ".clean.requested")) and
                not any(m.startswith(n.split(".")[0] + "_") for m in t.timeline_names())]
    assert t.rows() == t.values
    assert mdt_files(t.base) == t.data_files()
    assert index_files(t.base) == {Path(f).name for f in t.data_files()}


def test_mdt_compaction_waits_for_a_pending_clean(tmp_path: Path, monkeypatch) -> None:
    t = clustered(tmp_path, 4)

    class Crash(BaseException):
        pass

    def crash(name: str) -> None:
        if name == "clean_before_complete":
            raise Crash(name)

    monkeypatch.setattr(execute, "crash_point", crash)
    with pytest.raises(Crash):
        clean(t.base, RETAIN_2)
    with pytest.raises(CommitConflictError):
        MetadataWriter(t.base).compact()


def test_a_tampered_plan_deletes_nothing(tmp_path: Path) -> None:
    t = clustered(tmp_path, 3)
    outside = tmp_path / "precious.parquet"
    outside.write_bytes(b"not the table's")
    victim = sorted(t.data_files())[0]
    props = load_properties(t.base / ".hoodie")
    plan = CleanerPlan("KEEP_LATEST_COMMITS", None, "", {"region=us": (str(t.base / victim), str(outside))})
    (t.base / ".hoodie" / "timeline" / instant_file_name("20990101000000000", "clean", State.REQUESTED)).write_bytes(
        cleaner_plan_bytes(plan))
    assert props.version == 9
    with pytest.raises(CorruptFileError):
        clean(t.base, RETAIN_2)
    assert outside.exists() and (t.base / victim).exists()


def test_savepoints_are_refused(tmp_path: Path) -> None:
    t = clustered(tmp_path, 1)
    (t.base / ".hoodie" / "timeline" / "20200101000000000.savepoint.inflight").write_bytes(b"")
    with pytest.raises(UnsupportedTableError, match="savepoint"):
        clean(t.base, RETAIN_2)
    assert clean_if_due(t.base, RETAIN_2) == []  # the automatic clean skips it (a warning, not a failed write)


def test_automatic_trigger(tmp_path: Path) -> None:
    t = clustered(tmp_path, 4)
    assert clean_if_due(t.base, {**RETAIN_2, "hoodie.clean.automatic": "false"}) == []
    assert clean_if_due(t.base, {**RETAIN_2, "hoodie.clean.max.commits": "6"}) == []  # 5 commits so far
    (res,) = clean_if_due(t.base, {**RETAIN_2, "hoodie.clean.max.commits": "5"})
    t.replace(t.live_groups())
    assert clean_if_due(t.base, {**RETAIN_2, "hoodie.clean.max.commits": "2"}) == []  # 1 commit since the clean
    assert res.files_deleted == 8


def test_non_partitioned_table_without_mdt(tmp_path: Path) -> None:
    t = clustered(tmp_path, 4, partitioned=False, mdt=False)
    before = t.rows()
    (res,) = clean(t.base, RETAIN_2)
    assert res.files_deleted == 6 and res.partitions == ("",)
    assert t.rows() == before
    assert hudi_rs_slices(t.base) == our_slices(t.base)


def test_cli_clean_does_not_start_spark(tmp_path: Path, monkeypatch, capsys) -> None:
    from hudi_layout.tools import cli

    def no_spark(*_a, **_k):
        raise AssertionError("hudi-layout clean started Spark")

    monkeypatch.setattr(cli, "_spark", no_spark)
    t = clustered(tmp_path, 3)
    assert cli.main(["clean", str(t.base), "-o", "hoodie.cleaner.commits.retained=1", "-o",
                     "hudi_layout.clean.grace.period.seconds=0"]) == 0
    assert "deleted 8 file(s)" in capsys.readouterr().out
    assert cli.main(["clean", str(t.base)]) == 0
    assert "nothing to clean" in capsys.readouterr().out
    assert cli.main(["clean", str(t.base), "-o", "hoodie.clean.async=true"]) == 2
    assert "hoodie.clean.async" in capsys.readouterr().err


def _mdt_data_files(base: Path) -> list[Path]:
    return [p for part in ("files", "column_stats") for p in (base / ".hoodie" / "metadata" / part).iterdir()
            if not p.name.startswith(".hoodie_partition")]


def test_metadata_table_slices_before_its_last_compaction_are_cleaned(tmp_path: Path) -> None:
    t = clustered(tmp_path, 12)  # 13 deltacommits: one MDT compaction
    MetadataWriter(t.base).compact()  # and another one right now
    before = _mdt_data_files(t.base)
    kept = {"hoodie.cleaner.commits.retained": "20", "hudi_layout.clean.grace.period.seconds": "3600"}
    assert clean(t.base, kept) == [] and _mdt_data_files(t.base) == before  # compaction too recent
    assert clean(t.base, opts(hoodie_cleaner_commits_retained="20")) == []
    after = _mdt_data_files(t.base)
    # one base per file group (files: 1 group, column_stats: 2), no log file: all compacted
    assert len(after) == 3 and all(p.suffix == ".hfile" for p in after) and len(before) > 3
    assert mdt_files(t.base) == t.data_files()
    assert index_files(t.base) == {Path(f).name for f in t.data_files()}
    t.insert({"region=us": 1})  # the MDT keeps working: a new deltacommit on top of the new base
    assert mdt_files(t.base) == t.data_files()


def test_automatic_clean_failure_does_not_fail_the_commit(tmp_path: Path, caplog) -> None:
    t = clustered(tmp_path, 3)
    (t.base / ".hoodie" / "timeline" / instant_file_name("20200101000000000", "clean", State.REQUESTED)
     ).write_bytes(b"not avro")
    with pytest.raises(CorruptFileError, match="cannot be finished"):
        clean(t.base, RETAIN_2)
    assert clean_if_due(t.base, RETAIN_2) == []
    assert "automatic clean" in caplog.text and "abandons that clean" in caplog.text


def test_time_travel_to_a_cleaned_instant_is_refused_never_short(tmp_path: Path) -> None:
    """A past view whose files a clean deleted is refused by the scan plan (it would read fewer rows in silence);
    every instant the clean retained still plans, and so does the latest snapshot."""
    from hudi_layout.errors import InvalidArgumentError
    from hudi_layout.scan.plan import plan_scan

    t = LiveTable.create(tmp_path / "t", partitioned=False)
    t.insert({"": 3})
    t.update(t.live_groups()[:1])
    for _ in range(3):
        t.replace(t.live_groups())
    table = HudiTable(t.base)
    instants = [i.requested_time for i in table.timeline.completed().commits_and_replaces()]
    expected = {i: t.rows(as_of=i) for i in instants}
    assert table.fs_view.view(as_of=instants[0]).cleaned_away == []  # nothing cleaned yet
    (res,) = clean(t.base, RETAIN_2)
    table = HudiTable(t.base)
    refused = 0
    for i in instants:
        cleaned = table.fs_view.view(as_of=i).cleaned_away
        assert not (cleaned and i >= res.earliest_commit_to_retain), f"{i}: a retained instant lost files"
        if not cleaned:  # the view is whole: it reads every row it held (Hudi keeps the slice before the ECTR)
            assert t.rows(as_of=i) == expected[i], i
            plan_scan(t.base, None, options={"as.of.instant": i}, with_row_counts=False)
            continue
        refused += 1
        assert all(c == res.instant_time for c, _ in cleaned), i
        assert len(t.rows(as_of=i)) < len(expected[i])  # what the raw view would read: rows lost in silence
        with pytest.raises(InvalidArgumentError, match=f"as.of.instant={i} needs .* the clean at"):
            plan_scan(t.base, None, options={"as.of.instant": i}, with_row_counts=False)
    assert refused >= 1
    assert table.fs_view.view().cleaned_away == []
    plan_scan(t.base, None, with_row_counts=False)
