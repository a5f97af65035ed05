"""The Arrow curve-sort pieces of clustering, run without Spark: sketch, map-side split, reduce-side merge,
and the writer's rows-per-file cut."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_layout.curves import encode_column, from_sortable_int64
from hudi_layout.spark import curve_sort as cs
from hudi_layout.spark.curve_key import KEY_COLUMN
from hudi_layout.spark.range_layout import PARTITION_COLUMN
from hudi_layout.writer.base_file_writer import (
    WriterInputError,
    WriteSpec,
    decode_results,
    dictionary_columns,
    write_partition,
)

T = "20260101000000000"
COLS = ("a", "s")


def _files(tmp_path: Path, n_files: int = 4, rows: int = 500, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n_files):
        a = rng.integers(-1000, 1000, rows)
        table = pa.table({
            "a": pa.array(a, pa.int64(), mask=rng.random(rows) < 0.05),
            "s": pa.array([f"host-{v:06d}" for v in rng.integers(0, 10**6, rows)]),
            "payload": pa.array([f"p{i}-{j}" for j in range(rows)]),
            "_hoodie_record_key": pa.array([f"{i}-{j}" for j in range(rows)]),
            "_hoodie_partition_path": pa.array([""] * rows),
        })
        p = tmp_path / f"f{i}.parquet"
        pq.write_table(table, p, row_group_size=128)
        paths.append(str(p))
    return paths


def _sketch_locally(paths: list[str], rate: float) -> cs.Sketch:
    """What :func:`cs.sketch` assembles on the driver, from one task's output."""
    out = pa.Table.from_batches([cs._sketch_task(paths, COLS, rate, 7)])
    kind = out.column("kind").to_numpy()
    ranges = []
    for j in range(len(COLS)):
        col = pa.compute.fill_null(out.column(f"c{j}"), 0).to_numpy()
        lo, hi = col[kind == 1][0], col[kind == 2][0]
        ranges.append((int(from_sortable_int64(np.array([lo]))[0]), int(from_sortable_int64(np.array([hi]))[0])))
    sample = tuple(from_sortable_int64(pa.compute.fill_null(out.column(f"c{j}"), 0).to_numpy()[kind == 0])
                   for j in range(len(COLS)))
    return cs.Sketch(int(out.column("n").to_numpy()[kind == 3].sum()), tuple(ranges), sample)


def test_balanced_bins_cover_every_file_once_and_balance_weight() -> None:
    files = [(f"p{i}", w) for i, w in enumerate([10, 9, 8, 1, 1, 1, 1, 1])]
    bins = cs.balanced_bins(files, 3)
    assert sorted(p for b in bins for p in b) == sorted(p for p, _ in files)
    weights = {p: w for p, w in files}
    loads = sorted(sum(weights[p] for p in b) for b in bins)
    assert loads == [10, 11, 11]
    assert cs.balanced_bins(files[:2], 8) == [["p0"], ["p1"]]


def test_sketch_task_counts_rows_and_finds_exact_min_max_codes(tmp_path: Path) -> None:
    paths = _files(tmp_path)
    sk = _sketch_locally(paths, rate=0.2)
    full = pa.concat_tables([pq.read_table(p) for p in paths])
    assert sk.rows == full.num_rows
    for j, c in enumerate(COLS):
        codes = encode_column(full.column(c).drop_null())
        assert sk.ranges[j] == (int(codes.min()), int(codes.max()))
    n = sk.sample[0].size
    assert 0.1 * full.num_rows < n < 0.3 * full.num_rows
    assert all(s.size == n for s in sk.sample)


