"""Data skipping on Merge-on-Read tables: a slice is dropped only when its base file and every log file are
proven not to match (Hudi indexes log files in ``column_stats``); never a wrong answer, checked against the
merged rows of hand-made tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.scan.merge import merge_file_slice, merge_spec_for_table
from hudi_layout.scan.plan import plan_scan
from hudi_layout.skipping.oracle import evaluate_rows
from hudi_layout.skipping.sql import from_sql
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.mor_builder import Deletes, MorTable, Upserts, make_mor_table, row


def _indexed(tmp_path: Path, **kw: Any) -> MorTable:
    return make_mor_table(tmp_path / "t", column_stats=True, **kw)


def _kept(t: MorTable, where: str) -> set[str]:
    return {s.file_id for s in plan_scan(t.base, where, with_row_counts=False).candidate_slices}


def test_log_files_are_indexed_with_the_values_they_hold(tmp_path: Path) -> None:
    t = _indexed(tmp_path)
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 5)]}).file_ids[0]
    c2 = t.deltacommit(logs={fid: [Upserts([row("a", 100)])]})
    c3 = t.deltacommit(logs={fid: [Deletes(["b"])]})
    stats = {r["file_name"]: r for r in ColumnStatsIndex(t.base).load_column("ts").to_pylist()}
    log2, log3 = (p.rsplit("/", 1)[-1] for p in (*c2.log_paths, *c3.log_paths))
    assert (stats[log2]["min"], stats[log2]["max"], stats[log2]["value_count"]) == (100, 100, 1)
    assert (stats[log3]["min"], stats[log3]["value_count"]) == (None, 0)  # deletes only: no values


def test_update_moving_a_row_into_the_range_keeps_the_slice(tmp_path: Path) -> None:
    t = _indexed(tmp_path)
    c1 = t.deltacommit(inserts={"": [row("a", 1), row("b", 5)]})
    c2 = t.deltacommit(inserts={"": [row("c", 1)]})
    a, c = c1.file_ids[0], c2.file_ids[0]
    assert _kept(t, "ts > 50") == set()
    t.deltacommit(logs={a: [Upserts([row("a", 100)])]})
    assert _kept(t, "ts > 50") == {a}  # the base file alone would be dropped; its log holds ts = 100
    plan = plan_scan(t.base, "ts > 50", with_row_counts=False)
    assert plan.files_after_column_stats == 1 and list(plan.dropped_by_column_stats.values()) == ["ts > 50"]
    assert _kept(t, "ts < 3") == {a, c}  # a's base row b (ts 5) and log are above, but base row a has ts 1


def test_deletes_only_remove_rows_so_they_never_keep_a_slice(tmp_path: Path) -> None:
    t = _indexed(tmp_path)
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 5)]}).file_ids[0]
    t.deltacommit(logs={fid: [Deletes(["a"])]})
    assert _kept(t, "ts > 50") == set()
    plan = plan_scan(t.base, "ts > 50", with_row_counts=False)
    assert list(plan.dropped_by_column_stats.values()) == ["ts > 50 (and in its 1 log file(s))"]


def test_a_log_without_statistics_keeps_its_slice(tmp_path: Path) -> None:
    t = _indexed(tmp_path)
    fid = t.deltacommit(inserts={"": [row("a", 1)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 2)])]}, unindexed_logs=True)
    assert _kept(t, "ts > 50") == {fid}


def test_log_only_slice_is_dropped_when_every_log_is(tmp_path: Path) -> None:
    t = _indexed(tmp_path)
    fid = t.deltacommit(log_inserts={"": [row("a", 1), row("b", 2)]}).file_ids[0]
    assert _kept(t, "ts > 50") == set() and _kept(t, "ts = 2") == {fid}
    t.deltacommit(logs={fid: [Upserts([row("b", 60)])]})
    assert _kept(t, "ts > 50") == {fid}


# ------------------------------------------------------------------------------------------- never wrong

PREDICATES = ["ts > {k}", "ts < {k}", "ts = {k}", "ts BETWEEN {k} AND {k2}", "NOT (ts >= {k})", "ts IS NULL",
              "ts IS NOT NULL AND amount < {k}", "ts > {k} OR amount = {k2}", "ts IN ({k}, {k2})"]

_ts = st.one_of(st.none(), st.integers(0, 20))
_op = st.one_of(
    st.tuples(st.just("upsert"), st.sampled_from([0, 1, 2]), st.lists(st.tuples(st.sampled_from("abcdef"), _ts),
                                                                       min_size=1, max_size=3)),
    st.tuples(st.just("delete"), st.sampled_from([0, 1, 2]), st.lists(st.sampled_from("abcdef"), min_size=1,
                                                                       max_size=2)),
)


def _matches(t: MorTable, where: str) -> set[str]:
    """File ids of the slices whose merged rows match ``where`` (the row-level oracle, Spark semantics)."""
    table = HudiTable(t.base)
    spec = merge_spec_for_table(table)
    pred = from_sql(where)
    out = set()
    for s in table.file_slices():
        rows = merge_file_slice(s.base_file_path, s.log_file_paths(t.base), spec=spec).to_pylist()
        if any(evaluate_rows(pred, rows)):
            out.add(s.file_id)
    return out


@pytest.mark.property
@settings(max_examples=60, deadline=None)
@given(ops=st.lists(_op, max_size=5), pick=st.integers(0, len(PREDICATES) - 1), k=st.integers(-1, 21),
       k2=st.integers(-1, 21), version=st.sampled_from([9, 8]))
def test_skipping_never_drops_a_slice_with_a_matching_merged_row(tmp_path_factory: pytest.TempPathFactory,
                                                                 ops: list, pick: int, k: int, k2: int,
                                                                 version: int) -> None:
    t = make_mor_table(tmp_path_factory.mktemp("skip") / "t", version=version, column_stats=True)
    c1 = t.deltacommit(inserts={"": [row("a", 3), row("b", 7)]}, log_inserts={"": [row("c", 12)]})
    c2 = t.deltacommit(inserts={"": [row("d", 15), row("e", None)]})
    fids = [*c1.file_ids, *c2.file_ids]
    for kind, target, items in ops:
        fid = fids[target]
        if kind == "delete":
            t.deltacommit(logs={fid: [Deletes(list(items))]})
        else:
            t.deltacommit(logs={fid: [Upserts([row(key, ts) for key, ts in items])]})
    where = PREDICATES[pick].format(k=k, k2=k2)
    assert _matches(t, where) <= _kept(t, where), where
