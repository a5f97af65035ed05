"""The in-process scan cache (hudi_layout.table.cache): hits when nothing changed, never stale after a commit."""

from __future__ import annotations

import datetime as dt
import decimal
import os
from pathlib import Path

import pytest

from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.scan.plan import ScanPlan, plan_scan
from hudi_layout.table import cache
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.mdt_tables import create_table, write_batch

D = dt.date(2024, 1, 1)


def _rows(lo: int, n: int = 5) -> list[tuple]:
    return [(f"k{i}", i, D, decimal.Decimal("1.00"), float(i)) for i in range(lo, lo + n)]


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def count_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = ColumnStatsIndex.load_column

    def spy(self, column, partitions=None, **kw):  # type: ignore[no-untyped-def]
        calls.append(column)
        return real(self, column, partitions, **kw)

    monkeypatch.setattr(ColumnStatsIndex, "load_column", spy)
    return calls


def _summary(plan: ScanPlan) -> tuple:
    return (plan.files_total, plan.files_after_partition_pruning, sorted(plan.candidate_files),
            plan.dropped_by_partition, plan.dropped_by_column_stats, plan.rows_in_candidate_files, plan.rows_total)


def _uncached(path: Path, where: str) -> ScanPlan:
    with cache.disabled():
        return plan_scan(path, where)


def test_warm_plan_reads_no_stats_and_equals_uncached(tmp_path: Path, count_loads: list[str]) -> None:
    base = create_table(tmp_path / "t")
    write_batch(base, {"region=us": _rows(0), "region=eu": _rows(100)})
    write_batch(base, {"region=us": _rows(200)})
    for where in ("v BETWEEN 1 AND 3", "v >= 150 AND region = 'us'", "x > 1000", "id = 'k101'"):
        first = plan_scan(base, where)
        loads = len(count_loads)
        second = plan_scan(base, where)
        assert len(count_loads) == loads, "a warm plan must not read the column_stats index again"
        assert _summary(first) == _summary(second) == _summary(_uncached(base, where))


def test_new_commit_invalidates(tmp_path: Path, count_loads: list[str]) -> None:
    base = create_table(tmp_path / "t", partitioned=False)
    write_batch(base, {"": _rows(0)})
    where = "v BETWEEN 500 AND 600"
    before = plan_scan(base, where)
    assert before.files_total == 1 and before.candidate_files == []
    write_batch(base, {"": _rows(550)})  # a new instant file on the timeline + an MDT deltacommit
    loads = len(count_loads)
    after = plan_scan(base, where)
    assert len(count_loads) > loads, "the column stats must be reloaded after a commit"
    assert after.files_total == 2 and len(after.candidate_files) == 1
    assert _summary(after) == _summary(_uncached(base, where))


def test_replacecommit_invalidates_file_view(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t", partitioned=False)
    write_batch(base, {"": _rows(0)})
    old = HudiTable(base).latest_file_slices()
    assert len(old) == 1
    write_batch(base, {"": _rows(0)}, replace={"": [old[0].base_file_name]})
    new = HudiTable(base).latest_file_slices()
    with cache.disabled():
        assert new == HudiTable(base).file_slices()
    assert [s.file_id for s in new] != [s.file_id for s in old]


def test_pending_instant_changes_key_but_not_view(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t", partitioned=False)
    write_batch(base, {"": _rows(0)})
    write_batch(base, {"": _rows(10)}, fail_before_complete=True)  # files + MDT deltacommit, data pending
    plan = plan_scan(base, "v >= 10")
    assert plan.files_total == 1 and plan.candidate_files == []
    assert _summary(plan) == _summary(_uncached(base, "v >= 10"))


def test_new_mdt_deltacommit_invalidates_column_stats(tmp_path: Path, count_loads: list[str]) -> None:
    """The MDT key moves with the MDT timeline and the column_stats files, even if the data timeline does not."""
    base = create_table(tmp_path / "t", partitioned=False)
    write_batch(base, {"": _rows(0)})
    key = cache.mdt_key(base)
    assert cache.mdt_key(base) == key
    mdt_timeline = base / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    (mdt_timeline / "20990101000000000.deltacommit.requested").touch()
    assert cache.mdt_key(base) != key
    key = cache.mdt_key(base)
    colstats = base / ".hoodie" / "metadata" / "column_stats"
    log = sorted(p for p in colstats.iterdir() if ".log." in p.name)[-1]
    with log.open("ab") as f:  # a log block appended to an existing log file
        f.write(b"\0")
    assert cache.mdt_key(base) != key

    table = HudiTable(base)
    plan_scan(base, "v > 1", table=table)
    loads = len(count_loads)
    plan_scan(base, "v > 1", table=table)
    assert len(count_loads) == loads
    os.utime(log, ns=(1, 1))  # any change of a column_stats file reloads
    plan_scan(base, "v > 1", table=table)
    assert len(count_loads) == loads + 1


def test_commit_metadata_cache_keyed_by_file_stat(tmp_path: Path) -> None:
    f = tmp_path / "x.commit"
    f.write_text("a")
    decodes: list[int] = []

    def decode() -> dict:
        decodes.append(1)
        return {"n": f.read_text()}

    assert cache.commit_metadata(f, decode) == {"n": "a"}
    assert cache.commit_metadata(f, decode) == {"n": "a"} and len(decodes) == 1
    f.write_text("bb")  # a rewritten file (different size / mtime) is decoded again
    assert cache.commit_metadata(f, decode) == {"n": "bb"} and len(decodes) == 2


def test_row_counts_only_when_asked(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t", partitioned=False)
    write_batch(base, {"": _rows(0, 7)})
    assert plan_scan(base, "v > 2").rows_total == 7
    lean = plan_scan(base, "v > 2", with_row_counts=False)
    assert lean.rows_total is None and lean.rows_in_candidate_files is None
    assert lean.schema is not None and "v" in lean.schema.names


def test_returned_slices_are_copies_and_tables_bounded(tmp_path: Path) -> None:
    base = create_table(tmp_path / "t", partitioned=False)
    write_batch(base, {"": _rows(0)})
    got = HudiTable(base).latest_file_slices()
    got.clear()
    assert len(HudiTable(base).latest_file_slices()) == 1
    for i in range(cache.MAX_TABLES + 3):
        cache.table_value(tmp_path / f"other{i}", "x", 1, lambda: 1)
    assert len(cache._tables) == cache.MAX_TABLES
