from __future__ import annotations

from pathlib import Path

import pytest

from hudi_layout.errors import NotAHudiTableError
from hudi_layout.format.commit_metadata import (
    clustering_plan_metadata,
    commit_metadata_bytes,
    replace_commit_metadata_bytes,
    requested_replace_bytes,
)
from hudi_layout.format.instant import State
from hudi_layout.table.timeline import Timeline

PLAN = {"inputGroups": [{"slices": [{"dataFilePath": "p/a.parquet", "deltaFilePaths": [], "fileId": "a-0",
                                     "partitionPath": "p", "bootstrapFilePath": "", "version": 1}],
                         "metrics": {}, "numOutputFileGroups": 1, "extraMetadata": None, "version": 1}],
        "strategy": {"strategyClassName": "S", "strategyParams": {}, "version": 1}, "extraMetadata": {},
        "version": 1, "preserveHoodieMetadata": True, "missingSchedulePartitions": None}


def _mk(tmp: Path, layout: int) -> Path:
    hoodie = tmp / ".hoodie"
    tdir = hoodie / "timeline" if layout == 2 else hoodie
    tdir.mkdir(parents=True)
    meta = {"partitionToWriteStats": {}, "operationType": "INSERT", "extraMetadata": {"schema": "{}"}}
    version = 9 if layout == 2 else 6
    t1, t2, t3, t4 = "20240101000000000", "20240101000001000", "20240101000002000", "20240101000003000"
    (tdir / f"{t1}.commit.requested").write_bytes(b"")
    (tdir / f"{t1}.inflight").write_bytes(b"")
    done1 = f"{t1}_{t1[:-1]}5.commit" if layout == 2 else f"{t1}.commit"
    (tdir / done1).write_bytes(commit_metadata_bytes(meta, version))
    # pending clustering
    if layout == 2:
        (tdir / f"{t2}.clustering.requested").write_bytes(requested_replace_bytes(clustering_plan_metadata(PLAN)))
        (tdir / f"{t2}.clustering.inflight").write_bytes(b"")
    else:
        (tdir / f"{t2}.replacecommit.requested").write_bytes(requested_replace_bytes(clustering_plan_metadata(PLAN)))
        (tdir / f"{t2}.replacecommit.inflight").write_bytes(b"")
    # pending insert_overwrite (not clustering)
    (tdir / f"{t3}.replacecommit.requested").write_bytes(requested_replace_bytes({}))
    # completed replacecommit (insert overwrite)
    (tdir / f"{t4}.replacecommit.requested").write_bytes(requested_replace_bytes({}))
    done4 = f"{t4}_{t4[:-1]}5.replacecommit" if layout == 2 else f"{t4}.replacecommit"
    (tdir / done4).write_bytes(replace_commit_metadata_bytes(
        {**meta, "operationType": "INSERT_OVERWRITE", "partitionToReplaceFileIds": {"p": ["b-0"]}}, version))
    (tdir / "hoodie.properties").write_text("not an instant")  # ignored junk
    return hoodie


@pytest.mark.parametrize("layout", [1, 2])
def test_synthetic_timeline(tmp_path: Path, layout: int) -> None:
    hoodie = _mk(tmp_path, layout)
    tl = Timeline.load(tmp_path, layout_version=layout)
    assert [i.requested_time for i in tl] == ["20240101000000000", "20240101000001000", "20240101000002000",
                                              "20240101000003000"]
    assert len(tl.files) == 8
    assert [i.state for i in tl] == [State.COMPLETED, State.INFLIGHT, State.REQUESTED, State.COMPLETED]
    assert tl.last_completed().requested_time == "20240101000003000"
    assert tl.first_completed().requested_time == "20240101000000000"
    assert len(tl.pending()) == 2 and len(tl.completed().actions("commit")) == 1
    assert len(tl.commits_and_replaces()) == 4
    pc = tl.pending_clustering()
    assert len(pc) == 1 and pc[0][0].requested_time == "20240101000001000" and pc[0][1] == PLAN
    assert tl.is_clustering(pc[0][0])
    assert not tl.is_clustering(tl.get("20240101000002000"))
    assert not tl.is_clustering(tl.get("20240101000003000"))
    assert tl.replaced_file_groups() == {("p", "b-0")}
    assert tl.replaced_file_groups(as_of="20240101000002000") == set()
    assert tl.read_commit_metadata(tl.first())["operationType"] == "INSERT"
    assert tl.max_instant_time() >= "20240101000003000"
    assert Timeline.load(hoodie, layout).reload().instants == tl.instants


def test_not_a_table(tmp_path: Path) -> None:
    with pytest.raises(NotAHudiTableError):
        Timeline.load(tmp_path, 1)


def test_fixture_timelines(fixture_table, expected_tables) -> None:
    for zip_name, exp in expected_tables.items():
        base = fixture_table(zip_name)
        tl = Timeline.load(base)
        replaces = [i.requested_time for i in tl.completed().actions("replacecommit")]
        assert replaces == exp["completed_replacecommits"], zip_name
        assert tl.pending_clustering() == []
        mdt = base / ".hoodie" / "metadata"
        if mdt.is_dir():
            mtl = Timeline.load(mdt)
            assert mtl.completed().actions("deltacommit")
    tl = Timeline.load(base.parent.parent / "cow_v9_txns_simple_meta" / "v9_txns_simple_meta")
    clusterings = [i.requested_time for i in tl.completed() if tl.is_clustering(i)]
    assert clusterings == ["20260307162454799"]
    assert tl.read_clustering_plan("20260307162454799")["preserveHoodieMetadata"] is True
    assert tl.read_clustering_plan("20260307162450901") is None
