"""Scheduling on real (hand-built) tables: the requested instant Hudi writes, pending exclusion, errors."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hudi_layout.clustering.plan import ClusteringPlanSpec
from hudi_layout.clustering.schedule import load_pending_plans, load_plan, schedule_clustering
from hudi_layout.errors import InvalidArgumentError, UnsupportedTableError
from hudi_layout.format.commit_metadata import decode_requested_replace
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.timeline import Timeline
from tests.helpers.mor_builder import Upserts, make_mor_table, row
from tests.helpers.tablemaker import add_commit, make_table, schema_with_field

SMALL = {"hoodie.clustering.plan.strategy.small.file.limit": str(10 * 1024 * 1024)}


def _slices_by_part(plan: ClusteringPlanSpec) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for g in plan.groups:
        out.setdefault(g.partition_path, set()).update(s.file_id for s in g.slices)
    return out


def test_schedule_v9_writes_clustering_requested(tmp_path: Path) -> None:
    t = make_table(tmp_path / "t")
    c1 = add_commit(t, {"region=us": [50, 60], "region=eu": [40]})
    c2 = add_commit(t, {"region=us": [(c1.file_ids["region=us"][0], 70)]})  # new version of a group
    res = schedule_clustering(t.base, SMALL, columns="x,y", strategy="z-order")
    assert res is not None
    instant, plan = res
    assert instant > c2.instant
    assert _slices_by_part(plan) == {p: set(ids) for p, ids in c1.file_ids.items()}
    # the latest slice of the updated group is planned
    updated = [s for g in plan.groups for s in g.slices if s.file_id == c1.file_ids["region=us"][0]]
    assert updated[0].commit_time == c2.instant
    tdir = t.base / ".hoodie" / "timeline"
    req = tdir / f"{instant}.clustering.requested"
    assert req.is_file() and not (tdir / f"{instant}.clustering.inflight").exists()
    doc = decode_requested_replace(req.read_bytes())
    assert doc["operationType"] == "CLUSTER" and doc["extraMetadata"] == {} and doc["version"] == 1
    assert doc["clusteringPlan"] == plan.to_avro_plan()
    params = doc["clusteringPlan"]["strategy"]["strategyParams"]
    assert params["hoodie.clustering.plan.strategy.sort.columns"] == "x,y"
    # the timeline and the fs view see a pending clustering (readers unaffected)
    table = HudiTable(t.base)
    assert table.pending_clustering_file_groups() == plan.file_groups
    assert len(table.file_slices()) == 3
    # load back
    (pt, pplan), = load_pending_plans(t.base)
    assert pt == instant and pplan.file_groups == plan.file_groups
    assert pplan.options.layout_strategy == "z-order"
    assert load_plan(t.base, instant).to_avro_plan() == plan.to_avro_plan()


def test_second_schedule_skips_pending_groups(tmp_path: Path) -> None:
    t = make_table(tmp_path / "t")
    add_commit(t, {"region=us": [50, 60]})
    first = schedule_clustering(t.base, SMALL, columns="x")
    assert first is not None
    assert schedule_clustering(t.base, SMALL, columns="x") is None  # everything already planned
    c = add_commit(t, {"region=us": [30, 20]})
    second = schedule_clustering(t.base, SMALL, columns="x")
    assert second is not None
    assert second[1].file_groups == {("region=us", f) for f in c.file_ids["region=us"]}
    assert not (first[1].file_groups & second[1].file_groups)
    assert [p[0] for p in load_pending_plans(t.base)] == [first[0], second[0]]


def test_concurrent_schedulers_never_share_a_file_group(tmp_path: Path) -> None:
    t = make_table(tmp_path / "t")
    add_commit(t, {"region=us": [10, 20, 30], "region=eu": [10, 20]})
    results: list[object] = []

    def run() -> None:
        results.append(schedule_clustering(t.base, SMALL, columns="x"))

    threads = [threading.Thread(target=run) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    plans = [r for r in results if r is not None]
    assert len(plans) == 1  # the first takes every small file; the others find nothing left
    assert len(load_pending_plans(t.base)) == 1


def test_schedule_v6_is_refused_like_execution(tmp_path: Path) -> None:
    """Scheduling follows the executor's rule (format.capabilities): a v6 plan could never run here."""
    t = make_table(tmp_path / "t6", version=6)
    add_commit(t, {"region=us": [50, 60]})
    before = sorted(p.name for p in (t.base / ".hoodie").iterdir())
    with pytest.raises(UnsupportedTableError, match="executes clustering on versions 8 and 9 only") as ei:
        schedule_clustering(t.base, SMALL, columns="x")
    assert ei.value.hint == "upgrade the table with Hudi first"
    assert sorted(p.name for p in (t.base / ".hoodie").iterdir()) == before
    assert Timeline.load(t.base).pending_clustering() == []


def test_nonpartitioned_and_nothing_to_do(tmp_path: Path) -> None:
    t = make_table(tmp_path / "np", partition_field=None)
    add_commit(t, {"": [10, 20]})
    before = sorted(p.name for p in (t.base / ".hoodie" / "timeline").iterdir())
    tiny = {"hoodie.clustering.plan.strategy.small.file.limit": "1"}
    assert schedule_clustering(t.base, tiny, columns="x") is None
    assert sorted(p.name for p in (t.base / ".hoodie" / "timeline").iterdir()) == before
    res = schedule_clustering(t.base, tiny, columns="x", include_all_files=True)
    assert res is not None and res[1].partitions == ("",)
    assert all(s["partitionPath"] == "" for g in res[1].to_avro_plan()["inputGroups"] for s in g["slices"])


