"""Layouts beyond curves, end to end: curve-region pruning on clustered tables (never wrong: every candidate
set holds every matching row), the qdtree strategy (plan records the tree, files never span leaves, rows
unchanged for three readers), weighted curves, the opt-in query log, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_layout
from hudi_layout import HudiTable
from hudi_layout.clustering.qdtree import QdTree
from hudi_layout.clustering.schedule import load_plan
from hudi_layout.curves import encode_column
from hudi_layout.curves.region import CURVE_REGIONS_KEY, decode_regions
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.scan.plan import plan_scan
from hudi_layout.skipping.oracle import evaluate_rows
from hudi_layout.skipping.sql import from_sql
from hudi_layout.table import workload_log
from hudi_layout.tools import cli
from tests.helpers.clustering import (
    completed_replacecommits,
    digests,
    table_bytes,
    timeline_files,
    typed_table,
    write_arrow,
    write_options,
)

pytestmark = pytest.mark.integration


def _conn(n: int, seed: int = 5) -> pa.Table:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (n, 4))
    b = rng.integers(0, 256, (n, 4))
    ip = lambda m: [f"{w}.{x}.{y}.{z}" for w, x, y, z in m]  # noqa: E731
    return pa.table({"id": pa.array([f"c{i:06d}" for i in range(n)]), "src_ip": ip(a), "dst_ip": ip(b),
                     "src_port": pa.array(rng.integers(0, 65536, n), pa.int32()),
                     "dst_port": pa.array(rng.integers(0, 65536, n), pa.int32())})


def _cluster_opts(path: Path, files: int) -> dict[str, str]:
    target = max(1, table_bytes(path) // files)
    return {"hoodie.clustering.plan.strategy.target.file.max.bytes": str(target),
            "hoodie.parquet.max.file.size": str(4 * target),
            "hoodie.layout.optimize.build.curve.sample.size": "2000"}


def _rows_by_file(path: Path) -> dict[str, list[dict[str, Any]]]:
    return {s.base_file_path: pq.read_table(s.base_file_path).to_pylist() for s in HudiTable(str(path)).file_slices()}


def _never_wrong(path: Path, predicates: list[str]) -> tuple[int, int]:
    """Every matching row lies in a candidate file, curve region on and off; returns (files read with the
    curve-region step, without it) summed over ``predicates``."""
    rows = _rows_by_file(path)
    on_total = off_total = 0
    for where in predicates:
        pred = from_sql(where)
        matching = {f for f, rs in rows.items() if any(evaluate_rows(pred, rs))}
        on = plan_scan(path, where, with_row_counts=False)
        off = plan_scan(path, where, with_row_counts=False, use_curve_region=False)
        assert matching <= set(on.candidate_files), (where, on.render())
        assert set(on.candidate_files) <= set(off.candidate_files)
        on_total += on.files_read
        off_total += off.files_read
    return on_total, off_total


def _random_predicates(table: pa.Table, columns: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        parts = []
        for c in rng.choice(columns, size=int(rng.integers(1, 3)), replace=False):
            vals = sorted(v for v in table.column(c).to_pylist() if v is not None and v == v)
            lo, hi = sorted(rng.choice(len(vals), 2))
            a, b = vals[lo], vals[min(hi, lo + len(vals) // 20)]
            lit = (lambda v: f"'{v}'" if isinstance(v, str) else repr(v))  # noqa: E731
            parts.append(rng.choice([f"{c} BETWEEN {lit(a)} AND {lit(b)}", f"{c} = {lit(a)}", f"{c} >= {lit(b)}",
                                     f"{c} < {lit(a)}", f"({c} = {lit(a)} OR {c} = {lit(b)})"]))
        out.append(" AND ".join(parts))
    return out


@pytest.mark.parametrize("strategy,method,weights", [("hilbert", "sample", None), ("z-order", "direct", {"i32": 4})])
def test_curve_regions_recorded_and_never_wrong(spark, tmp_path: Path, strategy: str, method: str,
                                                weights: dict[str, float] | None) -> None:
    path = tmp_path / "t"
    data = typed_table(3000, seed=9, n_parts=2)
    write_arrow(spark, data, path, write_options("typed", partition="part"), files=6)
    cols = ["i32", "dbl", "name"]
    m = hudi_layout.cluster(str(path), cols, spark=spark, strategy=strategy, method=method,
                            options=_cluster_opts(path, 16), column_weights=weights)
    assert m is not None and m.records == 3000
    (instant,) = completed_replacecommits(path)
    meta = HudiTable(str(path)).timeline.read_commit_metadata_shared(HudiTable(str(path)).timeline.get(instant))
    groups = decode_regions(meta["extraMetadata"][CURVE_REGIONS_KEY])
    assert len(groups) == 2  # one per partition
    recorded = {name for g in groups for name in g.files}
    assert recorded == {s.base_file_name for s in HudiTable(str(path)).file_slices()}
    if weights:
        assert groups[0].shape.bits[0] == groups[0].shape.bits[1] + 2  # log2(4): two more top bits
    preds = _random_predicates(data, cols, 40, seed=3) + [
        "i32 BETWEEN -100 AND 100 AND dbl < 0", "name LIKE 'customer/region=europe-west/segment=enterprise/account-0%'",
        "dbl > 1e6 OR i32 IS NULL", "NOT (i32 >= -40000) AND name >= 'c'", "i32 IN (1, 2, 3) AND dbl <= 0.0"]
    on, off = _never_wrong(path, preds)
    assert on < off, "the curve-region step dropped nothing on a clustered table"
    where = preds[0]
    # the read option turns the step off as the defaults file does (a read setting, never accepted and ignored)
    assert plan_scan(path, where, with_row_counts=False,
                     options={"hudi_layout.skipping.curve.region.enable": "false"}).files_after_curve_region is None
    expected = spark.read.parquet(*[s.base_file_path for s in HudiTable(str(path)).file_slices()]).where(where).count()
    assert hudi_layout.read(str(path), where, spark=spark).count() == expected
    assert digests(spark, path)["hudi-rs"][0] == 3000


WORKLOAD = ["src_ip LIKE '15%'", "dst_port < 4000", "src_port BETWEEN 20000 AND 29999 AND dst_port >= 60000",
            "dst_ip >= '200' AND src_ip < '15'"]


@pytest.mark.parametrize(("sample_size", "cells"), [(None, True), (500, True), (None, False)],
                         ids=["whole table", "uniform 500 + box rows", "one curve per leaf"])
def test_qdtree_plan_records_the_tree_and_files_stay_in_leaves(spark, tmp_path: Path, sample_size: int | None,
                                                               cells: bool) -> None:
    """With a sample smaller than the table, the sketch job also keeps rows of every workload box and the
    tree is built on weighted rows (the path of large tables). The plan's tree records the workload's query
    shapes when ``hudi_layout.layout.qdtree.leaf.cells`` is true; the execution then cuts leaves into
    one-file cells, which never cross a leaf and leave the file count as the target size sets it."""
    from hudi_layout.clustering.schedule import schedule_clustering
    from hudi_layout.services.clustering import prepare_layout_options

    path = tmp_path / "conn"
    data = _conn(6000)
    write_arrow(spark, data, path, write_options("conn"), files=6)
    before = digests(spark, path)
    cols = ["src_ip", "dst_ip", "src_port", "dst_port"]
    files_before = sum(plan_scan(path, w, with_row_counts=False).files_read for w in WORKLOAD)
    # schedule (the tree goes into the plan), then execute it as a pending plan: a resume uses the same tree
    extra = {} if sample_size is None else {"hudi_layout.layout.qdtree.sample.size": str(sample_size)}
    extra["hudi_layout.layout.qdtree.leaf.cells"] = "true" if cells else "false"
    opts = prepare_layout_options(spark, str(path), {**_cluster_opts(path, 20), **extra}, columns=cols,
                                  strategy="qdtree", method="sample", workload=WORKLOAD, include_all_files=True)
    instant, _plan = schedule_clustering(str(path), opts, columns=cols, strategy="qdtree", include_all_files=True,
                                         resolve=False)
    stored = load_plan(str(path), instant)
    tree = QdTree.from_json(stored.options.qdtree_cuts)
    assert stored.options.is_qdtree and tree.num_leaves > 1 and tree.columns == tuple(cols)
    assert len(tree.shapes) == (len(WORKLOAD) if cells else 0)  # one per box (each query is one box here)
    assert stored.options.column_weights  # derived from the workload, recorded for the resume
    (m,) = hudi_layout.execute_pending(str(path), spark=spark)
    assert m.records == 6000 and m.strategy == "qdtree"
    assert digests(spark, path) == before
    for f in HudiTable(str(path)).file_slices():
        t = pq.read_table(f.base_file_path, columns=cols)
        leaves = tree.route([encode_column(t.column(c)) for c in cols])
        assert np.unique(leaves).size == 1, f"{f.base_file_name} spans leaves {np.unique(leaves)}"
    assert len(HudiTable(str(path)).file_slices()) <= 20 + tree.num_leaves
    on, _off = _never_wrong(path, WORKLOAD + _random_predicates(data, cols, 20, seed=8))
    plans = [plan_scan(path, w, with_row_counts=False) for w in WORKLOAD]
    share_after = sum(p.files_read for p in plans) / sum(p.files_total for p in plans)
    assert files_before == 4 * 6 and share_after < 0.5, [p.files_read for p in plans]


def test_query_log_feeds_a_qdtree_and_the_report(spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "defaults.conf"
    conf.write_text("hudi_layout.workload.log.enable true\n")
    monkeypatch.setenv("HUDI_LAYOUT_CONF", str(conf))
    path = tmp_path / "conn"
    write_arrow(spark, _conn(3000, seed=2), path, write_options("conn"), files=4)
    hudi_layout.explain(str(path), "dst_port < 4000")
    assert hudi_layout.read(str(path), "src_ip LIKE '15%'", spark=spark).count() > 0
    hudi_layout.explain(str(path), "dst_port < 4000")
    hudi_layout.explain(str(path))  # no predicate: nothing recorded
    entries = list(workload_log.read_entries(path))
    assert [e.source for e in entries] == ["explain", "read", "explain"]
    snapshot = tmp_path / "before"
    import shutil

    shutil.copytree(path, snapshot)
    code = cli.main(["cluster", str(path), "--columns", "src_ip,dst_port", "--strategy", "qdtree", "--workload", "log",
                     *sum((["-o", f"{k}={v}"] for k, v in _cluster_opts(path, 8).items()), [])])
    assert code == 0
    plan = load_plan(str(path), completed_replacecommits(path)[-1])
    assert plan.options.is_qdtree
    wl = tmp_path / "w.sql"
    wl.write_text("2\tdst_port < 4000\nsrc_ip LIKE '15%'\n")
    out = tmp_path / "report"
    assert cli.main(["report", str(path), "--columns", "src_ip,dst_port", "--out", str(out), "--compare",
                     str(snapshot), "--label", "after", "--compare-label", "before", "--workload", str(wl)]) == 0
    data = json.loads((out / "layout_report.json").read_text())
    rows = data["workload"]["queries"]
    assert [r["where"] for r in rows] == ["dst_port < 4000", "src_ip LIKE '15%'"]
    assert all(r["files_read"]["after"] <= r["files_total"]["after"] for r in rows)
    assert "Workload: files read per query" in (out / "layout_report.md").read_text()


def test_qdtree_refusals_change_nothing(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "conn"
    write_arrow(spark, _conn(500), path, write_options("conn"), files=2)
    before = timeline_files(path)
    with pytest.raises(InvalidArgumentError, match="none was given"):
        hudi_layout.cluster(str(path), ["src_ip"], spark=spark, strategy="qdtree")
    with pytest.raises(InvalidArgumentError, match="query log .* is empty"):
        hudi_layout.cluster(str(path), ["src_ip"], spark=spark, strategy="qdtree", workload="log")
    with pytest.raises(InvalidArgumentError, match="#1"):
        hudi_layout.cluster(str(path), ["src_ip"], spark=spark, strategy="qdtree", workload=["nope = 1"])
    with pytest.raises(InvalidArgumentError, match="not among the sort columns"):
        hudi_layout.cluster(str(path), ["src_ip"], spark=spark, strategy="hilbert", column_weights={"dst_ip": 2})
    assert cli.main(["cluster", str(path), "--columns", "src_ip", "--strategy", "qdtree",
                     "--workload", str(tmp_path / "missing.sql")]) == 2
    assert "cannot read workload file" in capsys.readouterr().err
    assert timeline_files(path) == before
