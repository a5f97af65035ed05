"""``index --read-floats``: a rebuilt index describes float / double columns of existing files exactly as the
writers did (NaN-aware), read from their data in a Spark job; without the flag those columns get no records
and the result says so. Skipping on the rebuilt index answers like a full scan."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_layout as hl
from hudi_layout.services.index import build_column_stats_index
from hudi_layout.tools.cli import main

pytestmark = pytest.mark.integration

OPTS = {"hoodie.table.name": "floats", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.operation": "bulk_insert"}

NAN = float("nan")
# one batch per commit, each its own x range: the second holds NaN, the third only nulls and NaN in f
BATCHES = [
    [(1, 0.5, 1.5, "a"), (2, 1.0, 2.5, "a"), (3, 2.0, None, "b")],
    [(4, 10.0, 3.5, "a"), (5, NAN, 4.5, "b"), (6, 12.0, -1.0, "b")],
    [(7, None, NAN, "a"), (8, -3.0, NAN, "b"), (9, None, 0.25, "a")],
]


SCHEMA = "id long, x double, f float, p string"  # rows, not pandas: pandas turns None into NaN


def _stats(path: Path, column: str) -> list[tuple]:
    """(partition, file, min, max, null count, value count) per file, NaN as text so it compares."""
    table = hl.ColumnStatsIndex(path).load_column(column)
    out = []
    for r in table.to_pylist():
        lo, hi = (("nan" if isinstance(v, float) and math.isnan(v) else v) for v in (r["min"], r["max"]))
        out.append((r["partition"], r["file_name"], lo, hi, r["null_count"], r["value_count"]))
    return sorted(out, key=repr)


PREDICATES = ["x > 5", "x < 0", "x >= 1.0 AND x <= 2.0", "isnan(x)", "f > 3", "f IS NULL", "x = 10.0 OR f = 0.25"]


def _answers(spark, path: Path, predicates: list[str] = PREDICATES) -> dict[str, list[int]]:
    out = {}
    for where in predicates:
        skipped = sorted(r["id"] for r in hl.read(str(path), where, spark=spark).collect())
        full = sorted(r["id"] for r in hl.read(str(path), where, spark=spark, skipping=False).collect())
        assert skipped == full, where
        out[where] = skipped
    return out


def test_read_floats_rebuild_gives_the_writers_exact_float_statistics(spark, tmp_path: Path, capsys) -> None:
    path = tmp_path / "t"
    for rows in BATCHES:
        hl.write(spark.createDataFrame(rows, SCHEMA), str(path), OPTS)
    written = {c: _stats(path, c) for c in ("x", "f")}
    assert written["x"] and written["f"]
    assert any(row[3] == "nan" for row in written["x"])  # the NaN file's max is NaN: `x > 5` keeps it
    answers = _answers(spark, path)
    assert answers["x > 5"] == [4, 5, 6] and answers["isnan(x)"] == [5]

    footers_only = build_column_stats_index(str(path), rebuild=True)
    assert set(footers_only["unindexed_columns"]) == {"x", "f"}
    assert _stats(path, "x") == [] and _stats(path, "f") == []
    some = ["x > 5", "isnan(x)", "f IS NULL"]
    assert _answers(spark, path, some) == {w: answers[w] for w in some}  # every file kept on x / f: same rows

    assert main(["index", str(path), "--rebuild", "--read-floats"]) == 0
    assert "note: column" not in capsys.readouterr().out
    assert {c: _stats(path, c) for c in ("x", "f")} == written
    assert _answers(spark, path) == answers
    assert hl.explain(str(path), "x < -5").files_after_column_stats == 0
    assert hl.explain(str(path), "x > 100").files_after_column_stats == 1  # NaN > 100 in Spark: its file stays
    assert hl.explain(str(path), "x > 5").files_after_column_stats == 2  # 10.0 in one file, NaN and 12.0 in one


def test_read_floats_on_a_table_without_float_columns_starts_no_spark(tmp_path: Path, spark) -> None:
    path = tmp_path / "t"
    hl.write(spark.createDataFrame([(1, "a"), (2, "b")], "id long, p string"), str(path), OPTS)

    def no_spark():
        raise AssertionError("Spark was started for a table without float columns")

    done = build_column_stats_index(str(path), rebuild=True, read_floats=True, spark=no_spark)
    assert done["status"] == "built" and done["unindexed_columns"] == {}


def test_a_hudi_table_with_nested_columns_is_indexed_cleaned_and_refused_for_writes(spark, fixture_table) -> None:
    """Hudi's v8 table of every type (array, map and struct columns after the flat ones): `index --read-floats`
    builds exact statistics of the flat columns (checked against the file's own values), reads skip by them
    with the answers of a full scan, a clean and a clustering keep every value (hudi-rs reads), and a write is
    refused in one line naming the nested column (the flat-schema conversion refused the index before,
    without a name)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from hudi_layout.errors import InvalidArgumentError
    from tests.helpers.integration import hudi_rs_read

    path = fixture_table("cow_v8_nonpartitioned.zip")
    done = build_column_stats_index(str(path), read_floats=True, spark=spark)
    assert done["status"] == "built" and done["unindexed_columns"] == {}
    for column in ("intField", "longField", "floatField", "doubleField", "name"):
        records = hl.ColumnStatsIndex(path).load_column(column).to_pylist()
        assert records, column
        for r in records:
            values = pq.read_table(path / r["file_name"], columns=[column]).column(0)
            bounds = pc.min_max(values).as_py()
            assert (r["min"], r["max"], r["null_count"]) == (bounds["min"], bounds["max"], values.null_count)
    for where in ("doubleField > 2.5", "floatField < 2", "intField BETWEEN 20000 AND 30000", "doubleField < 1"):
        skipped = sorted(r["id"] for r in hl.read(str(path), where, spark=spark).collect())
        assert skipped == sorted(r["id"] for r in hl.read(str(path), where, spark=spark, skipping=False).collect())
    # Hudi's commits carry no NaN-exact marker, but the index read the file's data: its bounds are trusted
    assert hl.explain(str(path), "doubleField < 1").files_after_column_stats == 0
    assert hl.explain(str(path), "doubleField > 99").files_after_column_stats == 0
    hl.clean(str(path), options={"hoodie.cleaner.commits.retained": "1"})
    nested = ["id", "arrayField", "mapField", "structField"]
    before = sorted(map(repr, hudi_rs_read(path).select(nested).to_pylist()))
    hl.cluster(str(path), ["intField", "doubleField"], spark=spark)  # nested values go through Arrow as they are
    assert sorted(map(repr, hudi_rs_read(path).select(nested).to_pylist())) == before
    assert sorted(hudi_rs_read(path).column("id").to_pylist()) == sorted(
        r["id"] for r in hl.read(str(path), spark=spark).collect())
    refusal = "column 'arrayField'.*writes and compacts tables of flat columns only"
    with pytest.raises(InvalidArgumentError, match=refusal) as info:
        hl.write(hl.read(str(path), spark=spark).limit(1).select("id"), str(path),
                 {"hoodie.datasource.write.operation": "delete"})
    assert "\n" not in str(info.value)


def test_read_floats_makes_foreign_float_bounds_usable_and_keeps_nan_files(spark, tmp_path: Path) -> None:
    """Files another writer wrote (commits without our NaN-exact marker), one holding a NaN: footers leave the
    NaN out, so before `--read-floats` their float bounds are used only where NaN cannot match; after it the
    index says max NaN for that file and the others' bounds are upper bounds too."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from tests.helpers.tablemaker import add_commit, make_table

    t = make_table(tmp_path / "t", partition_field=None)
    first = add_commit(t, {"": [50, 50, 50]})
    nan_file = t.base / first.paths[0]
    rows = pq.read_table(nan_file)
    y = rows.column("y").to_pylist()
    y[7] = NAN
    pq.write_table(rows.set_column(rows.schema.get_field_index("y"), "y", pa.array(y, pa.float64())), nan_file)
    build_column_stats_index(str(t.base), read_floats=True, spark=spark)

    def answers(where: str) -> None:
        skipped = sorted(r["id"] for r in hl.read(str(t.base), where, spark=spark).collect())
        assert skipped == sorted(r["id"] for r in hl.read(str(t.base), where, spark=spark, skipping=False).collect())

    for where in ("y > 0.5", "y > 2", "y < 0", "y = 0.25", "isnan(y)"):
        answers(where)
    assert hl.explain(str(t.base), "y > 2").files_after_column_stats == 1  # the NaN file only
    assert hl.explain(str(t.base), "y < 0").files_after_column_stats == 0
    records = {r["file_name"]: r for r in hl.ColumnStatsIndex(t.base).load_column("y").to_pylist()}
    assert math.isnan(records[nan_file.name]["max"])
    assert records[nan_file.name]["min"] == pc.min(pa.array([v for v in y if v == v])).as_py()
