"""Offline replay of a ``qdtree`` clustering: files each query of the conn workloads would read, without Spark.

The benchmark (``bench_workload``) runs the real clustering, ~30 s a layout at 10M rows. This replays it in
numpy in a few seconds per variant, to compare search settings: it reads the sort columns of the cached
as-ingested table (``<work>/layouts_<rows>_f<files>/random``, built by ``bench_workload`` or
``bench_clustering``), draws the sample the sketch job would (a uniform sample of ``--sample`` rows plus up to
``BOX_SAMPLE_ROWS`` rows of every workload box, one priority per row), builds the tree with
``clustering.qdtree.build_qdtree``, cuts its leaves into one-file cells (``fill_leaves``, on a uniform sample of
at least ``EXECUTION_SAMPLE_ROWS`` rows as the execution does; ``--no-cells``: not), keys every row with
``layout_for``, cuts each leaf into
``max(1, round(rows / rows_per_file))`` equal files as the reduce tasks do, and counts the files whose min/max
box meets each query's boxes. On 10M rows it gave 62-65 files for Q1-Q7 where the benchmark measured 62.

Run: ``python -m bench.qdtree_replay --work-dir /tmp/bw10m [--sample N] [--lookahead M] [--min-leaf F]
[--seeds 17,5,99] [--uniform] [--no-cells] [--shape-weight W]``; prints one line per seed (no report: an
exploration tool).
"""

from __future__ import annotations

import argparse
import glob
import time
from typing import Any

import numpy as np

from hudi_layout.spark.clustering_job import EXECUTION_SAMPLE_ROWS

from .bench_workload import HELD_OUT, WORKLOAD
from .common import log
from .conn_data import CURVE_COLUMNS


def load_codes(table_path: str, columns: list[str]) -> tuple[np.ndarray, Any]:
    import pyarrow.parquet as pq

    from hudi_layout.curves import encode_column

    files = sorted(glob.glob(f"{table_path}/**/*.parquet", recursive=True))
    if not files:
        raise SystemExit(f"no parquet files under {table_path}; run bench_workload first")
    table = pq.read_table(files, columns=columns)
    return np.stack([encode_column(table.column(c)) for c in columns]), table.schema


def files_read(codes: np.ndarray, layout: Any, boxes: dict[str, Any],
               rows_per_file: float) -> tuple[dict[str, int], int]:
    from hudi_layout.clustering.qdtree import leaf_file_starts

    keys = layout.keys_from_codes(list(codes))
    order = np.argsort(keys, kind="stable")
    at = leaf_file_starts(layout.leaf_of_keys(keys[order]), rows_per_file)
    ordered = codes[:, order]
    mins = np.stack([np.minimum.reduceat(c, at) for c in ordered], axis=1)
    maxs = np.stack([np.maximum.reduceat(c, at) for c in ordered], axis=1)
    out = {}
    for name, b in boxes.items():
        hit = np.zeros(at.size, bool)
        for i in range(b.lo.shape[0]):
            hit |= np.all((mins <= b.hi[i]) & (maxs >= b.lo[i]), axis=1)
        out[name] = int(hit.sum())
    return out, int(at.size)


def replay(codes: np.ndarray, schema: Any, columns: list[str], files: int, *, sample: int, lookahead: int,
           min_leaf: float, seed: int, boosted: bool, cells: bool = True,
           shape_weight: float | None = None) -> dict[str, Any]:
    from hudi_layout import options as cfg
    from hudi_layout.clustering import qdtree as qd
    from hudi_layout.clustering.workload import Workload

    def boxes_of(queries: list[str]) -> Any:
        return qd.workload_boxes(Workload.of(queries).predicates(schema), columns, schema)

    n = codes.shape[1]
    u = np.random.default_rng(seed).random(n)
    rate = min(1.0, 1.1 * sample / n)
    boxes = boxes_of(list(WORKLOAD.values()))
    started = time.perf_counter()
    weights = None
    picked = np.flatnonzero(u < rate)
    if boosted and rate < 1.0:
        sent = np.union1d(picked, qd.box_candidates(list(codes), u, boxes))
        keep, weights = qd.workload_sample(list(codes[:, sent]), u[sent], boxes, rate)
        picked = sent[keep]
    # the execution's sample: at least EXECUTION_SAMPLE_ROWS uniform rows (a superset of the tree's)
    uniform = list(codes[:, u < min(1.0, 1.1 * max(EXECUTION_SAMPLE_ROWS, sample) / n)])
    tree, stats = qd.build_qdtree_for_files(list(codes[:, picked]), columns, qd.code_spaces_of(schema, columns),
                                            boxes, output_files=files, min_leaf_files=min_leaf, lookahead=lookahead,
                                            row_weights=weights, shapes=qd.query_shapes(boxes, uniform),
                                            shape_weight=(cfg.QDTREE_SHAPE_WEIGHT.default if cells else 0.0)
                                            if shape_weight is None else shape_weight)
    one_file = False
    if cells:
        tree = tree.with_shapes(qd.query_shapes(boxes, uniform))
        one_file = qd.cells_of_one_file(tree, files)
        tree = qd.fill_leaves(tree, uniform, files)
    build = time.perf_counter() - started
    layout = qd.layout_for(tree, uniform, one_file_cells=one_file)
    per_query = {q: boxes_of([w]) for q, w in {**WORKLOAD, **HELD_OUT}.items()}
    got, n_files = files_read(codes, layout, per_query, n / files)
    return {"seed": seed, "leaves": tree.num_leaves, "files": n_files, "estimate": stats.cost_after,
            "build_seconds": build, "workload": sum(v for k, v in got.items() if k in WORKLOAD),
            "held_out": sum(v for k, v in got.items() if k in HELD_OUT), "per_query": got}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work-dir", required=True)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--files", type=int, default=None)
    p.add_argument("--sample", type=int, default=50_000)
    p.add_argument("--lookahead", type=int, default=4)
    p.add_argument("--min-leaf", type=float, default=0.01)
    p.add_argument("--seeds", default="17")
    p.add_argument("--uniform", action="store_true", help="uniform sample only (no workload-box rows)")
    p.add_argument("--no-cells", action="store_true", help="one Hilbert curve per leaf (no one-file cells)")
    p.add_argument("--shape-weight", type=float, default=None,
                   help="weight of the query shapes in the cut search (default: the option "
                        "hudi_layout.layout.qdtree.shape.weight with cells, 0 without)")
    args = p.parse_args(argv)
    files = args.files or max(1, round(args.rows / 8_500))
    cols = list(CURVE_COLUMNS)
    log("reading the sort columns of the as-ingested table")
    codes, schema = load_codes(f"{args.work_dir}/layouts_{args.rows}_f{files}/random", cols)
    for seed in (int(s) for s in args.seeds.split(",")):
        r = replay(codes, schema, cols, files, sample=args.sample, lookahead=args.lookahead, min_leaf=args.min_leaf,
                   seed=seed, boosted=not args.uniform, cells=not args.no_cells,
                   shape_weight=args.shape_weight)
        print(f"seed {seed}: workload {r['workload']} files, held-out {r['held_out']}, {r['files']} files, "
              f"{r['leaves']} leaves, estimate {r['estimate']:.0f}, build {r['build_seconds']:.1f} s  "
              f"{r['per_query']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