def test_split_and_merge_keep_every_row_once_in_key_order(tmp_path: Path) -> None:
    paths = _files(tmp_path)
    sk = _sketch_locally(paths, rate=1.0)
    for curve, method in (("zorder", "direct"), ("hilbert", "sample")):
        params = cs.params_from_sketch(sk, COLS, curve, method, 32)
        n = 3
        bounds = cs.partition_bounds(params, sk, n)
        preimages = np.array([100, 200, 300], np.int32)
        names = ("a", "s", "payload", "_hoodie_record_key", "_hoodie_partition_path")
        schema = pq.read_schema(paths[0])
        mapper = cs._map_mapper([paths[:2], paths[2:]], names, schema, params, bounds, preimages)
        out = list(mapper(iter([pa.record_batch([pa.array([0, 1])], names=["id"])])))
        rows = pa.Table.from_batches(out)
        assert set(rows.column(PARTITION_COLUMN).to_pylist()) <= {100, 200, 300}
        merged_keys = []
        seen = []
        for pre in (100, 200, 300):
            part = rows.filter(pa.compute.equal(rows.column(PARTITION_COLUMN), pre))
            merged = pa.Table.from_batches(list(cs._merged_rows(iter(part.to_batches()))) or [],
                                           schema=None) if part.num_rows else None
            if merged is None:
                continue
            assert KEY_COLUMN not in merged.column_names
            keys = params.keys(merged)
            assert np.all(keys[1:] >= keys[:-1])  # sorted within the partition
            merged_keys.append((keys.min(), keys.max()))
            seen += merged.column("_hoodie_record_key").to_pylist()
        # partitions are disjoint key ranges in partition order, and no row is lost or duplicated
        for (_, hi), (lo, _) in zip(merged_keys, merged_keys[1:]):
            assert hi <= lo
        expected = pa.concat_tables([pq.read_table(p) for p in paths]).column("_hoodie_record_key").to_pylist()
        assert sorted(seen) == sorted(expected)


def test_missing_column_in_a_base_file_is_a_clear_error(tmp_path: Path) -> None:
    paths = _files(tmp_path, n_files=1)
    with pytest.raises(WriterInputError, match="lacks columns"):
        list(cs._file_batches(paths, ("a", "nope")))


def _batch(n: int, start: int = 0) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "id": pa.array(range(start, start + n), pa.int64()),
        "_hoodie_record_key": pa.array([str(i) for i in range(start, start + n)]),
        "_hoodie_partition_path": pa.array([""] * n),
    })


@pytest.mark.parametrize("total, cap, expected", [
    (1000, 100, [100] * 10),
    (1040, 100, [100] * 9 + [140]),   # a short tail joins the last file
    (1070, 100, [100] * 10 + [70]),   # a long tail gets its own file
    (30, 100, [30]),
])
def test_writer_cuts_files_at_rows_per_file_without_small_tails(tmp_path: Path, total: int, cap: int,
                                                                 expected: list[int]) -> None:
    spec = WriteSpec(base_path=str(tmp_path), instant_time=T, data_columns=("id",), max_rows_per_file=cap)
    batches = [_batch(min(37, total - s), s) for s in range(0, total, 37)]
    files = decode_results(next(write_partition(spec, iter(batches))).to_pylist())
    sizes = []
    first_ids = []
    for f in files:
        t = pq.read_table(tmp_path / f.file_name)
        sizes.append(t.num_rows)
        first_ids.append(t.column("id")[0].as_py())
    order = np.argsort(first_ids)
    assert [sizes[i] for i in order] == expected
    assert sum(sizes) == total


def test_dictionary_only_for_repetitive_columns() -> None:
    t = pa.table({"unique": pa.array([f"u{i}" for i in range(100)]), "few": pa.array(["x", "y"] * 50),
                  "flag": pa.array([True, False] * 50)})
    assert dictionary_columns(t) == ["few"]


def test_footer_summary_gives_rows_and_exact_code_ranges(tmp_path: Path) -> None:
    paths = _files(tmp_path)
    summary = cs.footer_summary(paths, COLS)
    full = pa.concat_tables([pq.read_table(p) for p in paths])
    assert sum(summary.rows) == full.num_rows
    for j, c in enumerate(COLS):
        codes = encode_column(full.column(c).drop_null())
        assert summary.ranges[j] == (int(codes.min()), int(codes.max()))


def test_footer_summary_without_statistics_is_unknown(tmp_path: Path) -> None:
    p = tmp_path / "nostats.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3], "s": ["x", "y", "z"]}), p, write_statistics=False)
    assert cs.footer_summary([str(p)], COLS).ranges == (None, None)
    assert cs.footer_summary([str(p)], ("missing",)).ranges == (None,)


def test_sample_files_is_seeded_and_holds_enough_rows() -> None:
    paths = [f"p{i}" for i in range(100)]
    rows = [10] * 100
    chosen, chosen_rows = cs.sample_files(paths, rows, 95)
    assert sum(chosen_rows) >= 95 and len(chosen) == 10 and chosen == sorted(chosen)
    assert cs.sample_files(paths, rows, 95) == (chosen, chosen_rows)
    assert cs.sample_files(paths, rows, 10_000)[0] == paths


