"""Snapshot reads of Merge-on-Read tables through every entry point: ``hudi_layout.read``, the data source,
SQL over it, and the ``hudi-layout query`` command; ``read_optimized`` only when asked.

Expected rows: EXPECTED.json (what hudi-rs reads) for Hudi's MOR fixtures; hudi-rs for hand-made tables with
updates and deletes in Avro and parquet blocks, a rollback command block, a corrupt block and a log-only file
group. Filters apply after the merge: an update that moves a row out of (or into) the filter's range must
not bring back (or lose) it, with data skipping on and off.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_layout
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.tools import cli
from tests.helpers.integration import hudi_rs_read, rows_digest
from tests.helpers.mor_builder import Deletes, Upserts, make_mor_table, row
from tests.helpers.mor_samples import FIELDS, hudi_rs_listing_storage, sample_mor_table

pytestmark = pytest.mark.integration

MOR_FIXTURES = ["mor_parquet_v6_nonpartitioned.zip", "mor_avro_v9_txns_simple_meta.zip"]


def _entry_points(spark: Any, path: Path, where: str | None = None,
                  options: dict[str, str] | None = None) -> dict[str, pa.Table]:
    """The same question asked through each entry point (data columns, Arrow as Spark returns them)."""
    opts = options or {}
    out = {"read": hudi_layout.read(str(path), where, spark=spark, options=opts).toArrow()}
    df = spark.read.format("hudi_layout").options(**opts).load(str(path))
    out["datasource"] = (df.where(where) if where else df).toArrow()
    df.createOrReplaceTempView("mor_t")
    out["sql"] = spark.sql("SELECT * FROM mor_t" + (f" WHERE {where}" if where else "")).toArrow()
    return out


def _cli_count(path: Path, where: str | None = None, query_type: str = "snapshot") -> int:
    sql = "SELECT count(*) AS n FROM t" + (f" WHERE {where}" if where else "")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["query", str(path), sql, "--query-type", query_type]) == 0
    return int(next(line for line in buf.getvalue().splitlines() if line.strip("| ").isdigit()).strip("| "))


@pytest.mark.parametrize("zip_name", MOR_FIXTURES)
def test_mor_fixtures_read_what_hudi_rs_reads_through_every_entry_point(spark, fixture_table, expected_tables,
                                                                        shared_rows_digest, zip_name: str) -> None:
    path = fixture_table(zip_name)
    expected = expected_tables[zip_name]
    theirs = hudi_rs_read(path)
    assert shared_rows_digest(theirs) == expected["rows_digest_sha256_16"]
    for entry, ours in _entry_points(spark, path).items():
        assert (entry, ours.num_rows, shared_rows_digest(ours)) == (
            entry, expected["snapshot_rows"], expected["rows_digest_sha256_16"])
    assert _cli_count(path) == expected["snapshot_rows"]


def test_v6_fixture_read_optimized_reads_base_files_only(spark, fixture_table, expected_tables) -> None:
    """The v6 fixture's second deltacommit updated rows in a log file: read_optimized leaves them out."""
    import hudi

    path = fixture_table("mor_parquet_v6_nonpartitioned.zip")
    rs = hudi.HudiTableBuilder.from_base_uri(str(path)).with_hudi_option(
        "hoodie.read.use.read_optimized.mode", "true").build()
    theirs = pa.Table.from_batches(rs.read())
    opts = {"hoodie.datasource.query.type": "read_optimized"}
    snapshot = rows_digest(hudi_layout.read(str(path), spark=spark).toArrow())
    for entry, ours in _entry_points(spark, path, options=opts).items():
        assert (entry, ours.num_rows, rows_digest(ours)) == (entry, theirs.num_rows, rows_digest(theirs))
        assert rows_digest(ours) != snapshot
    assert _cli_count(path, query_type="read_optimized") == theirs.num_rows


@pytest.mark.parametrize("column_stats", [True, False])
def test_hand_made_table_through_every_entry_point(spark, tmp_path: Path, column_stats: bool) -> None:
    t = sample_mor_table(tmp_path / "t", groups=3, rows_per_group=120, column_stats=column_stats)
    theirs = hudi_rs_listing_storage(t.base, tmp_path) if column_stats else hudi_rs_read(t.base)
    names = [c for c, _ in FIELDS]
    assert theirs.num_rows == 3 * 120 - 6 + 50
    for where in (None, "x < 8", "name LIKE 'upd%' OR y >= 30"):
        want = theirs if where is None else _filter(theirs, where)
        for entry, ours in _entry_points(spark, t.base, where).items():
            assert (entry, where, rows_digest(ours.select(names))) == (entry, where, rows_digest(want.select(names)))
        assert _cli_count(t.base, where) == want.num_rows


