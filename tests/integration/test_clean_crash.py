"""Crash safety of a clean: a cleaner SIGKILLed after its plan, in the middle of its deletes, before the
metadata table, or before completion leaves a readable table with every row exactly once; the next clean
finishes the pending one (Hudi re-executes a pending clean plan) and the table, its metadata table and hudi-rs
agree afterwards. The cleaners run in subprocesses (no Spark), all started together."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hudi_layout.cleaning import clean
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.metadata.mdt_reader import MetadataTableReader
from tests.helpers.clustering import start_python, tail
from tests.helpers.integration import hudi_rs_read, hudi_rs_slices, our_slices
from tests.helpers.live_tables import LiveTable

pytestmark = pytest.mark.integration

CRASH_POINTS = ("clean_after_plan", "clean_mid_deletes", "clean_before_mdt", "clean_before_complete")
OPTS = {"hoodie.cleaner.commits.retained": "2", "hudi_layout.clean.grace.period.seconds": "0"}

CLEANER = textwrap.dedent("""
    import json, sys
    from hudi_layout.cleaning import clean
    print("CLEANING", flush=True)
    clean(sys.argv[1], json.loads(sys.argv[2]))
    print("COMPLETED", flush=True)
""")


def _rows_by_hudi_rs(base: Path) -> dict[str, int]:
    t = hudi_rs_read(base)
    ids = t.column("id").to_pylist()
    assert len(ids) == len(set(ids))
    return dict(zip(ids, t.column("v").to_pylist()))


def test_sigkill_at_each_phase_of_a_clean(tmp_path: Path) -> None:
    import json

    tables = {}
    for point in CRASH_POINTS:
        t = LiveTable.create(tmp_path / point)
        t.insert({"region=us": 3, "region=eu": 2})
        for _ in range(5):
            t.replace(t.live_groups())
        tables[point] = t
    procs = {p: start_python(CLEANER, str(t.base), json.dumps(OPTS), log=tmp_path / f"{p}.log",
                             HUDI_LAYOUT_FAULT=p) for p, t in tables.items()}
    for point, proc in procs.items():
        assert proc.wait(timeout=120) == -9, f"{point}: {tail(tmp_path / f'{point}.log')}"
    for point, t in tables.items():
        names = t.timeline_names()
        pending = [n for n in names if n.endswith(".clean.requested")]
        assert len(pending) == 1 and not any(n.endswith(".clean") for n in names), (point, names)
        # readers, ours and hudi-rs, see every row exactly once while the clean is pending
        assert t.rows() == t.values, point
        assert _rows_by_hudi_rs(t.base) == t.values, point
        assert hudi_rs_slices(t.base) == our_slices(t.base), point
        if point == "clean_after_plan":
            assert len(t.data_files()) == 30
        elif point == "clean_mid_deletes":
            assert 15 < len(t.data_files()) < 30
        else:
            assert len(t.data_files()) == 15
        # the next clean finishes it
        results = clean(t.base, OPTS)
        assert results and results[0].resumed and results[0].files_deleted == 15, point
        assert not [n for n in t.timeline_names() if n.endswith(".clean.requested")
                    and not any(m.startswith(n.split(".")[0] + "_") and m.endswith(".clean")
                                for m in t.timeline_names())], point
        assert len(t.data_files()) == 15
        assert t.rows() == t.values == _rows_by_hudi_rs(t.base), point
        listing = MetadataTableReader(t.base).files_listing()
        assert {f"{p}/{n}" for p, ns in listing.items() for n in ns} == t.data_files(), point
        on_disk = {Path(f).name for f in t.data_files()}
        assert set(ColumnStatsIndex(t.base).load_column("v", live_only=False).column("file_name").to_pylist()) \
            == on_disk, point
