"""Build tiny real COW tables (parquet + data timeline via the commit protocol + our MDT) for tests."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout.format.commit_metadata import WriteStat, commit_metadata_bytes
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS, FileColumnStats, MetadataWriter, update_data_table_properties
from hudi_layout.table.commit_protocol import begin_write, complete_write
from hudi_layout.table.create import create_table_layout, table_properties_for
from hudi_layout.table.partition_metadata import write_partition_metadata

SCHEMA = pa.schema([("id", pa.string()), ("v", pa.int64()), ("d", pa.date32()), ("amt", pa.decimal128(10, 2)),
                    ("x", pa.float64()), ("region", pa.string())])
INDEXED = ["id", "v", "d", "amt", "x"]


def create_table(base: Path, *, partitioned: bool = True, columns: list[str] | None = INDEXED,
                 max_delta_commits: int | None = None) -> Path:
    props = table_properties_for(table_name="t", schema=SCHEMA, record_key_fields=["id"],
                                 partition_fields=["region"] if partitioned else [], hive_style=True)
    create_table_layout(base, props)
    writer = MetadataWriter(base, columns_to_index=columns, max_delta_commits=max_delta_commits)
    update_data_table_properties(base, writer.initialize())
    return base


def write_batch(base: Path, rows_by_partition: dict[str, list[tuple[Any, ...]]], *, columns: list[str] | None = INDEXED,
                fail_before_complete: bool = False, max_delta_commits: int | None = None,
                replace: dict[str, list[str]] | None = None, as_tables: bool = False) -> str:
    """One commit: a new parquet file per partition with rows ``(id, v, d, amt, x)``; MDT updated before the
    data instant completes. ``fail_before_complete`` stops after the MDT deltacommit (a crashed writer)."""
    pending = begin_write(base, "commit", hooks=COMMIT_HOOKS)
    t = pending.instant_time
    files_added: dict[str, dict[str, int]] = {}
    stats: list[FileColumnStats] = []
    wstats: dict[str, list[WriteStat]] = {}
    for part, rows in rows_by_partition.items():
        write_partition_metadata(base / part, t, 1 if part else 0)
        fid = f"{uuid.uuid4()}-0"
        name = f"{fid}_0-1-0_{t}.parquet"
        n = len(rows)
        region = part.split("=", 1)[1] if part else "none"
        data = pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows], "d": [r[2] for r in rows],
                         "amt": [r[3] for r in rows], "x": [r[4] for r in rows], "region": [region] * n},
                        schema=SCHEMA)
        meta = {"_hoodie_commit_time": [t] * n, "_hoodie_commit_seqno": [f"{t}_0_{j}" for j in range(n)],
                "_hoodie_record_key": [r[0] for r in rows], "_hoodie_partition_path": [part] * n,
                "_hoodie_file_name": [name] * n}
        tbl = pa.table({**meta, **{c: data.column(c) for c in data.column_names}})
        pq.write_table(tbl, base / part / name)
        size = (base / part / name).stat().st_size
        files_added[part] = {name: size}
        for c in SCHEMA.names:
            col = tbl.column(c)
            mm = pc.min_max(col)
            stats.append(FileColumnStats(part, name, c, mm["min"].as_py(), mm["max"].as_py(), col.null_count,
                                         len(col), col.type))
        wstats.setdefault(part, []).append(WriteStat(fid, f"{part}/{name}" if part else name, part, n, size,
                                                     num_inserts=n))
    meta_bytes = commit_metadata_bytes({"partitionToWriteStats": wstats, "operationType": "INSERT",
                                        "extraMetadata": {}}, 9)

    def mdt(p: Any) -> None:
        w = MetadataWriter(base, columns_to_index=columns, max_delta_commits=max_delta_commits)
        if as_tables:  # the bulk path: one Arrow table per column
            tables = {}
            for c in SCHEMA.names:
                mine = [s for s in stats if s.column == c]
                tables[c] = pa.table({"partition": [s.partition for s in mine],
                                      "file_name": [s.file_name for s in mine],
                                      "min": pa.array([s.min for s in mine], SCHEMA.field(c).type),
                                      "max": pa.array([s.max for s in mine], SCHEMA.field(c).type),
                                      "null_count": [s.null_count for s in mine],
                                      "value_count": [s.value_count for s in mine]})
            w.write_deltacommit(p.instant_time, files_added, partitions_added=list(files_added),
                                files_deleted=replace, column_stats_tables=tables)
        else:
            w.write_deltacommit(p.instant_time, files_added, stats, partitions_added=list(files_added),
                                files_deleted=replace)
        if fail_before_complete:
            raise RuntimeError("simulated crash")

    try:
        complete_write(pending, meta_bytes, committed_files=[f"{p}/{n}" if p else n
                                                             for p, d in files_added.items() for n in d],
                       before_complete=mdt)
    except RuntimeError:
        if not fail_before_complete:
            raise
        pending.heartbeat.stop()
        return t
    MetadataWriter(base, columns_to_index=columns, max_delta_commits=max_delta_commits).maybe_compact()
    return t
