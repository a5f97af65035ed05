"""Writes without Spark, for fast tests of the write transaction: the same :class:`WriteSession` (validation,
instant, conflict checks, commit metadata, metadata table) and the same executor code (insert writer,
:func:`hudi_layout.writer.merge.merge_partition`) the Spark jobs run, with the combine / tag steps done in
plain Python (reading the key column of the candidate base files with pyarrow).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout.options import WriteOperation
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.writer.base_file_writer import (
    IS_DELETED_FIELD,
    PARTITION_PATH_COLUMN,
    RECORD_KEY_COLUMN,
    write_partition,
)
from hudi_layout.writer.merge import (
    DELETE_FLAG_COLUMN,
    MERGE_TARGET_COLUMN,
    SEQUENCE_COLUMN,
    MergeTarget,
    combine_records,
    merge_partition,
)
from hudi_layout.writer.transaction import TagSnapshot, WriteResult, WriteSession


def keyed(session: WriteSession, data: pa.Table) -> pa.Table:
    """``data`` + record key + partition path (simple keys and plain values: what these tests use)."""
    def text(name: str) -> list[str | None]:
        return [None if v is None else str(v) for v in data.column(name).to_pylist()]

    assert len(session.record_keys) == 1, "the no-Spark helper handles single-field keys"
    keys = [None if k == "" else k for k in text(session.record_keys[0])]
    parts = [""] * data.num_rows
    for f in session.partition_fields:
        vals = ["__HIVE_DEFAULT_PARTITION__" if v in (None, "") else v for v in text(f)]
        vals = [f"{f}={v}" for v in vals] if session.hive_style else vals
        parts = [f"{a}/{b}" if a else b for a, b in zip(parts, vals)]
    return data.append_column(RECORD_KEY_COLUMN, pa.array(keys, pa.string())).append_column(
        PARTITION_PATH_COLUMN, pa.array(parts, pa.string()))


def combine(session: WriteSession, rows: pa.Table) -> pa.Table:
    """The executors' combine step (largest ordering value, then the later row) on keyed rows."""
    seq = pa.array(range(rows.num_rows), pa.int64())
    return combine_records(rows.append_column(SEQUENCE_COLUMN, seq), session.merge_rules).drop([SEQUENCE_COLUMN])


def run_write(path: str, data: pa.Table, options: Mapping[str, Any] | None = None, *, overwrite: bool = False,
              partitions_in_data: Sequence[str] | None = None) -> WriteResult:
    """:func:`hudi_layout.write` without Spark (one in-process "task")."""
    session = WriteSession.start(path, options, data.schema, overwrite, partitions_in_data=partitions_in_data)
    try:
        rows = keyed(session, data)
        tagged: TagSnapshot | None = None
        written: list[dict[str, Any]] = []
        if session.operation.merges_by_key:
            written, tagged = _merge(session, rows)
        elif session.operation is not WriteOperation.DELETE_PARTITION:
            for out in write_partition(session.spec, iter(rows.to_batches())):
                written.extend(out.to_pylist())
        return session.commit(written, tagged=tagged)
    except BaseException:
        session.abort()
        raise


def _merge(session: WriteSession, rows: pa.Table) -> tuple[list[dict[str, Any]], TagSnapshot]:
    rows = rows.append_column(SEQUENCE_COLUMN, pa.array(range(rows.num_rows), pa.int64()))
    if session.operation is WriteOperation.DELETE:
        flag = pa.array([True] * rows.num_rows)
    elif IS_DELETED_FIELD in rows.column_names:
        flag = rows.column(IS_DELETED_FIELD).fill_null(False)
    else:
        flag = pa.array([False] * rows.num_rows)
    rows = rows.append_column(DELETE_FLAG_COLUMN, flag)
    wanted = set(zip(rows.column(PARTITION_PATH_COLUMN).to_pylist(), rows.column(RECORD_KEY_COLUMN).to_pylist()))
    parts = sorted({p for p, _k in wanted})
    table = HudiTable(str(session.base))
    existing = set(table.partitions())
    slices = table.file_slices(partitions=[p for p in parts if p in existing]) if parts else []
    where: dict[tuple[str, str], list[str]] = {}
    targets: dict[str, MergeTarget] = {}
    for s in slices:
        for key in pq.read_table(s.base_file_path, columns=[RECORD_KEY_COLUMN]).column(0).to_pylist():
            if (s.partition_path, key) in wanted:
                where.setdefault((s.partition_path, key), []).append(s.base_file_name)
                targets[s.base_file_name] = MergeTarget(s.partition_path, s.file_id, s.base_file_name,
                                                        s.base_file_path, s.commit_time)
    session.check_no_pending_rewrite((t.partition_path, t.file_id) for t in targets.values())
    # one row per (record, file holding its key): a key stored in two file groups updates both
    idx, names = [], []
    for i, (p, k) in enumerate(zip(rows.column(PARTITION_PATH_COLUMN).to_pylist(),
                                   rows.column(RECORD_KEY_COLUMN).to_pylist())):
        for name in where.get((p, k), [None]):  # type: ignore[list-item]
            idx.append(i)
            names.append(name)
    tagged = rows.take(pa.array(idx, pa.int64())).append_column(MERGE_TARGET_COLUMN, pa.array(names, pa.string()))
    written: list[dict[str, Any]] = []
    for out in merge_partition(session.spec, iter(tagged.to_batches()), targets, session.merge_rules):
        written.extend(out.to_pylist())
    return written, TagSnapshot({(t.partition_path, t.file_id): t.base_file_name for t in targets.values()})