def _filter(table: pa.Table, where: str) -> pa.Table:
    if where == "x < 8":
        return table.filter(pc.less(table.column("x"), 8))
    mask = pc.or_(pc.starts_with(table.column("name"), "upd"), pc.greater_equal(table.column("y"), 30))
    return table.filter(mask)


@pytest.mark.parametrize("skipping", [True, False])
def test_filter_applies_after_the_merge(spark, tmp_path: Path, skipping: bool) -> None:
    """An update moving a row out of the filter's range must not let the old version through; one moving a
    row into it must be found (its log file's statistics cover the new value)."""
    t = make_mor_table(tmp_path / "t", fields=FIELDS, column_stats=True)
    fid = t.deltacommit(inserts={"": [row("a", 1, x=5, y=0), row("b", 1, x=50, y=0)]}).file_ids[0]
    other = t.deltacommit(inserts={"": [row("c", 1, x=60, y=0)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 2, x=55, y=0), row("b", 2, x=6, y=0)])]})
    t.deltacommit(logs={other: [Upserts([row("c", 2, x=7, y=0)])]})
    opts = {"hoodie.enable.data.skipping": str(skipping).lower()}
    for entry, ours in _entry_points(spark, t.base, "x < 10", options=opts).items():
        assert (entry, sorted(ours.column("id").to_pylist())) == (entry, ["b", "c"])
    for entry, ours in _entry_points(spark, t.base, "x > 52", options=opts).items():
        assert (entry, sorted(ours.column("id").to_pylist())) == (entry, ["a"])


def test_projection_meta_columns_and_bad_options(spark, tmp_path: Path) -> None:
    t = make_mor_table(tmp_path / "t", fields=FIELDS)
    fid = t.deltacommit(inserts={"": [row("a", 1, x=5, y=0)]}).file_ids[0]
    c2 = t.deltacommit(logs={fid: [Upserts([row("a", 2, name="new", x=6, y=1)])]})
    got = hudi_layout.read(str(t.base), spark=spark, columns=["name", "x"]).toArrow()
    assert got.column_names == ["name", "x"] and got.to_pylist() == [{"name": "new", "x": 6}]
    meta = hudi_layout.read(str(t.base), spark=spark, include_meta=True).toArrow()
    assert meta.column("_hoodie_commit_time").to_pylist() == [c2.instant]
    assert meta.column_names[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                     "_hoodie_partition_path", "_hoodie_file_name"]
    with pytest.raises(InvalidArgumentError, match="query.type"):
        hudi_layout.read(str(t.base), spark=spark, options={"hoodie.datasource.query.type": "nope"})
    with pytest.raises(InvalidArgumentError, match="hoodie.read.whatever"):
        hudi_layout.read(str(t.base), spark=spark, options={"hoodie.read.whatever": "1"})


def _rs_incremental(path: Path, begin: str, end: str) -> pa.Table:
    import hudi

    opts = (hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental).with_start_timestamp(begin)
            .with_end_timestamp(end))
    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read(opts)
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _incremental_sample(path: Path, version: int) -> Any:
    """A Merge-on-Read table with updates in Avro and parquet blocks and deletes in three file groups, a failed
    deltacommit rolled back as Hudi does, a compaction between deltacommits (the compacted rows keep their
    commit times) with updates after it, and a log-only file group."""
    import numpy as np

    from tests.helpers.mor_builder import Deletes
    from tests.helpers.mor_samples import grid_rows

    rng = np.random.default_rng(version)
    t = make_mor_table(path, fields=FIELDS, version=version)
    fids = [t.deltacommit(inserts={"": grid_rows(rng, range(g * 40, (g + 1) * 40))}).file_ids[0] for g in range(3)]
    for g, fid in enumerate(fids):
        ups = [row(f"k{g * 40 + i:05d}", 2, name=f"upd{g}", x=int(rng.integers(0, 32)), y=0) for i in range(3, 9)]
        t.deltacommit(logs={fid: [Upserts(ups[:3]), Upserts(ups[3:], fmt="parquet"), Deletes([f"k{g * 40 + 1:05d}"])]})
    failed = t.deltacommit(logs={fids[1]: [Upserts([row("k00045", 9, name="failed", x=1, y=1)])]}, complete=False)
    t.rollback(failed.instant)
    merged = t.read_ours()  # the compaction writes the merged rows of file group 0 with their commit times
    group0 = [r for r in merged.to_pylist() if r["_hoodie_file_name"].startswith(fids[0])]
    t.compact(fids[0], group0)
    t.deltacommit(logs={fids[0]: [Upserts([row("k00010", 5, name="after-compaction", x=2, y=2)])]})
    t.deltacommit(log_inserts={"": grid_rows(rng, range(200, 220))})
    return t


