"""Pure planning: options, bin packing rules (Hudi's SparkSizeBasedClusteringPlanStrategy), validation."""

from __future__ import annotations

import pyarrow as pa
import pytest

from hudi_layout.clustering.bin_packing import num_output_file_groups, pack_greedy, sort_largest_first
from hudi_layout.clustering.plan import (
    SORT_AND_SIZE_EXECUTION_STRATEGY,
    ClusteringOptions,
    plan_clustering,
    validate_sort_columns,
)
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.table.fs_view import FileSlice

MB = 1024 * 1024


def sl(partition: str, fid: str, size: int) -> FileSlice:
    name = f"{fid}_0-0-0_20240101000000000.parquet"
    return FileSlice(partition, fid, name, f"/t/{partition}/{name}", "20240101000000000", size)


def opts(**kw: object) -> ClusteringOptions:
    base = {"hoodie.clustering.plan.strategy.small.file.limit": 100 * MB,
            "hoodie.clustering.plan.strategy.max.bytes.per.group": 250 * MB,
            "hoodie.clustering.plan.strategy.target.file.max.bytes": 120 * MB}
    extra = {k: v for k, v in kw.items() if k.startswith("hoodie.")}
    args = {k: v for k, v in kw.items() if not k.startswith("hoodie.")}
    return ClusteringOptions.from_options({**base, **extra}, **args)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------- options

def test_defaults_are_hudis() -> None:
    o = ClusteringOptions.from_options({})
    assert (o.small_file_limit, o.max_bytes_per_group, o.max_num_groups, o.target_file_max_bytes) == (
        314572800, 2147483648, 30, 1073741824)
    assert o.sort_columns == () and o.layout_strategy == "linear" and o.curve_build_method == "direct"
    assert o.single_group_clustering is True and o.include_all_files is False
    assert o.strategy_params() == {}


def test_explicit_arguments_win_and_normalise() -> None:
    o = ClusteringOptions.from_options({"hoodie.clustering.plan.strategy.sort.columns": "a",
                                        "hoodie.layout.optimize.strategy": "hilbert"},
                                       columns=["x", " y "], strategy="ZORDER", method="SAMPLE",
                                       include_all_files=True)
    assert o.sort_columns == ("x", "y") and o.layout_strategy == "z-order"
    assert o.curve_build_method == "sample"
    assert o.include_all_files
    assert o.strategy_params() == {
        "hoodie.clustering.plan.strategy.sort.columns": "x,y",
        "hoodie.layout.optimize.strategy": "z-order",
        "hoodie.layout.optimize.curve.build.method": "sample",
        "hoodie.layout.optimize.build.curve.sample.size": "200000",
    }
    o2 = ClusteringOptions.from_options({"hoodie.clustering.plan.strategy.sort.columns": "a, b"})
    assert o2.sort_columns == ("a", "b")


@pytest.mark.parametrize("kw, needle", [
    ({"columns": []}, "columns"),
    ({"columns": "a,a"}, "'a'"),
    ({"columns": "a", "strategy": "spiral"}, "hoodie.layout.optimize.strategy"),
    ({"columns": "a", "method": "guess"}, "hoodie.layout.optimize.curve.build.method"),
    ({"strategy": "z-order"}, "needs sort columns"),
    ({"columns": list("abcdefghi"), "strategy": "hilbert"}, "at most 8"),
    ({"hoodie.clustering.plan.strategy.max.num.groups": "0"}, "max.num.groups"),
    ({"hoodie.clustering.plan.strategy.max.bytes.per.group": "-1"}, "max.bytes.per.group"),
    ({"hoodie.clustering.plan.strategy.target.file.max.bytes": "lots"}, "target.file.max.bytes"),
    ({"hoodie.clustering.plan.strategy.partition.regex.pattern": "("}, "regex.pattern"),
])
def test_option_errors_name_the_culprit(kw: dict[str, object], needle: str) -> None:
    with pytest.raises(InvalidArgumentError, match=None) as ei:
        opts(**kw)
    assert needle in str(ei.value)


