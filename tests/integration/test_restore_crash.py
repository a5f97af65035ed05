"""Crash safety of a restore to a savepoint (docs/savepoints.md): a restorer SIGKILLed after its plan, after
dropping the metadata table, between two rolled-back instants, or before completing leaves a table that reads
every row exactly once (the rows of some version between the savepoint and the latest), that every changing
command refuses, and that the same restore finishes; afterwards ours, hudi-rs and the rebuilt metadata table
agree with the savepoint. The restorers run in subprocesses (no Spark), all started together."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import hudi_layout as hl
from hudi_layout.cleaning import clean
from hudi_layout.errors import UnsupportedTableError
from hudi_layout.services.index import build_column_stats_index
from hudi_layout.services.savepoint import restore_to_savepoint
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.clustering import start_python, tail
from tests.helpers.integration import hudi_rs_read
from tests.helpers.live_tables import LiveTable

pytestmark = pytest.mark.integration

CRASH_POINTS = ("restore.after_plan", "restore.after_mdt", "restore.mid_instants", "restore.before_complete")

RESTORER = textwrap.dedent("""
    import sys
    from hudi_layout.services.savepoint import restore_to_savepoint
    print("RESTORING", flush=True)
    restore_to_savepoint(sys.argv[1], sys.argv[2])
    print("COMPLETED", flush=True)
""")


def _no_spark() -> None:
    raise AssertionError("no Spark for a Copy-on-Write index")


def test_sigkill_at_each_phase_of_a_restore(tmp_path: Path) -> None:
    tables: dict[str, tuple[LiveTable, str, dict[str, int], list[dict[str, int]]]] = {}
    for point in CRASH_POINTS:
        t = LiveTable.create(tmp_path / point.replace(".", "_"))
        t.insert({"region=us": 2, "region=eu": 2})
        t.update(t.live_groups()[:2])
        pinned = t.rows()
        sp = hl.savepoint(str(t.base)).instant_time
        versions = [pinned]
        for _ in range(2):
            t.update(t.live_groups()[:3])
            versions.append(t.rows())
            t.replace(t.live_groups())
            versions.append(t.rows())
        tables[point] = (t, sp, pinned, versions)
    procs = {p: start_python(RESTORER, str(t.base), sp, log=tmp_path / f"{p}.log", HUDI_LAYOUT_FAULT=p)
             for p, (t, sp, _pinned, _v) in tables.items()}
    for point, proc in procs.items():
        assert proc.wait(timeout=120) == -9, f"{point}: {tail(tmp_path / f'{point}.log')}"
    for point, (t, sp, pinned, versions) in tables.items():
        names = t.timeline_names()
        assert any(n.endswith(".restore.requested") for n in names) and not any(n.endswith(".restore") for n in names)
        # every row exactly once (LiveTable.rows asserts it), as some version between the savepoint and the latest
        assert t.rows() in versions, point
        with pytest.raises(UnsupportedTableError, match="restore is pending"):
            clean(t.base, {"hudi_layout.clean.grace.period.seconds": "0"})
        result = restore_to_savepoint(str(t.base), sp,
                                      rebuild_index=lambda p: build_column_stats_index(p, spark=_no_spark))
        assert result.resumed, point
        assert t.rows() == pinned, point
        rs = hudi_rs_read(t.base)
        assert dict(zip(rs.column("id").to_pylist(), rs.column("v").to_pylist())) == pinned, point
        assert HudiTable(t.base).has_metadata_table and result.index.get("status") == "built", point
        leftovers = [p for p in t.data_files() if any(i in p for i, _a in result.rolled_back)]
        assert not leftovers, (point, leftovers)