@pytest.mark.parametrize("version", [9, 6])
def test_incremental_reads_match_hudi_rs(spark, tmp_path: Path, version: int) -> None:
    """Incremental reads of a Merge-on-Read table (refused until session 16) merge only the blocks of the
    commits in range and return their rows, as hudi-rs does: every range from the start, between neighbours
    and up to the last instant (:func:`_incremental_sample`), through ``hudi_layout.read`` (with a filter
    too), the data source and the CLI. v8 / v9 ranges are on completion times, v6 on requested times."""
    from hudi_layout.table.timeline import completed_at

    t = _incremental_sample(tmp_path / "t", version)
    table = hudi_layout.HudiTable(str(t.base))
    ends = sorted(completed_at(i) for i in table.timeline.completed().commits_and_replaces())
    ranges = {("0", e) for e in ends} | set(zip(ends, ends[1:])) | {(b, ends[-1]) for b in ends[:-1]}
    names = [c for c, _ in FIELDS]
    checked = 0
    for begin, end in sorted(ranges):
        theirs = _rs_incremental(t.base, begin, end)
        opts = {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": begin,
                "hoodie.datasource.read.end.instanttime": end}
        want = sorted(theirs.column("id").to_pylist()) if theirs.num_rows else []
        ours = hudi_layout.read(str(t.base), spark=spark, options=opts).toArrow()
        ds = spark.read.format("hudi_layout").options(**opts).load(str(t.base)).toArrow()
        for entry, got in (("read", ours), ("datasource", ds)):
            assert (entry, begin, end, sorted(got.column("id").to_pylist())) == (entry, begin, end, want)
            if theirs.num_rows:
                assert rows_digest(got.select(names)) == rows_digest(theirs.select(names)), (entry, begin, end)
        if theirs.num_rows:
            filtered = hudi_layout.read(str(t.base), "x < 8", spark=spark, options=opts).toArrow()
            assert filtered.num_rows == _filter(theirs, "x < 8").num_rows, (begin, end)
            checked += 1
    assert checked >= len(ends) // 2  # most ranges hold rows
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["query", str(t.base), "SELECT count(*) AS n FROM t", "--query-type", "incremental",
                         "--begin", ends[0], "--end", ends[-1]]) == 0
    assert f"|{_rs_incremental(t.base, ends[0], ends[-1]).num_rows}" in buf.getvalue().replace(" ", "")


@pytest.fixture
def session_conf(spark):
    """Set Spark session settings for one test; every key set is unset (or restored) afterwards."""
    before: dict[str, str | None] = {}

    def set_conf(key: str, value: str | None) -> None:
        before.setdefault(key, spark.conf.get(key, None))
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)

    yield set_conf
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def test_hudi_read_settings_of_the_session_apply_beneath_the_reads_options(spark, tmp_path: Path,
                                                                            session_conf) -> None:
    """Hudi's Spark reads take every ``hoodie.*`` setting of the session beneath the read's options
    (``DefaultSource``): ``SET hoodie.datasource.query.type=read_optimized`` reads base files only. Until
    session 17 only the two skipping settings were taken, and a read in such a session merged the logs (not
    what Hudi answers); a setting that changes Hudi's answer and that we do not implement is refused."""
    t = make_mor_table(tmp_path / "t", fields=FIELDS)
    fid = t.deltacommit(inserts={"": [row("a", 1, x=5, y=0), row("b", 1, x=50, y=0)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 2, name="new", x=6, y=1)])]})
    path = str(t.base)

    def names(**kw) -> list[str]:
        return sorted(r["name"] for r in hudi_layout.read(path, spark=spark, **kw).toArrow().to_pylist())

    snapshot = names()
    read_optimized = names(options={"hoodie.datasource.query.type": "read_optimized"})
    assert snapshot != read_optimized
    session_conf("hoodie.datasource.query.type", "read_optimized")
    assert names() == read_optimized
    assert "read_optimized" in hudi_layout.explain(path, spark=spark).render()
    assert names(options={"hoodie.datasource.query.type": "snapshot"}) == snapshot  # the read's own wins
    session_conf("hoodie.datasource.query.type", None)
    session_conf("hoodie.read.query.type", "read_optimized")  # hudi-rs's name: Hudi's reads ignore it, so do we
    assert names() == snapshot
    session_conf("hoodie.read.query.type", None)
    # begin / end instants count only for incremental reads, as in Hudi; write settings are not for reads
    session_conf("hoodie.datasource.read.begin.instanttime", "20000101000000000")
    session_conf("hoodie.cleaner.commits.retained", "3")
    assert names() == snapshot
    session_conf("hoodie.datasource.query.type", "incremental")
    assert names() == snapshot  # every commit is after the year 2000
    session_conf("hoodie.datasource.query.type", None)
    for key, value in (("hoodie.datasource.merge.type", "skip_merge"),
                       ("hoodie.datasource.query.incremental.format", "cdc")):
        session_conf(key, value)
        with pytest.raises(InvalidArgumentError, match=f"session sets {key}={value}"):
            hudi_layout.read(path, spark=spark)
        session_conf(key, None)
    session_conf("hoodie.datasource.merge.type", "payload_combine")  # Hudi's default: what we do
    assert names() == snapshot


