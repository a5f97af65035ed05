"""``index --rebuild`` changes nothing until it has read everything it needs (path probe F10, session 32)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hudi_layout.errors import CorruptFileError
from hudi_layout.metadata.mdt_reader import MetadataTableReader
from hudi_layout.services.index import build_column_stats_index
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.live_tables import LiveTable


def _no_spark() -> None:
    raise AssertionError("a Copy-on-Write index needs no Spark")


def test_a_damaged_file_leaves_the_old_metadata_table_in_place(tmp_path: Path) -> None:
    """A damaged base file (or a failed Spark job, Ctrl-C) during a rebuild left the table without any metadata
    table: it was dropped before the first footer was read. Now one line, and the old one stays."""
    t = LiveTable.create(tmp_path / "t")
    t.insert({"region=us": 2, "region=eu": 1})
    before = MetadataTableReader(t.base).files_listing()
    victim = Path(HudiTable(t.base).file_slices()[0].base_file_path)
    good = victim.read_bytes()
    victim.write_bytes(good[:100])
    with pytest.raises(CorruptFileError, match="cannot be read as parquet"):
        build_column_stats_index(str(t.base), rebuild=True, spark=_no_spark)
    assert HudiTable(t.base).has_metadata_table and MetadataTableReader(t.base).files_listing() == before
    victim.write_bytes(good)
    assert build_column_stats_index(str(t.base), rebuild=True, spark=_no_spark)["status"] == "built"
