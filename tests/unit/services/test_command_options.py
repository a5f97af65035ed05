"""Every command refuses the caller's options it would not use (session 29's options probe, F7): until session 30
``used_by`` was documentation, and ``hl.clean(options={"hoodie.parquet.compression.codec": "gzip"})`` or
``cluster -o hoodie.datasource.write.operation=delete`` went through without effect. The options that describe
the table are taken by every command (checked against ``hoodie.properties``), so one option map serves them all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from hudi_layout import options as cfg
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.services.cleaning import clean
from hudi_layout.services.clustering import execute_pending, preview_clustering
from hudi_layout.services.clustering_service import ClusteringService
from hudi_layout.services.compaction import compact
from hudi_layout.services.index import build_column_stats_index
from tests.helpers.integration import tree_snapshot
from tests.helpers.live_ops import run_write

TABLE = {"hoodie.table.name": "cmd", "hoodie.datasource.write.recordkey.field": "id",
         "hoodie.datasource.write.partitionpath.field": "p"}


@pytest.fixture()
def table(tmp_path) -> str:
    path = str(tmp_path / "t")
    run_write(path, pa.table({"id": pa.array(range(6), pa.int64()), "x": pa.array(range(6), pa.int64()),
                              "p": pa.array(["a", "b"] * 3)}), TABLE)
    return path


COMMANDS: dict[str, Callable[[str, dict[str, Any]], Any]] = {
    cfg.CLEAN: lambda path, o: clean(path, o),
    cfg.CLUSTER: lambda path, o: preview_clustering(path, ["x"], options=o),
    "execute_pending": lambda path, o: execute_pending(None, path, o),  # type: ignore[arg-type]
    cfg.COMPACT: lambda path, o: compact(None, path, o),  # type: ignore[arg-type]
    cfg.INDEX: lambda path, o: build_column_stats_index(path, o),
    cfg.SERVICE: lambda path, o: ClusteringService(path, o, spark=None, max_iterations=0),
}
FOREIGN = {
    cfg.CLEAN: "hoodie.parquet.compression.codec", cfg.CLUSTER: "hoodie.datasource.write.operation",
    "execute_pending": "hoodie.compaction.target.io",
    cfg.COMPACT: "hoodie.clustering.plan.strategy.sort.columns", cfg.INDEX: "hoodie.cleaner.commits.retained",
    cfg.SERVICE: "hoodie.record.merge.mode",
}
VALUES = {"hoodie.parquet.compression.codec": "gzip", "hoodie.datasource.write.operation": "delete",
          "hoodie.compaction.target.io": "10", "hoodie.clustering.plan.strategy.sort.columns": "x",
          "hoodie.cleaner.commits.retained": "3", "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_option_of_another_command_is_refused_and_nothing_changes(table, command) -> None:
    key = FOREIGN[command]
    before = tree_snapshot(table)
    with pytest.raises(InvalidArgumentError, match=f"option {key} is not used by"):
        COMMANDS[command](table, {**TABLE, key: VALUES[key]})
    assert tree_snapshot(table) == before


def test_the_table_describing_options_serve_every_command(table) -> None:
    """The table's own keys are accepted (and a contradicting value refused as before)."""
    preview_clustering(table, ["x"], options={**TABLE, "hoodie.datasource.write.hive_style_partitioning": "false"})
    assert clean(table, dict(TABLE)) == []
    with pytest.raises(InvalidArgumentError, match="conflict"):
        clean(table, {**TABLE, "hoodie.datasource.write.recordkey.field": "x"})


def test_options_used_by_keeps_what_a_command_run_for_another_takes() -> None:
    write = {**TABLE, "hoodie.datasource.write.operation": "upsert", "hoodie.compaction.target.io": "10",
             "hoodie.cleaner.commits.retained": "2", "hoodie.parquet.max.file.size": "100",
             "hoodie.clustering.plan.strategy.sort.columns": "x"}
    assert cfg.options_used_by(write, cfg.COMPACT) == {
        **TABLE, "hoodie.compaction.target.io": "10", "hoodie.cleaner.commits.retained": "2",
        "hoodie.parquet.max.file.size": "100"}
    assert set(cfg.options_used_by(write, cfg.CLUSTER)) == {*TABLE, "hoodie.cleaner.commits.retained",
                                                            "hoodie.parquet.max.file.size",
                                                            "hoodie.clustering.plan.strategy.sort.columns"}