def _ids_names(table: pa.Table) -> list[tuple[str, str]]:
    return sorted(zip(table.column("id").to_pylist(), table.column("name").to_pylist())) if table.num_rows else []


def _cli_rows(path: Path, as_of: str) -> list[tuple[str, str]]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["query", str(path), "SELECT id, name FROM t ORDER BY id", "--as-of", as_of]) == 0
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in buf.getvalue().splitlines()
             if line.startswith("|")]
    return sorted((a, b) for a, b in cells[1:])


@pytest.mark.parametrize("version", [6, 9])
def test_past_views_ignore_blocks_appended_to_a_log_file_later(spark, tmp_path: Path, version: int) -> None:
    """A version-6 writer appends each deltacommit's blocks to the slice's existing log file: the file list
    of an old view then names the file holding later blocks too. Time travel (``hl.read``, the data source,
    the command) and a data-source DataFrame loaded before the append but first run after it applied the
    later update and delete (session 19: ``[a3, c]`` where hudi-rs reads ``[a2, b, c]``); the merge now takes
    only the blocks of the view's instants."""
    t = make_mor_table(tmp_path / "t", version=version)
    c1 = t.deltacommit(inserts={"": [row("a", 1), row("b", 1), row("c", 1)]})
    fid = c1.file_ids[0]
    c2 = t.deltacommit(logs={fid: [Upserts([row("a", 2, name="a2")])]})
    path = str(t.base)
    pinned = spark.read.format("hudi_layout").load(path)  # loaded at c2, first run after c3
    pinned.createOrReplaceTempView("mor_pinned")
    c3 = t.deltacommit(logs={fid: [Upserts([row("a", 3, name="a3")]), Deletes(["b"])]},
                       inserts={"": [row("z", 3)]})
    if version == 6:  # the case: c3's blocks went into c2's log file
        assert len({p.name for p in Path(path).glob(f".{fid}_*.log.*")}) == 1
    as_c2 = _ids_names(t.read_hudi_rs(as_of=c2.instant))
    assert [i for i, _n in as_c2] == ["a", "b", "c"] and ("a", "a2") in as_c2
    assert _ids_names(pinned.toArrow()) == as_c2
    assert _ids_names(spark.sql("SELECT id, name FROM mor_pinned").toArrow()) == as_c2
    assert pinned.count() == 3
    for commit in (c1, c2, c3):
        want = _ids_names(t.read_hudi_rs(as_of=commit.instant))
        opts = {"as.of.instant": commit.instant}
        assert _ids_names(hudi_layout.read(path, spark=spark, options=opts).toArrow()) == want, commit.instant
        assert _ids_names(hudi_layout.read(path, "name <> 'q'", spark=spark, options=opts).toArrow()) == want
        ds = spark.read.format("hudi_layout").options(**opts).load(path)
        assert _ids_names(ds.toArrow()) == want, commit.instant
        assert _cli_rows(t.base, commit.instant) == want, commit.instant
    assert _ids_names(hudi_layout.read(path, spark=spark).toArrow()) == _ids_names(t.read_hudi_rs())