def test_qdtree_map_reduce_writes_each_leaf_as_its_own_files(tmp_path: Path) -> None:
    """The qdtree sort key through the same map side; partition bounds sit on leaf boundaries (small leaves are
    never split between tasks) and the reduce side writes every leaf as files that never span two leaves."""
    from hudi_layout.clustering.qdtree import build_qdtree, code_spaces_of, layout_for, workload_boxes
    from hudi_layout.clustering.workload import Workload

    paths = _files(tmp_path, n_files=4, rows=800)
    sk = _sketch_locally(paths, rate=1.0)
    schema = pq.read_schema(paths[0])
    boxes = workload_boxes(Workload.of(["a < -500", "s LIKE 'host-9%'", "a BETWEEN 100 AND 150"]).predicates(schema),
                           COLS, schema)
    tree, _ = build_qdtree(list(sk.sample), COLS, code_spaces_of(schema, COLS), boxes, rows_per_file=200)
    assert tree.num_leaves >= 3
    layout = layout_for(tree, list(sk.sample))
    n = 3
    bounds = cs.leaf_partition_bounds(layout, sk, n)
    leaf_counts = np.bincount(tree.route(list(sk.sample)), minlength=tree.num_leaves)
    for b in bounds:  # a bound inside a leaf only where that leaf alone is over half a partition
        leaf = int(layout.leaf_of_keys(np.array([b], np.uint64))[0])
        inside = int(b) != layout.leaf_start_key(leaf)
        assert not inside or leaf_counts[leaf] > leaf_counts.sum() / n / 2
    names = ("a", "s", "payload", "_hoodie_record_key", "_hoodie_partition_path")
    preimages = np.array([100, 200, 300], np.int32)
    mapper = cs._map_mapper([paths[:2], paths[2:]], names, schema, layout, bounds, preimages)
    rows = pa.Table.from_batches(list(mapper(iter([pa.record_batch([pa.array([0, 1])], names=["id"])]))))
    spec = WriteSpec(base_path=str(tmp_path / "out"), instant_time=T, data_columns=("a", "s", "payload"),
                     stats_columns=("a",), layout_key_column=KEY_COLUMN)
    written = []
    for pre in (100, 200, 300):
        part = rows.filter(pa.compute.equal(rows.column(PARTITION_COLUMN), pre))
        for batch in cs._write_leaves(spec, layout, 400, iter(part.to_batches())):
            written += decode_results(batch.to_pylist())
    assert sum(w.num_records for w in written) == 3200
    for w in written:
        t = pq.read_table(tmp_path / "out" / w.file_name, columns=list(COLS))
        leaves = tree.route([encode_column(t.column(c)) for c in COLS])
        assert np.unique(leaves).size == 1
        lo, hi = from_sortable_int64(np.array(w.key_range, np.int64))
        assert int(lo) >> layout.inner_bits == int(hi) >> layout.inner_bits == int(leaves[0])


def test_sketch_task_with_workload_boxes_adds_box_rows_and_keeps_the_uniform_sample(tmp_path: Path) -> None:
    from hudi_layout.clustering.qdtree import rows_in_boxes, workload_boxes
    from hudi_layout.clustering.workload import Workload

    paths = _files(tmp_path, n_files=4, rows=2_000)
    schema = pq.read_schema(paths[0])
    boxes = workload_boxes(Workload.of(["a BETWEEN 10 AND 14", "a < -900 AND s < 'host-5'"]).predicates(schema),
                           list(COLS), schema)
    plain = pa.Table.from_batches([cs._sketch_task(paths, COLS, 0.01, 7)])
    boosted = pa.Table.from_batches([cs._sketch_task(paths, COLS, 0.01, 7, boxes=boxes, per_box=50)])
    for t in (plain, boosted):  # extremes and count do not depend on the boxes
        assert t.column("n").to_numpy()[t.column("kind").to_numpy() == 3].sum() == 8_000

    def sampled(t: pa.Table) -> tuple[list[np.ndarray], np.ndarray]:
        keep = t.column("kind").to_numpy() == 0
        codes = [from_sortable_int64(pa.compute.fill_null(t.column(f"c{j}"), 0).to_numpy()[keep]) for j in range(2)]
        return codes, t.column("u").to_numpy()[keep]

    codes_p, u_p = sampled(plain)
    codes_b, u_b = sampled(boosted)
    uniform = u_b < 0.01
    for j in range(2):  # the same uniform rows, in the same order
        assert np.array_equal(codes_b[j][uniform], codes_p[j])
    table = pq.read_table(paths, columns=list(COLS))
    everything = rows_in_boxes([encode_column(table.column(c)) for c in COLS], boxes)
    got = rows_in_boxes(codes_b, boxes)
    for b in range(everything.shape[0]):
        assert got[b].sum() >= min(int(everything[b].sum()), 50)
