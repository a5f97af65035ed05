"""The commit-time conflict check of a clustering of Merge-on-Read file groups (no Spark needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_layout.clustering.schedule import schedule_clustering
from hudi_layout.errors import CommitConflictError, InvalidArgumentError
from hudi_layout.options import QueryType, resolve_read_options
from hudi_layout.services.clustering import _check_inputs_current, input_log_sizes
from tests.helpers.mor_builder import Upserts, make_mor_table, row

SMALL = {"hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)}


def _scheduled(tmp_path: Path):
    t = make_mor_table(tmp_path / "t")
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 1)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 2)])]})
    res = schedule_clustering(t.base, SMALL, columns="ts")
    assert res is not None
    return t, fid, res[1]


def test_unchanged_inputs_pass(tmp_path: Path) -> None:
    t, _fid, plan = _scheduled(tmp_path)
    _check_inputs_current(t.base, plan, input_log_sizes(t.base, plan))


@pytest.mark.parametrize("complete", [True, False])
def test_a_new_log_on_an_input_file_group_is_a_conflict(tmp_path: Path, complete: bool) -> None:
    t, fid, plan = _scheduled(tmp_path)
    sizes = input_log_sizes(t.base, plan)
    late = t.deltacommit(logs={fid: [Upserts([row("b", 5)])]}, complete=complete)
    with pytest.raises(CommitConflictError, match=late.log_paths[0]):
        _check_inputs_current(t.base, plan, sizes)


def test_a_listed_log_that_grew_is_a_conflict(tmp_path: Path) -> None:
    t, _fid, plan = _scheduled(tmp_path)
    sizes = input_log_sizes(t.base, plan)
    (log,) = sizes
    with open(log, "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(CommitConflictError, match="changed while clustering"):
        _check_inputs_current(t.base, plan, sizes)


def test_a_compaction_scheduled_meanwhile_is_a_conflict(tmp_path: Path) -> None:
    t, fid, plan = _scheduled(tmp_path)
    t.schedule_compaction([fid])
    with pytest.raises(CommitConflictError, match="pending compaction"):
        _check_inputs_current(t.base, plan, input_log_sizes(t.base, plan))


def test_read_options_are_checked() -> None:
    assert resolve_read_options({"hoodie.datasource.query.type": "READ_OPTIMIZED"}) == {
        "hoodie.datasource.query.type": "READ_OPTIMIZED"}
    from hudi_layout import options as cfg

    assert cfg.QUERY_TYPE.get(resolve_read_options({"hoodie.read.query.type": "snapshot"})) is QueryType.SNAPSHOT
    with pytest.raises(InvalidArgumentError, match="hoodie.datasource.query.type"):
        resolve_read_options({"hoodie.datasource.query.type": "bogus"})
    with pytest.raises(InvalidArgumentError, match="hoodie.clustering.inline"):
        resolve_read_options({"hoodie.clustering.inline": "true"})
