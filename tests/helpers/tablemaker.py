"""Build tiny but real Hudi COW tables by hand (no Spark) for fast tests.

    t = make_table(tmp_path / "t")                          # v9, partitioned by "region", hive style
    c1 = add_commit(t, {"region=us": [100, 200], "region=eu": [50]})   # 3 new file groups
    c2 = add_commit(t, {"region=us": [(c1.file_ids["region=us"][0], 300)]})  # new version of a file group

Files are named ``<uuid>-0_0-0-0_<T>.parquet`` with the five Hudi meta columns; every commit writes
``T.commit.requested``, the inflight file and the completed commit (Avro for v8/v9 in
``.hoodie/timeline/`` as ``T_C.commit``; JSON for v6 in ``.hoodie/`` as ``T.commit``) with write stats and
``extraMetadata.schema``. ``version=6`` tables get a layout-1 ``hoodie.properties``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hudi_layout.format.commit_metadata import WriteStat, commit_metadata_bytes
from hudi_layout.format.file_naming import make_base_file_name, new_file_id, partition_depth
from hudi_layout.format.instant import State, instant_file_name, new_instant_time
from hudi_layout.format.properties import load_properties, write_properties
from hudi_layout.format.schema_conversion import arrow_to_avro_schema_json
from hudi_layout.table.commit_protocol import latest_time_on_timeline, list_instants, timeline_dir
from hudi_layout.table.create import create_table_layout, table_properties_for
from hudi_layout.table.partition_metadata import write_partition_metadata

DEFAULT_SCHEMA = pa.schema([
    pa.field("id", pa.string()),
    pa.field("x", pa.int64()),
    pa.field("y", pa.float64()),
    pa.field("name", pa.string()),
    pa.field("region", pa.string()),
])


@dataclass(frozen=True)
class TinyTable:
    base: Path
    version: int
    partition_field: str | None
    schema: pa.Schema
    name: str

    @property
    def timeline(self) -> Path:
        return timeline_dir(self.base, load_properties(self.base / ".hoodie"))


@dataclass(frozen=True)
class CommitInfo:
    instant: str
    #: partition path → file ids written, in the order given
    file_ids: Mapping[str, list[str]] = field(default_factory=dict)
    #: partition-relative paths written
    paths: tuple[str, ...] = ()


def make_table(base: Path, *, version: int = 9, partition_field: str | None = "region",
               hive_style: bool = True, schema: pa.Schema = DEFAULT_SCHEMA, name: str = "tiny") -> TinyTable:
    parts = [partition_field] if partition_field else []
    props = table_properties_for(table_name=name, schema=schema, record_key_fields=["id"],
                                 partition_fields=parts, hive_style=hive_style,
                                 table_version=9 if version == 6 else version)
    if version == 6:
        for k in ("hoodie.timeline.path", "hoodie.timeline.history.path", "hoodie.table.format",
                  "hoodie.record.merge.mode", "hoodie.table.initial.version",
                  "hoodie.table.keygenerator.type"):
            props.pop(k, None)
        props.update({"hoodie.table.version": "6", "hoodie.timeline.layout.version": "1",
                      "hoodie.archivelog.folder": "archived",
                      "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator"
                      if parts else "org.apache.hudi.keygen.NonpartitionedKeyGenerator"})
    create_table_layout(base, props)
    if version == 6:
        write_properties(base / ".hoodie" / "hoodie.properties", props)
    return TinyTable(base, version, partition_field, schema, name)


def _rows(table: TinyTable, partition: str, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    value = partition.split("=", 1)[-1] if partition else "none"
    cols: dict[str, pa.Array] = {}
    for f in table.schema:
        if f.name == table.partition_field:
            cols[f.name] = pa.array([value] * n, f.type)
        elif f.name == "id":
            cols[f.name] = pa.array([f"k{seed}-{i}" for i in range(n)], f.type)
        elif pa.types.is_integer(f.type):
            cols[f.name] = pa.array(rng.integers(0, 1_000_000, n), f.type)
        elif pa.types.is_floating(f.type):
            cols[f.name] = pa.array(rng.random(n), f.type)
        else:
            strings = [f"v{int(v)}" for v in rng.integers(0, 10**9, n)]
            cols[f.name] = pa.array(strings, pa.string()).cast(f.type)
    return pa.table(cols)


def add_commit(table: TinyTable, files: Mapping[str, Sequence[int | tuple[str, int]]], *,
               schema_json: str | None = None, operation: str = "INSERT") -> CommitInfo:
    """Write one completed commit. ``files``: partition path → row counts (new file groups) or
    ``(file_id, rows)`` (new version of an existing file group). Use ``""`` for non-partitioned tables."""
    props = load_properties(table.base / ".hoodie")
    layout = props.timeline_layout_version
    tdir = timeline_dir(table.base, props)
    tdir.mkdir(parents=True, exist_ok=True)
    t = new_instant_time(latest_time_on_timeline(list_instants(table.base, props)))
    (tdir / instant_file_name(t, "commit", State.REQUESTED, layout_version=layout)).write_bytes(b"")
    (tdir / instant_file_name(t, "commit", State.INFLIGHT, layout_version=layout)).write_bytes(
        commit_metadata_bytes({"partitionToWriteStats": {}, "extraMetadata": {}}, table.version))
    stats: dict[str, list[WriteStat]] = {}
    ids: dict[str, list[str]] = {}
    paths: list[str] = []
    seed = int(t[-6:])
    for partition, specs in files.items():
        pdir = table.base / partition if partition else table.base
        write_partition_metadata(pdir, t, partition_depth(partition))
        for k, spec in enumerate(specs):
            if isinstance(spec, tuple):
                fid, n = spec
                prev = "prev"
            else:
                fid, n, prev = new_file_id(0), int(spec), "null"
            fname = make_base_file_name(fid, "0-0-0", t)
            data = _rows(table, partition, n, seed + 1000 * k + len(paths))
            meta = pa.table({
                "_hoodie_commit_time": pa.array([t] * n, pa.string()),
                "_hoodie_commit_seqno": pa.array([f"{t}_0_{i}" for i in range(n)], pa.string()),
                "_hoodie_record_key": data.column("id"),
                "_hoodie_partition_path": pa.array([partition] * n, pa.string()),
                "_hoodie_file_name": pa.array([fname] * n, pa.string()),
            })
            full = pa.Table.from_arrays(meta.columns + data.columns,
                                        names=meta.column_names + data.column_names)
            pq.write_table(full, pdir / fname)
            rel = f"{partition}/{fname}" if partition else fname
            size = (pdir / fname).stat().st_size
            stats.setdefault(partition, []).append(WriteStat(
                file_id=fid, path=rel, partition_path=partition, num_writes=n, file_size_in_bytes=size,
                num_inserts=n, prev_commit=prev))
            ids.setdefault(partition, []).append(fid)
            paths.append(rel)
    schema = schema_json or arrow_to_avro_schema_json(table.schema, table.name)
    meta_doc = {"partitionToWriteStats": stats, "operationType": operation,
                "extraMetadata": {"schema": schema}}
    completion = new_instant_time(t) if layout >= 2 else None
    (tdir / instant_file_name(t, "commit", State.COMPLETED, completion, layout_version=layout)).write_bytes(
        commit_metadata_bytes(meta_doc, table.version))
    return CommitInfo(t, ids, tuple(paths))


def schema_with_field(table: TinyTable, avro_field: Mapping[str, object]) -> str:
    """The table's Avro schema JSON plus one extra field (e.g. a nested one our writer cannot create)."""
    doc = json.loads(arrow_to_avro_schema_json(table.schema, table.name))
    doc["fields"].append(dict(avro_field))
    return json.dumps(doc, separators=(",", ":"))
