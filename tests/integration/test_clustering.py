"""Clustering end to end on generated tables: rows unchanged for three readers, meta columns preserved,
replaced file groups gone, the Hudi timeline shape, layout quality on a grid, and argument errors."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_layout
from hudi_layout import HudiTable
from hudi_layout.errors import InvalidArgumentError
from tests.helpers.clustering import (
    column_spans,
    completed_replacecommits,
    digests,
    grid_table,
    hudi_rs_slice_names,
    our_slice_names,
    slices_arrow,
    table_bytes,
    timeline_files,
    typed_table,
    write_arrow,
    write_options,
)

pytestmark = pytest.mark.integration

N_ROWS = 2000

CASES = [
    # (strategy, method, columns, partitioned)
    ("linear", "direct", ["dbl", "name"], True),
    ("z-order", "direct", ["i32", "dbl"], False),
    ("z-order", "sample", ["ts", "name"], True),
    ("hilbert", "direct", ["dec", "day"], True),
    ("hilbert", "sample", ["i64", "dbl", "ts"], False),
]


def _meta_by_key(table: pa.Table) -> dict[str, tuple[str, str, str]]:
    keys = table.column("_hoodie_record_key").to_pylist()
    ct = table.column("_hoodie_commit_time").to_pylist()
    sq = table.column("_hoodie_commit_seqno").to_pylist()
    pp = table.column("_hoodie_partition_path").to_pylist()
    out = {k: (a, b, c) for k, a, b, c in zip(keys, ct, sq, pp)}
    assert len(out) == len(keys), "record keys repeat"
    return out


@pytest.mark.parametrize("strategy,method,columns,partitioned", CASES,
                         ids=[f"{c[0]}-{c[1]}-{'part' if c[3] else 'nonpart'}" for c in CASES])
def test_cluster_preserves_rows_meta_and_timeline(spark, tmp_path: Path, strategy, method, columns, partitioned):
    path = tmp_path / "t"
    data = typed_table(N_ROWS, seed=len(columns) + (5 if partitioned else 0))
    opts = write_options("typed", partition="part" if partitioned else None)
    write_arrow(spark, data, path, opts, files=6)
    before = digests(spark, path)
    assert {k: v[0] for k, v in before.items()} == {"ours": N_ROWS, "pyarrow-slices": N_ROWS, "hudi-rs": N_ROWS}
    meta_before = _meta_by_key(slices_arrow(path))
    slices_before = HudiTable(str(path)).file_slices()
    groups_before = {s.file_group for s in slices_before}
    names_before = our_slice_names(path)
    assert hudi_rs_slice_names(path) == names_before

    target = max(1, table_bytes(path) // (6 if partitioned else 3))
    m = hudi_layout.cluster(str(path), columns, spark=spark, strategy=strategy, method=method,
                            options={"hoodie.clustering.plan.strategy.target.file.max.bytes": str(target),
                                     "hoodie.layout.optimize.build.curve.sample.size": "500"})
    assert m is not None
    assert m.records == N_ROWS
    assert m.files_in == len(slices_before)

    # 1. the same rows for every reader
    after = digests(spark, path)
    assert after == before

    # 2. meta columns kept per record key; _hoodie_file_name names the file the row is in
    slices_after = HudiTable(str(path)).file_slices()
    assert len(slices_after) == m.files_out
    assert _meta_by_key(slices_arrow(path)) == meta_before
    for s in slices_after:
        names = set(pq.read_table(s.base_file_path, columns=["_hoodie_file_name"]).column(0).to_pylist())
        assert names == {s.base_file_name}
        assert s.commit_time == m.instant_time

    # 3. replaced file groups are gone for us and for hudi-rs
    assert not ({s.file_group for s in slices_after} & groups_before)
    after_names = our_slice_names(path)
    assert hudi_rs_slice_names(path) == after_names
    assert not (after_names & names_before)

    # 4. timeline: T.clustering.requested, T.clustering.inflight, T_C.replacecommit with operation CLUSTER
    files = timeline_files(path)
    t = m.instant_time
    assert f"{t}.clustering.requested" in files
    assert f"{t}.clustering.inflight" in files
    done = [f for f in files if f.startswith(f"{t}_") and f.endswith(".replacecommit")]
    assert len(done) == 1, files
    assert completed_replacecommits(path) == [t]
    table = HudiTable(str(path))
    assert table.properties.version == 9
    instant = next(i for i in table.timeline.completed() if i.requested_time == t)
    meta = table.timeline.read_commit_metadata(instant)
    assert meta.get("operationType") == "CLUSTER"
    replaced = {(p, f) for p, ids in (meta.get("partitionToReplaceFileIds") or {}).items() for f in ids}
    assert replaced == groups_before


def _avg_span_fraction(spans: list[tuple[int, int]], full: int) -> float:
    return sum((hi - lo) for lo, hi in spans) / len(spans) / full


def test_curve_quality_on_grid_and_skipping(spark, tmp_path: Path):
    """64x64 grid written as 16 random files: after z-order (then Hilbert) clustering into 16 files every
    file covers a small box, and a box predicate skips most files."""
    path = tmp_path / "grid"
    side = 64
    write_arrow(spark, grid_table(side), path, write_options("grid"), files=16)
    spans = column_spans(path, ["x", "y"])
    assert len(spans["x"]) >= 12
    for c in ("x", "y"):
        assert _avg_span_fraction(spans[c], side - 1) > 0.8  # random layout: every file spans ~everything
    box = "x < 16 AND y < 16"
    random_plan = hudi_layout.explain(str(path), box)
    assert random_plan.files_after_column_stats >= random_plan.files_total - 1
    expected = hudi_layout.read(str(path), box, spark=spark).count()
    assert expected == 256

    for strategy in ("z-order", "hilbert"):
        target = math.ceil(table_bytes(path) / 16)
        m = hudi_layout.cluster(str(path), ["x", "y"], spark=spark, strategy=strategy,
                                options={"hoodie.clustering.plan.strategy.target.file.max.bytes": str(target)})
        assert m is not None and m.files_out >= 12
        spans = column_spans(path, ["x", "y"])
        for c in ("x", "y"):
            frac = _avg_span_fraction(spans[c], side - 1)
            assert frac < 1 / 3, f"{strategy}: average {c} span {frac:.2f} of the range"
        plan = hudi_layout.explain(str(path), box)
        assert plan.files_total == m.files_out
        assert plan.files_after_column_stats <= plan.files_total // 3, plan.render()
        assert len(plan.dropped_by_column_stats) == plan.files_total - plan.files_after_column_stats
        assert hudi_layout.read(str(path), box, spark=spark).count() == expected


# ---------------------------------------------------------------------------------------------- errors

@pytest.fixture(scope="module")
def error_table(spark, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("errors") / "t"
    rows = 50
    cols = {f"c{i}": pa.array(list(range(i, i + rows)), pa.int64()) for i in range(10)}
    tbl = pa.table({
        "id": pa.array([f"r{i}" for i in range(rows)]),
        **cols,
        "region": pa.array(["eu" if i % 2 else "us" for i in range(rows)]),
    })
    write_arrow(spark, tbl, path, write_options("errs", partition="region"), files=2)
    return path


def _state(path: Path) -> tuple[list[str], set[str], list[str]]:
    tmp = path / ".hoodie" / ".temp"
    return timeline_files(path), our_slice_names(path), sorted(p.name for p in tmp.iterdir()) if tmp.exists() else []


@pytest.mark.parametrize("columns,needle", [
    (["c0", "nope"], "nope"),
    (["region", "c1"], "region"),
    ([f"c{i}" for i in range(10)], "10"),
], ids=["unknown-column", "partition-column", "too-many-columns"])
def test_invalid_sort_columns_fail_before_writing(spark, error_table: Path, columns, needle):
    before = _state(error_table)
    with pytest.raises(InvalidArgumentError) as ei:
        hudi_layout.cluster(str(error_table), columns, spark=spark, strategy="z-order")
    assert needle in str(ei.value)
    assert _state(error_table) == before


def test_a_table_with_nested_columns_clusters_on_its_other_columns(spark, fixture_table):
    """A Java-written table holding struct, array and map columns clusters on a plain column: the writer's
    per-task encoding choice (distinct counts, codec trial) failed on the nested columns with a pyarrow error
    in the executors before any file was written (found in session 10). The rows hudi-rs reads are the same
    before and after, and a filter on a struct field gives the same count."""
    from tests.helpers.integration import hudi_rs_read, rows_digest

    path = fixture_table("cow_v8_nonpartitioned.zip")
    data_columns = [c for c in hudi_rs_read(path).column_names if not c.startswith("_hoodie")]
    before = rows_digest(hudi_rs_read(path).select(data_columns))
    where = "structField.field2 > 0"
    count_before = hudi_layout.read(str(path), spark=spark).where(where).count()
    metrics = hudi_layout.cluster(str(path), ["intField"], spark=spark, strategy="hilbert",
                                  options={"hoodie.clustering.plan.strategy.small.file.limit": "1000000000"})
    assert metrics is not None and metrics.files_out >= 1
    assert completed_replacecommits(path)
    assert rows_digest(hudi_rs_read(path).select(data_columns)) == before
    assert hudi_layout.read(str(path), spark=spark).where(where).count() == count_before


def test_map_column_fails_before_writing(spark, fixture_table):
    """Our writer cannot write maps, so use a real Hudi table with a map column."""
    path = fixture_table("cow_v8_nonpartitioned.zip")
    before = _state(path)
    with pytest.raises(InvalidArgumentError) as ei:
        hudi_layout.cluster(str(path), ["intField", "mapField"], spark=spark, strategy="hilbert")
    assert "mapField" in str(ei.value)
    assert _state(path) == before
