"""Savepoints (docs/savepoints.md): what they write, that reads see through them, and that cleans keep their
files (tables built without Spark; hudi-rs reads them too)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import hudi_layout as hl
from hudi_layout.cleaning import clean, clean_if_due
from hudi_layout.errors import InvalidArgumentError, UnsupportedTableError
from hudi_layout.format.clean_metadata import SAVEPOINTED_TIMESTAMPS, decode_clean_metadata
from hudi_layout.format.commit_metadata import decode_timeline_content
from hudi_layout.format.instant import parse_instant_file_name
from hudi_layout.format.savepoint_metadata import decode_savepoint_metadata
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.timeline import Timeline, _collapse
from hudi_layout.tools.cli import main as cli_main
from tests.helpers.integration import hudi_rs_read
from tests.helpers.live_tables import LiveTable

RETAIN_1 = {"hudi_layout.clean.grace.period.seconds": "0", "hoodie.cleaner.commits.retained": "1"}


def updated_table(tmp_path: Path, updates: int = 3) -> tuple[LiveTable, list[str]]:
    """A partitioned table whose groups get ``updates`` new slices; returns the commit times, oldest first."""
    t = LiveTable.create(tmp_path / "t")
    times = [t.insert({"region=us": 2, "region=eu": 1}).instant]
    for _ in range(updates):
        times.append(t.update(t.live_groups()).instant)
    return t, times


def timeline_files(t: LiveTable) -> list[str]:
    return [n for n in t.timeline_names() if ".savepoint" in n]


def test_a_savepoint_on_the_latest_commit_hides_nothing_from_reads(tmp_path: Path) -> None:
    """The wrong answer this guards: the timeline kept one instant per requested time, and a savepoint shares
    its commit's; the completed savepoint could stand in for the commit, whose files then counted as uncommitted
    and every read (ours) fell back to the slices before it."""
    t, times = updated_table(tmp_path, 1)
    latest = t.rows()
    info = hl.savepoint(str(t.base))
    assert info.instant_time == times[-1] and info.files == 3 and info.partitions == 2
    assert t.rows() == latest
    assert {s.commit_time for s in HudiTable(t.base).file_slices()} == {times[-1]}
    rs = hudi_rs_read(t.base)  # the independent reader agrees
    assert dict(zip(rs.column("id").to_pylist(), rs.column("v").to_pylist())) == latest
    files = list(Timeline.load(t.base / ".hoodie").files)
    commit = next(f for f in files if f.requested_time == times[-1] and f.action == "commit" and f.is_completed)
    savepoint = next(f for f in files if f.action == "savepoint" and f.is_completed)
    for order in itertools.permutations([commit, savepoint]):  # whatever order the folder lists them in
        collapsed = _collapse(list(order))
        assert [i.action for i in collapsed] == ["commit", "savepoint"]


def test_savepoint_files_are_hudi_s(tmp_path: Path) -> None:
    t, times = updated_table(tmp_path, 1)
    hl.savepoint(str(t.base), times[0], comment="before the backfill", user="alice")
    names = timeline_files(t)
    assert f"{times[0]}.savepoint.inflight" in names
    (done,) = [n for n in names if not n.endswith(".inflight")]
    parsed = parse_instant_file_name(done)
    assert parsed is not None and parsed.requested_time == times[0] and parsed.completion_time
    raw = decode_timeline_content((t.base / ".hoodie" / "timeline" / done).read_bytes())
    assert list(raw) == ["savepointedBy", "savepointedAt", "comments", "partitionMetadata", "version"]
    assert raw["partitionMetadata"]["region=us"]["partitionPath"] == "region=us"
    meta = decode_savepoint_metadata((t.base / ".hoodie" / "timeline" / done).read_bytes())
    assert meta.savepointed_by == "alice" and meta.comments == "before the backfill"
    as_of = {(s.partition_path, s.base_file_name) for s in HudiTable(t.base).file_slices(as_of=times[0])}
    assert meta.file_set() == as_of


def test_clean_keeps_savepointed_slices_and_time_travel_reads_them(tmp_path: Path) -> None:
    t, times = updated_table(tmp_path, 3)
    pinned = t.rows(as_of=times[1])
    hl.savepoint(str(t.base), times[1])
    (res,) = clean(t.base, RETAIN_1)
    # retain 1: the slices of times[0] go; those of times[1] are savepointed; times[2] is the newest before the ECTR
    assert res.files_deleted == 3
    assert t.rows(as_of=times[1]) == pinned
    plan_extra = decode_clean_metadata(next(
        (t.base / ".hoodie" / "timeline").glob(f"{res.instant_time}_*.clean")).read_bytes()).extra_metadata
    assert plan_extra == {SAVEPOINTED_TIMESTAMPS: times[1]}
    t.update(t.live_groups())
    (res2,) = clean(t.base, RETAIN_1)  # times[2]'s slices go; the savepointed ones stay
    assert t.rows(as_of=times[1]) == pinned and res2.files_deleted == 3
    hl.delete_savepoint(str(t.base), times[1])
    assert timeline_files(t) == []
    (res3,) = clean(t.base, RETAIN_1)  # free to go now
    assert res3.files_deleted == 3
    assert HudiTable(t.base).fs_view.view(times[1]).cleaned_away  # time travel to it is refused from now on


def test_file_versions_policy_keeps_savepointed_slices_too(tmp_path: Path) -> None:
    t, times = updated_table(tmp_path, 3)
    pinned = t.rows(as_of=times[0])
    hl.savepoint(str(t.base), times[0])
    (res,) = clean(t.base, {"hudi_layout.clean.grace.period.seconds": "0",
                            "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                            "hoodie.cleaner.fileversions.retained": "1"})
    assert res.files_deleted == 6  # times[1] and times[2]; times[0] is savepointed
    assert t.rows(as_of=times[0]) == pinned


def test_replaced_groups_stay_while_savepointed(tmp_path: Path) -> None:
    t = LiveTable.create(tmp_path / "t")
    first = t.insert({"region=us": 2}).instant
    pinned = t.rows()
    hl.savepoint(str(t.base), first)
    for _ in range(3):
        t.replace(t.live_groups())
    before = t.data_files()
    clean(t.base, RETAIN_1)
    assert t.rows(as_of=first) == pinned
    assert {f for f in before if first in f} <= t.data_files()


def test_refusals_change_nothing(tmp_path: Path) -> None:
    t, times = updated_table(tmp_path, 3)
    with pytest.raises(InvalidArgumentError, match="not a completed commit"):
        hl.savepoint(str(t.base), "20200101000000000")
    hl.savepoint(str(t.base), times[2])
    with pytest.raises(InvalidArgumentError, match="savepointed already"):
        hl.savepoint(str(t.base), times[2])
    hl.delete_savepoint(str(t.base), times[2])
    clean(t.base, RETAIN_1)
    with pytest.raises(InvalidArgumentError, match="older than the earliest commit the last clean retained"):
        hl.savepoint(str(t.base), times[0])
    with pytest.raises(InvalidArgumentError, match="no savepoint at"):
        hl.delete_savepoint(str(t.base), times[0])
    assert timeline_files(t) == []
    with pytest.raises(InvalidArgumentError, match="instant_time must be a string"):
        hl.savepoint(str(t.base), 2024)  # type: ignore[arg-type]


def test_a_savepoint_left_inflight_stops_cleans_until_completed_or_deleted(tmp_path: Path) -> None:
    t, times = updated_table(tmp_path, 2)
    (t.base / ".hoodie" / "timeline" / f"{times[1]}.savepoint.inflight").write_bytes(b"")
    before = t.data_files()
    with pytest.raises(UnsupportedTableError, match="never completed"):
        clean(t.base, RETAIN_1)
    assert clean_if_due(t.base, {**RETAIN_1, "hoodie.clean.max.commits": "1"}) == []  # a warning, not a failure
    assert t.data_files() == before
    assert [s.state for s in hl.savepoints(str(t.base))] == ["inflight"]
    hl.savepoint(str(t.base), times[1])  # completes it
    assert [s.state for s in hl.savepoints(str(t.base))] == ["completed"]
    (res,) = clean(t.base, RETAIN_1)
    assert res.files_deleted == 3  # times[0] only


def test_cli_savepoint_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t, times = updated_table(tmp_path, 1)

    def cli(*args: str) -> tuple[int, str, str]:
        code = cli_main(["savepoint", *args])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = cli("create", str(t.base), "--at", times[0], "--comment", "x")
    assert code == 0 and f"savepoint {times[0]}: 3 file(s)" in out, err
    code, out, _ = cli("list", str(t.base))
    assert code == 0 and out.startswith(times[0]) and ": x" in out
    for bad, want in [(("create", str(t.base), times[0]), "takes no instant"),
                      (("delete", str(t.base)), "needs the savepoint's instant"),
                      (("list", str(t.base), "--at", times[0]), "only apply to savepoint create"),
                      (("list", str(t.base), "--master", "local[1]"), "restore only"),
                      (("create", str(tmp_path / "missing")), "")]:
        code, _, err = cli(*bad)
        assert code == 2 and err.startswith("error:") and "Traceback" not in err, err
        assert want in err and "hint:" in err
    code, _, _ = cli("delete", str(t.base), times[0])
    assert code == 0 and timeline_files(t) == []


# ------------------------------------------------------------------------------------------------- restore


def _no_spark() -> None:
    raise AssertionError("a Copy-on-Write index rebuild needs no Spark")


def rebuild(path: str) -> dict:
    from hudi_layout.services.index import build_column_stats_index

    return build_column_stats_index(path, spark=_no_spark)


def test_restore_takes_the_table_back_to_the_savepoint_through_clusterings_cleans_and_later_savepoints(
        tmp_path: Path) -> None:
    from hudi_layout.services.savepoint import restore_to_savepoint

    t, times = updated_table(tmp_path, 2)
    pinned_rows = t.rows()
    pinned_files = {(s.partition_path, s.base_file_name) for s in HudiTable(t.base).file_slices()}
    sp = hl.savepoint(str(t.base)).instant_time
    t.update(t.live_groups()[:2])
    t.replace(t.live_groups())  # a clustering after the savepoint
    later = hl.savepoint(str(t.base)).instant_time
    t.update(t.live_groups()[:1])
    clean(t.base, RETAIN_1)
    pending_plan = t.schedule_clustering(t.live_groups()[:1])  # a pending plan after it too
    result = restore_to_savepoint(str(t.base), sp, rebuild_index=rebuild)
    assert result.savepoint_time == sp and not result.resumed and result.savepoints_deleted == (later,)
    assert [a for _t, a in result.rolled_back] == ["clustering", "commit", "replacecommit", "commit"]
    assert result.rolled_back[0][0] == pending_plan
    assert t.rows() == pinned_rows
    assert {(s.partition_path, s.base_file_name) for s in HudiTable(t.base).file_slices()} == pinned_files
    rs = hudi_rs_read(t.base)
    assert dict(zip(rs.column("id").to_pylist(), rs.column("v").to_pylist())) == pinned_rows
    names = t.timeline_names()
    assert not [n for n in names if n.split(".")[0].split("_")[0] > sp
                and n.split(".")[1] in ("commit", "replacecommit", "clustering", "inflight")]
    assert any(n.endswith(".restore") for n in names) and [s.instant_time for s in hl.savepoints(str(t.base))] == [sp]
    assert result.index.get("files") == len(pinned_files)  # the metadata table was built again
    from hudi_layout.metadata.mdt_reader import MetadataTableReader
    listing = MetadataTableReader(t.base).files_listing()
    assert {(p, n) for p, names_ in listing.items() for n in names_} >= pinned_files
    # the table lives on: writes and cleans after the restore
    t.values = dict(pinned_rows)
    t.update(t.live_groups())
    clean(t.base, RETAIN_1)  # the savepointed slices stay: the savepoint is still there
    assert t.rows() == t.values and t.rows(as_of=sp) == pinned_rows


def test_restore_refusals_change_nothing(tmp_path: Path) -> None:
    from hudi_layout.services.savepoint import restore_to_savepoint

    t, times = updated_table(tmp_path, 2)
    before = sorted(t.timeline_names()), t.data_files()
    with pytest.raises(InvalidArgumentError, match="no savepoint at"):
        restore_to_savepoint(str(t.base), times[0])
    assert (sorted(t.timeline_names()), t.data_files()) == before
    code = cli_main(["savepoint", "restore", str(t.base)])
    assert code == 2


def test_a_pending_restore_stops_other_commands_and_the_same_restore_finishes_it(tmp_path: Path) -> None:
    """A restore killed half-way (its plan written, one instant undone): readers see every row once, every
    command that changes the table refuses, and running the same restore again completes it."""
    from hudi_layout.format.instant import State, instant_file_name
    from hudi_layout.format.savepoint_metadata import RestorePlan, restore_plan_bytes
    from hudi_layout.services.savepoint import restore_to_savepoint

    t, times = updated_table(tmp_path, 3)
    pinned = t.rows(as_of=times[1])
    hl.savepoint(str(t.base), times[1])
    tdir = t.base / ".hoodie" / "timeline"
    r = "20991231000000000"
    plan = RestorePlan(times[1], ((times[3], "commit"), (times[2], "commit")))
    (tdir / instant_file_name(r, "restore", State.REQUESTED)).write_bytes(restore_plan_bytes(plan))
    (tdir / instant_file_name(r, "restore", State.INFLIGHT)).write_bytes(b"")
    for f in tdir.iterdir():  # the newest instant already left the timeline, its files not yet deleted
        if f.name.startswith(times[3]):
            f.unlink()
    assert t.rows() == t.rows(as_of=times[2])  # every row once, as of the instant not yet undone
    with pytest.raises(UnsupportedTableError, match="restore is pending"):
        clean(t.base, RETAIN_1)
    with pytest.raises(UnsupportedTableError, match="must finish first"):
        restore_to_savepoint(str(t.base), times[2])
    for change in (lambda: hl.savepoint(str(t.base), times[2]), lambda: hl.delete_savepoint(str(t.base), times[1])):
        with pytest.raises(UnsupportedTableError, match="restore is pending") as err:
            change()
        assert f"savepoint restore {t.base} {times[1]}' again" in (err.value.hint or "")
    result = restore_to_savepoint(str(t.base), times[1], rebuild_index=rebuild)
    assert result.resumed and result.restore_time == r and t.rows() == pinned
    assert not [p for p in t.data_files() if times[3] in p or times[2] in p]

