"""The instant an ``index --read-floats`` vouches for: the newest completed instant older than every pending
one, so no file written later (by any writer) falls under it."""

from __future__ import annotations

import time
from pathlib import Path

from hudi_layout.format.instant import State, instant_file_name
from hudi_layout.services.index import nan_exact_through
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.tablemaker import add_commit, make_table


def test_newest_completed_instant_when_nothing_is_pending(tmp_path: Path) -> None:
    t = make_table(tmp_path / "t")
    add_commit(t, {"region=us": [3]})
    second = add_commit(t, {"region=us": [3]})
    assert nan_exact_through(HudiTable(str(t.base))) == second.instant


def test_a_pending_instant_caps_it_below_itself(tmp_path: Path) -> None:
    t = make_table(tmp_path / "t")
    first = add_commit(t, {"region=us": [3]})
    time.sleep(0.02)  # the next instant is at least 20 ms later: room for one between
    second = add_commit(t, {"region=us": [3]})
    # another writer's instant, requested between the two and still running: its files will carry its time
    between = str(int(first.instant) + 1)
    assert first.instant < between < second.instant
    (t.timeline / instant_file_name(between, "commit", State.REQUESTED, layout_version=2)).write_bytes(b"")
    assert nan_exact_through(HudiTable(str(t.base))) == first.instant


def test_none_for_a_table_without_completed_instants(tmp_path: Path) -> None:
    t = make_table(tmp_path / "t")
    assert nan_exact_through(HudiTable(str(t.base))) is None