def test_linear_allows_many_columns_and_no_columns() -> None:
    assert len(opts(columns=list("abcdefghij")).sort_columns) == 10
    assert opts().sort_columns == ()  # size-only stitching, as Hudi allows


# ------------------------------------------------------------------------------------------ validation

def test_validate_sort_columns() -> None:
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("m", pa.map_(pa.string(), pa.int32())),
                        ("l", pa.list_(pa.int32())), ("s", pa.struct([("z", pa.int8())])),
                        ("region", pa.string())])
    cols = schema.names
    validate_sort_columns(opts(columns="a,b"), cols, partition_columns=["region"], schema=schema)
    for col, needle in [("nope", "not a column"), ("region", "partition column"), ("m", "map"), ("l", "list"),
                        ("s", "struct"), ("_hoodie_record_key", "meta column")]:
        with pytest.raises(InvalidArgumentError) as ei:
            validate_sort_columns(opts(columns=["a", col]), cols, partition_columns=["region"], schema=schema)
        assert repr(col) in str(ei.value) and needle in str(ei.value)
    with pytest.raises(InvalidArgumentError) as ei:
        validate_sort_columns(opts(columns="A"), cols, schema=schema)
    assert ei.value.hint == "did you mean 'a'?"


# ---------------------------------------------------------------------------------------- bin packing

def test_pack_greedy_rules() -> None:
    sizes = [90, 80, 70, 30, 20]
    r = pack_greedy(sizes, lambda x: x, max_bin_bytes=170, max_bins=10, keep_single_item_last_bin=False)
    assert [b.items for b in r.bins] == [(90, 80), (70, 30, 20)] and not r.partial
    r = pack_greedy([100, 100, 100], lambda x: x, max_bin_bytes=150, max_bins=10,
                    keep_single_item_last_bin=False)
    # groups closed for size keep one slice (Hudi does too); only the last open one is dropped
    assert [b.items for b in r.bins] == [(100,), (100,)]
    r = pack_greedy([100, 100, 100], lambda x: x, max_bin_bytes=150, max_bins=10,
                    keep_single_item_last_bin=True)
    assert len(r.bins) == 3
    r = pack_greedy([100, 100, 100], lambda x: x, max_bin_bytes=150, max_bins=2,
                    keep_single_item_last_bin=True)
    assert len(r.bins) == 2 and r.partial
    assert sort_largest_first([("b", 1), ("a", 1), ("c", 5)], lambda x: x[1], tie_key=lambda x: x[0]) == [
        ("c", 5), ("a", 1), ("b", 1)]
    assert [num_output_file_groups(b, 100) for b in (0, 1, 100, 101, 250)] == [1, 1, 1, 2, 3]


def test_plan_small_files_sorted_packed_per_partition() -> None:
    slices = [sl("p=a", "a1", 10 * MB), sl("p=a", "a2", 60 * MB), sl("p=a", "a3", 99 * MB),
              sl("p=a", "big", 100 * MB),  # not < small.file.limit
              sl("p=a", "a4", 90 * MB), sl("p=b", "b1", 5 * MB), sl("p=b", "b2", 6 * MB)]
    plan = plan_clustering(slices, opts(), set())
    assert plan is not None
    # a1 alone in the last group of p=a is kept: single-group clustering is on by default
    assert [(g.partition_path, [s.file_id for s in g.slices]) for g in plan.groups] == [
        ("p=a", ["a3", "a4", "a2"]),  # 99+90+60 = 249 <= 250
        ("p=a", ["a1"]),
        ("p=b", ["b2", "b1"]),
    ]
    plan2 = plan_clustering(slices, opts(**{"hoodie.clustering.plan.strategy.single.group.clustering.enabled":
                                            "false"}), set())
    assert plan2 is not None
    assert [[s.file_id for s in g.slices] for g in plan2.groups] == [["a3", "a4", "a2"], ["b2", "b1"]]
    assert plan.groups[0].total_bytes == 249 * MB
    assert plan.groups[0].num_output_file_groups == 3  # ceil(249 / 120)
    assert plan.strategy_class == SORT_AND_SIZE_EXECUTION_STRATEGY