def test_partition_selection_on_table(tmp_path: Path) -> None:
    t = make_table(tmp_path / "t")
    add_commit(t, {"region=us": [10, 20], "region=eu": [10, 20], "region=apac": [5]})
    regex = {**SMALL, "hoodie.clustering.plan.strategy.partition.regex.pattern": "region=(us|eu)"}
    res = schedule_clustering(t.base, regex, columns="x")
    assert res is not None and res[1].partitions == ("region=eu", "region=us")
    with pytest.raises(InvalidArgumentError, match="region=mars"):
        schedule_clustering(t.base, {"hoodie.clustering.plan.strategy.partition.selected": "region=mars"},
                            columns="x")


def test_validation_happens_before_any_write(tmp_path: Path) -> None:
    t = make_table(tmp_path / "t")
    add_commit(t, {"region=us": [10, 20]})
    add_commit(t, {"region=us": [10]}, schema_json=schema_with_field(
        t, {"name": "tags", "type": ["null", {"type": "array", "items": "string"}], "default": None}))
    tdir = t.base / ".hoodie" / "timeline"
    before = sorted(p.name for p in tdir.iterdir())
    cases = [({"columns": "region"}, "partition column"), ({"columns": "nope"}, "'nope'"),
             ({"columns": "tags"}, "'tags'"), ({"columns": "x", "strategy": "spiral"}, "strategy"),
             ({"columns": list("abcdefghi"), "strategy": "hilbert"}, "at most 8")]
    for kwargs, needle in cases:
        with pytest.raises(InvalidArgumentError) as ei:
            schedule_clustering(t.base, SMALL, **kwargs)  # type: ignore[arg-type]
        assert needle in str(ei.value)
    assert sorted(p.name for p in tdir.iterdir()) == before
    assert not list((t.base / ".hoodie" / ".temp").iterdir())


def test_merge_on_read_slices_are_planned_with_their_log_files(tmp_path: Path) -> None:
    """Hudi's plan of a MOR slice lists its log files (``deltaFilePaths``, absolute URIs) beside the base file;
    a log-only slice has no ``dataFilePath``; file groups in a pending compaction are not planned."""
    t = make_mor_table(tmp_path / "t")
    c1 = t.deltacommit(inserts={"": [row("a", 1)]}, log_inserts={"": [row("b", 1)]})
    with_base, log_only = c1.file_ids
    c2 = t.deltacommit(logs={with_base: [Upserts([row("a", 2)])]})
    compacting = t.deltacommit(inserts={"": [row("c", 1)]}).file_ids[0]
    t.schedule_compaction([compacting])
    res = schedule_clustering(t.base, SMALL, columns="ts")
    assert res is not None
    instant, plan = res
    assert plan.file_groups == {("", with_base), ("", log_only)}
    doc = decode_requested_replace(next((t.base / ".hoodie" / "timeline").glob(f"{instant}.clustering.requested"))
                                   .read_bytes())
    slices = {sl["fileId"]: sl for g in doc["clusteringPlan"]["inputGroups"] for sl in g["slices"]}
    assert slices[with_base]["deltaFilePaths"] == [f"file:{t.base / c2.log_paths[0]}"]
    assert slices[with_base]["dataFilePath"].startswith(f"file:{t.base}/{with_base}_")
    assert slices[log_only]["dataFilePath"] == "" and slices[log_only]["deltaFilePaths"] == [
        f"file:{t.base / c1.log_paths[0]}"]
    # read back, the slices are what the file-system view gives
    back = {s.file_id: s for g in load_plan(t.base, instant).groups for s in g.slices}
    live = {s.file_id: s for s in HudiTable(t.base).file_slices()}
    for fid in (with_base, log_only):
        assert back[fid] == live[fid]


def test_refuses_version_6_merge_on_read(tmp_path: Path) -> None:
    t = make_mor_table(tmp_path / "t", version=6, payload_class=None)
    t.deltacommit(inserts={"": [row("a", 1)]})
    with pytest.raises(UnsupportedTableError, match="version 6"):
        schedule_clustering(t.base, SMALL, columns="ts")


def test_real_table_excludes_its_pending_plan(fixture_table) -> None:  # type: ignore[no-untyped-def]
    base: Path = fixture_table("cow_v9_txns_simple_meta.zip")
    tdir = base / ".hoodie" / "timeline"
    # make the fixture's clustering pending again: drop its completed replacecommit
    (tdir / "20260307162454799_20260307162456102.replacecommit").unlink()
    pending = HudiTable(base).pending_clustering_file_groups()
    assert len(pending) == 5
    res = schedule_clustering(base, {}, columns="txn_ts,amount", strategy="z-order")
    assert res is not None
    _instant, plan = res
    assert not (plan.file_groups & pending)
    assert plan.file_groups  # the other small file groups of the table
    assert [t for t, _ in load_pending_plans(base)] == ["20260307162454799", _instant]


def test_constant_partition_columns() -> None:
    from hudi_layout.clustering.schedule import constant_partition_columns
    from hudi_layout.format.properties import TableProperties

    def cols(props: dict[str, str]) -> list[str]:
        return constant_partition_columns(TableProperties(props))

    assert cols({"hoodie.table.partition.fields": "region,day"}) == ["region", "day"]
    # a timestamp key generator buckets a varying column: sorting by it inside a partition is useful
    assert cols({"hoodie.table.partition.fields": "ts_str", "hoodie.table.keygenerator.type": "TIMESTAMP"}) == []
    assert cols({"hoodie.table.partition.fields": "region:SIMPLE,ts:TIMESTAMP",
                 "hoodie.table.keygenerator.type": "CUSTOM"}) == ["region"]
    assert cols({}) == []
