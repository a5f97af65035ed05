"""Append log files to a Merge-on-Read table as Hudi's writers do, into a table hudi_layout wrote.

hudi_layout writes a Merge-on-Read table's changes as base files (deltacommits that rewrite the touched file
groups); Hudi's own writers append log blocks. A differential that only runs hudi_layout's writes would never
meet a slice with log files, so :func:`append_hudi_logs` plays the Hudi writer: one deltacommit whose Avro data
and delete blocks go to new log files (one per file group, named after the deltacommit, versions 8 / 9), listed
in the metadata table's ``files`` partition with their column statistics, as ``tests/helpers/mor_builder.py``
writes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hudi_layout.format.instant import new_instant_time
from hudi_layout.table.commit_protocol import latest_time_with_metadata
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.mor_builder import Commit, Deletes, MorTable, Upserts


def adopt_mor_table(path: str | Path, key_field: str = "id") -> MorTable:
    """A :class:`MorTable` writing into the existing table at ``path`` (its latest slices, schema and partition
    field)."""
    table = HudiTable(str(path))
    props = table.properties
    assert props.is_mor and props.version >= 8, "log files are appended to version 8 / 9 Merge-on-Read tables"
    assert props.record_key_fields == [key_field], props.record_key_fields
    schema = json.loads(table.schema() or "{}")
    fields = tuple((f["name"], _non_null(f["type"])) for f in schema["fields"])
    parts = props.partition_fields
    t = MorTable(Path(path), props.version, props.table_name, fields, parts[0] if parts else None,
                 column_stats=True)
    for s in table.file_slices():
        t.partitions[s.file_id] = s.partition_path
        t.slices[(s.partition_path, s.file_id)] = s.commit_time
        t.base_files[s.file_id] = s.base_file_name
    return t


def _non_null(avro_type: Any) -> Any:
    """The type of a nullable Avro field (``["null", T]`` or ``[T, "null"]``)."""
    if isinstance(avro_type, list):
        others = [t for t in avro_type if t != "null"]
        assert len(others) == 1, avro_type
        return others[0]
    return avro_type


def append_hudi_logs(path: str | Path, updates: Mapping[str, Sequence[Mapping[str, Any]]],
                     deletes: Mapping[str, Sequence[str]]) -> Commit:
    """One completed deltacommit appending, per file id, an Avro data block of ``updates`` (rows holding every
    column) and a delete block of ``deletes`` (record keys; natural order: a delete wins whatever the ordering
    values) to a new log file of that file group."""
    t = adopt_mor_table(path)
    blocks: dict[str, list[Any]] = {}
    for fid, rows in updates.items():
        if rows:
            blocks.setdefault(fid, []).append(Upserts(list(rows)))
    for fid, keys in deletes.items():
        if keys:
            blocks.setdefault(fid, []).append(Deletes(list(keys)))
    # after every instant of the table and its metadata table (as a writer's clock would be), now
    instant = new_instant_time(latest_time_with_metadata(t.base, HudiTable(str(path)).properties))
    return t.deltacommit(logs=blocks, instant=instant, completion=t.later(instant, 1))