def test_single_group_rule() -> None:
    slices = [sl("p", "a", 200 * MB // 4), sl("p", "b", 240 * MB), sl("p", "c", 30 * MB)]
    o = {"hoodie.clustering.plan.strategy.small.file.limit": 300 * MB,
         "hoodie.clustering.plan.strategy.single.group.clustering.enabled": "false"}
    plan = plan_clustering(slices, opts(**o), set())
    # b (240) closes alone when a (50) would overflow; then a+c form the last group (2 slices, kept)
    assert plan is not None and [[s.file_id for s in g.slices] for g in plan.groups] == [["b"], ["a", "c"]]
    # one lone small file: dropped when single-group clustering is off ...
    assert plan_clustering([sl("p", "a", MB)], opts(**o), set()) is None
    # ... kept when it is on, or when sort columns are set (Hudi: shouldClusteringSingleGroup)
    assert plan_clustering([sl("p", "a", MB)], opts(), set()) is not None
    assert plan_clustering([sl("p", "a", MB)], opts(**o, columns="x"), set()) is not None


def test_include_all_files_pending_and_max_groups() -> None:
    slices = [sl("p", f"f{i}", (200 + i) * MB) for i in range(5)] + [sl("q", "g", 300 * MB)]
    assert plan_clustering(slices, opts(), set()) is None  # every file >= small.file.limit
    plan = plan_clustering(slices, opts(include_all_files=True), {("p", "f4")})
    assert plan is not None
    # each file exceeds max.bytes.per.group on its own: one group each, f4 excluded as pending
    assert [[s.file_id for s in g.slices] for g in plan.groups] == [["f3"], ["f2"], ["f1"], ["f0"], ["g"]]
    assert [g.num_output_file_groups for g in plan.groups] == [2, 2, 2, 2, 3]  # ceil(size / 120 MB)
    assert plan.file_groups == {("p", "f0"), ("p", "f1"), ("p", "f2"), ("p", "f3"), ("q", "g")}
    limited = plan_clustering(slices, opts(include_all_files=True,
                                           **{"hoodie.clustering.plan.strategy.max.num.groups": "2"}), set())
    assert limited is not None and len(limited.groups) == 2
    assert limited.missing_schedule_partitions == ("p",)


def test_partition_selection() -> None:
    slices = [sl(p, f"{p}-{i}", MB) for p in ("2024/01/01", "2024/01/02", "2024/02/01") for i in range(2)]
    plan = plan_clustering(slices, opts(**{"hoodie.clustering.plan.strategy.partition.regex.pattern":
                                           r"2024/01/.*"}), set())
    assert plan is not None and plan.partitions == ("2024/01/01", "2024/01/02")
    plan = plan_clustering(slices, opts(**{"hoodie.clustering.plan.strategy.partition.selected":
                                           "2024/02/01,2024/01/02"}), set())
    assert plan is not None and plan.partitions == ("2024/01/02", "2024/02/01")
    # the regex must match the whole path
    plan = plan_clustering(slices, opts(**{"hoodie.clustering.plan.strategy.partition.regex.pattern": "2024/0"}),
                           set())
    assert plan is None
    # both filters: Hudi takes the list and ignores the pattern; we intersected them (session 29): refused
    both = {"hoodie.clustering.plan.strategy.partition.selected": "2024/02/01",
            "hoodie.clustering.plan.strategy.partition.regex.pattern": "2024/0"}
    with pytest.raises(InvalidArgumentError, match="both given"):
        opts(**both)
