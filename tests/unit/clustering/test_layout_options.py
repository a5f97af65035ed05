"""Options and plan parameters of the layouts beyond curves: strategy names, column weights, the qdtree."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_layout import options as cfg
from hudi_layout.clustering.plan import ClusteringOptions, from_avro_plan, plan_clustering
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.options import LayoutStrategy, parse_column_weights, parse_layout_strategy
from hudi_layout.table.fs_view import FileSlice


def test_strategy_names() -> None:
    assert LayoutStrategy.parse("workload") is LayoutStrategy.QDTREE is LayoutStrategy.parse("QD-TREE")
    assert not LayoutStrategy.QDTREE.is_curve and LayoutStrategy.QDTREE.needs_workload
    assert LayoutStrategy.HILBERT.is_curve and not LayoutStrategy.LINEAR.is_curve
    with pytest.raises(InvalidArgumentError, match="qdtree"):
        parse_layout_strategy("spiral")


def test_column_weights_option() -> None:
    assert parse_column_weights("") == {}
    assert parse_column_weights(" src_port:2, dst_port:1.5 ") == {"src_port": 2.0, "dst_port": 1.5}
    assert parse_column_weights("Workload") == cfg.WEIGHTS_FROM_WORKLOAD
    for bad in ("src_port", "src_port:0", "src_port:-1", ":2", "a:x", "a:inf"):
        with pytest.raises(ValueError):
            parse_column_weights(bad)
    with pytest.raises(InvalidArgumentError, match="hudi_layout.layout.curve.column.weights"):
        cfg.CURVE_COLUMN_WEIGHTS.get({cfg.CURVE_COLUMN_WEIGHTS.key: "a:nope"})


def test_weights_and_tree_travel_in_the_plan(tmp_path: Path) -> None:
    opts = ClusteringOptions.from_options(
        {cfg.CURVE_COLUMN_WEIGHTS.key: "b:2", cfg.QDTREE_CUTS.key: '{"version": 1}'}, columns=["a", "b"],
        strategy="qdtree")
    assert opts.is_qdtree and opts.weights_for(["a", "b"]) == (1.0, 2.0)
    params = opts.strategy_params()
    assert params[cfg.LAYOUT_STRATEGY.key] == "qdtree" and params[cfg.CURVE_COLUMN_WEIGHTS.key] == "b:2"
    assert params[cfg.QDTREE_CUTS.key] == '{"version": 1}'
    (tmp_path / "f.parquet").write_bytes(b"x")
    s = FileSlice(partition_path="", file_id="f", base_file_name="f.parquet",
                  base_file_path=str(tmp_path / "f.parquet"), commit_time="1", size_bytes=1)
    plan = plan_clustering([s], opts)
    assert plan is not None
    back = from_avro_plan(plan.to_avro_plan(), tmp_path)
    assert back.options.is_qdtree and back.options.qdtree_cuts == opts.qdtree_cuts
    assert back.options.column_weights == (("b", 2.0),)


def test_weights_must_name_sort_columns_and_qdtree_needs_columns() -> None:
    with pytest.raises(InvalidArgumentError, match="'c'.*not among the sort columns"):
        ClusteringOptions.from_options({cfg.CURVE_COLUMN_WEIGHTS.key: "c:2"}, columns=["a", "b"], strategy="hilbert")
    with pytest.raises(InvalidArgumentError, match="needs sort columns"):
        ClusteringOptions.from_options({}, strategy="qdtree")
    w = ClusteringOptions.from_options({cfg.CURVE_COLUMN_WEIGHTS.key: "workload"}, columns=["a"], strategy="z-order")
    assert w.weights_from_workload and w.strategy_params()[cfg.CURVE_COLUMN_WEIGHTS.key] == "workload"
