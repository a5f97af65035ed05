"""Cleaning end to end with Spark: the automatic clean after clusterings and writes (hl.write and the data
source), the space bound of issue #13 (10 clusterings, ``hoodie.cleaner.commits.retained=2``: at most 3x the
live data on disk and in the index), the grace period, and readers (ours, hudi-rs) before and after."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import hudi_layout
from hudi_layout import ColumnStatsIndex, HudiTable
from tests.helpers.clustering import digests, grid_table, write_arrow, write_options
from tests.helpers.integration import hudi_rs_slices, our_slices

pytestmark = pytest.mark.integration


def _base_files(path: Path) -> list[Path]:
    return [p for p in path.rglob("*.parquet") if ".hoodie" not in p.relative_to(path).parts]


def _disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in _base_files(path))


def _index_rows(path: Path, column: str, live_only: bool) -> int:
    return ColumnStatsIndex(str(path)).load_column(column, live_only=live_only).num_rows


def test_ten_clusterings_keep_at_most_three_times_the_live_data(spark, tmp_path: Path) -> None:
    path = tmp_path / "grid"
    data = grid_table(side=48)
    base_opts = write_options("grid", **{"hoodie.cleaner.commits.retained": "2"})
    write_arrow(spark, data, path, base_opts, files=20)
    assert len(our_slices(path)) == 20
    want = digests(spark, path)
    # ~20 output files per clustering, like the 20 input files
    target = str(max(1, _disk_bytes(path) // 20))
    cluster_opts = {**base_opts, "hoodie.clustering.plan.strategy.target.file.max.bytes": target}
    # three clusterings right after one another: every replaced file left the snapshot seconds ago, so the
    # default grace period keeps them all; the index still answers with the live files only
    for _ in range(3):
        hudi_layout.cluster(str(path), ["x", "y"], spark=spark, options=cluster_opts)
    live = len(our_slices(path))
    assert len(_base_files(path)) == 20 + 3 * live
    assert _index_rows(path, "x", live_only=True) == live
    assert _index_rows(path, "x", live_only=False) == 20 + 3 * live
    # seven more, cleaning with no grace period (as if every query finished at once)
    no_grace = {**cluster_opts, "hudi_layout.clean.grace.period.seconds": "0"}
    for _ in range(7):
        hudi_layout.cluster(str(path), ["x", "y"], spark=spark, options=no_grace)
    slices = HudiTable(str(path)).file_slices()
    live_bytes = sum(s.size_bytes for s in slices)
    disk = _disk_bytes(path)
    for column in ("x", "y", "_hoodie_record_key"):
        assert _index_rows(path, column, live_only=True) == len(slices)
        assert _index_rows(path, column, live_only=False) <= 3 * len(slices)
    print(f"\nspace after 10 clusterings (retained=2): disk {disk} B = {disk / live_bytes:.3f}x live "
          f"({len(_base_files(path))} files / {len(slices)} live); index rows "
          f"{_index_rows(path, 'x', live_only=False)} = "
          f"{_index_rows(path, 'x', live_only=False) / len(slices):.2f}x live")
    assert disk <= 3 * live_bytes * 1.02  # layouts of the same rows: equal sizes up to file-name bytes
    assert len(_base_files(path)) <= 3 * len(slices)
    assert digests(spark, path) == want
    assert hudi_rs_slices(path) == our_slices(path)
    cleans = [n for n in os.listdir(path / ".hoodie" / "timeline") if n.endswith(".clean")]
    assert len(cleans) == 7


def test_writes_and_the_data_source_clean_automatically(spark, tmp_path: Path) -> None:
    path = tmp_path / "ow"
    opts = write_options("ow", partition="p", **{"hoodie.cleaner.commits.retained": "1",
                                                  "hudi_layout.clean.grace.period.seconds": "0"})
    df = spark.range(0, 300).selectExpr("CAST(id AS STRING) AS id", "id % 3 AS p", "id * 2 AS v")
    hudi_layout.write(df.repartition(3), str(path), opts)
    first = set(map(str, _base_files(path)))
    hudi_layout.write(df.repartition(3), str(path), opts, mode="overwrite")
    # two commits, retain one: the first write's groups were replaced by the overwrite itself (the ECTR)
    assert first <= set(map(str, _base_files(path)))
    hudi_layout.write(df.repartition(3), str(path), opts, mode="overwrite")
    assert not first & set(map(str, _base_files(path)))
    second_layer = set(map(str, _base_files(path))) - {s.base_file_path for s in HudiTable(str(path)).file_slices()}
    (df.repartition(3).write.format("hudi_layout").options(**opts).mode("overwrite").save(str(path)))
    assert not second_layer & set(map(str, _base_files(path)))
    assert hudi_layout.read(str(path), spark=spark).count() == 300
    assert hudi_rs_slices(path) == our_slices(path)


def test_bad_cleaner_options_are_refused_before_anything_is_written(spark, tmp_path: Path) -> None:
    from hudi_layout.errors import InvalidArgumentError

    df = spark.range(0, 10).selectExpr("CAST(id AS STRING) AS id")
    for key, value in (("hoodie.clean.async", "true"), ("hoodie.cleaner.policy", "KEEP_EVERYTHING")):
        opts = write_options("bad", **{key: value})
        with pytest.raises(InvalidArgumentError, match=key.split(".")[-1] if "async" in key else "KEEP_"):
            hudi_layout.write(df, str(tmp_path / "t"), opts)
        assert not (tmp_path / "t").exists()
        with pytest.raises(Exception, match="async|KEEP_"):
            df.write.format("hudi_layout").options(**opts).mode("append").save(str(tmp_path / "t"))
        assert not (tmp_path / "t" / ".hoodie").exists()
