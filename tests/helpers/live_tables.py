"""Tiny real COW tables that change (no Spark): inserts, new slices of a file group, replacecommits (as a
clustering writes them), pending clustering plans; every commit through the commit protocol with its MDT
deltacommit (``files`` + ``column_stats``), as our writers do. For cleaning and index-liveness tests.

    t = LiveTable.create(tmp_path / "t")
    c1 = t.insert({"region=us": 2, "region=eu": 1})          # 3 new file groups
    c2 = t.update([("region=us", c1.groups["region=us"][0])])  # a new slice of one group (same keys)
    c3 = t.replace(t.live_groups())                          # a clustering: every group replaced by new ones
    t.rows()                                                 # {key: value} read from the latest slices

Each file holds ``ROWS`` rows with distinct keys; ``rows()`` is the table's content read through the
file-system view, so "every row exactly once" is ``len(rows) == sum of file rows`` and equality with a model.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout.format import instant as inst
from hudi_layout.format.commit_metadata import (
    WriteStat,
    clustering_plan_metadata,
    commit_metadata_bytes,
    replace_commit_metadata_bytes,
    requested_replace_bytes,
)
from hudi_layout.format.file_naming import make_base_file_name, new_file_id
from hudi_layout.format.fileio import atomic_write
from hudi_layout.format.instant import State, instant_file_name, new_instant_time
from hudi_layout.format.properties import load_properties
from hudi_layout.format.schema_conversion import arrow_to_avro_schema_json
from hudi_layout.metadata.mdt_writer import COMMIT_HOOKS, FileColumnStats, MetadataWriter, update_data_table_properties
from hudi_layout.table.commit_protocol import (
    begin_write,
    complete_write,
    latest_time_with_metadata,
    resume_clustering,
    timeline_dir,
)
from hudi_layout.table.create import create_table_layout, table_properties_for
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import TableLock
from hudi_layout.table.partition_metadata import write_partition_metadata

SCHEMA = pa.schema([("id", pa.string()), ("v", pa.int64()), ("region", pa.string())])
ROWS = 5
_counter = itertools.count()


@dataclass(frozen=True)
class Written:
    instant: str
    #: partition -> file ids written by this commit, in order
    groups: Mapping[str, list[str]] = field(default_factory=dict)
    files: tuple[str, ...] = ()  # partition-relative paths


@dataclass
class LiveTable:
    base: Path
    partitioned: bool = True
    mdt: bool = True
    #: the keys of each file group (a new slice rewrites the same keys with new values)
    keys: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: the model: the value of every key as the latest commit wrote it
    values: dict[str, int] = field(default_factory=dict)

    @classmethod
    def create(cls, base: Path, *, partitioned: bool = True, mdt: bool = True, version: int = 9) -> LiveTable:
        props = table_properties_for(table_name="live", schema=SCHEMA, record_key_fields=["id"],
                                     partition_fields=["region"] if partitioned else [], hive_style=True,
                                     table_version=version)
        create_table_layout(base, props)
        if mdt:
            writer = MetadataWriter(base)
            update_data_table_properties(base, writer.initialize())
        return cls(base, partitioned, mdt)

    # ------------------------------------------------------------------ writes

    def _file(self, t: str, part: str, fid: str, keys: list[str]) -> tuple[str, int, list[FileColumnStats]]:
        pdir = self.base / part if part else self.base
        write_partition_metadata(pdir, t, 1 if part else 0)
        name = make_base_file_name(fid, "0-1-0", t)
        n = len(keys)
        region = part.split("=", 1)[1] if part else "none"
        values = [self.values[k] for k in keys]
        data = pa.table({"id": keys, "v": pa.array(values, pa.int64()), "region": [region] * n}, schema=SCHEMA)
        meta = {"_hoodie_commit_time": [t] * n, "_hoodie_commit_seqno": [f"{t}_0_{j}" for j in range(n)],
                "_hoodie_record_key": keys, "_hoodie_partition_path": [part] * n, "_hoodie_file_name": [name] * n}
        tbl = pa.table({**meta, **{c: data.column(c) for c in data.column_names}})
        pq.write_table(tbl, pdir / name)
        stats = []
        for c in tbl.column_names:
            if c in ("_hoodie_commit_seqno", "_hoodie_file_name"):
                continue
            col = tbl.column(c)
            mm = pc.min_max(col)
            stats.append(FileColumnStats(part, name, c, mm["min"].as_py(), mm["max"].as_py(), col.null_count,
                                         len(col), col.type))
        return name, (pdir / name).stat().st_size, stats

    def _commit(self, action: str, files: Mapping[tuple[str, str], list[str]], *, operation: str,
                replaced: Mapping[str, list[str]] | None = None, requested: bytes = b"",
                pending: Any = None) -> Written:
        if pending is None:
            pending = begin_write(self.base, action, requested_bytes=requested, hooks=COMMIT_HOOKS)
        t = pending.instant_time
        added: dict[str, dict[str, int]] = {}
        stats: list[FileColumnStats] = []
        wstats: dict[str, list[WriteStat]] = {}
        groups: dict[str, list[str]] = {}
        paths = []
        for (part, fid), keys in files.items():
            name, size, st = self._file(t, part, fid, keys)
            added.setdefault(part, {})[name] = size
            stats += st
            rel = f"{part}/{name}" if part else name
            paths.append(rel)
            wstats.setdefault(part, []).append(WriteStat(fid, rel, part, len(keys), size, num_inserts=len(keys)))
            groups.setdefault(part, []).append(fid)
            self.keys[(part, fid)] = keys
        meta = {"partitionToWriteStats": wstats, "operationType": operation,
                "extraMetadata": {"schema": arrow_to_avro_schema_json(SCHEMA, "live")}}
        if replaced is not None:
            meta["partitionToReplaceFileIds"] = {p: list(v) for p, v in replaced.items()}
            payload = replace_commit_metadata_bytes(meta, 9)
        else:
            payload = commit_metadata_bytes(meta, 9)

        def mdt(p: Any) -> None:
            if self.mdt:
                MetadataWriter(self.base).write_deltacommit(p.instant_time, added, stats,
                                                            partitions_added=sorted(added))

        complete_write(pending, payload, committed_files=paths, before_complete=mdt)
        if self.mdt:
            MetadataWriter(self.base).maybe_compact()
        return Written(t, groups, tuple(paths))

    def insert(self, files_per_partition: Mapping[str, int]) -> Written:
        files: dict[tuple[str, str], list[str]] = {}
        for part, count in files_per_partition.items():
            for _ in range(count):
                fid = new_file_id()
                files[(part, fid)] = [f"{fid[:8]}-{i}" for i in range(ROWS)]
                self.values.update((k, next(_counter)) for k in files[(part, fid)])
        return self._commit(inst.COMMIT, files, operation="INSERT")

    def update(self, groups: Sequence[tuple[str, str]]) -> Written:
        """A new slice of each group (same keys, new values), as a Copy-on-Write upsert writes it."""
        for g in groups:
            self.values.update((k, next(_counter)) for k in self.keys[g])
        return self._commit(inst.COMMIT, {g: self.keys[g] for g in groups}, operation="UPSERT")

    def replace(self, groups: Sequence[tuple[str, str]], *, outputs: int | None = None,
                pending: Any = None) -> Written:
        """A clustering: the rows of ``groups`` move into ``outputs`` new file groups (default: as many)."""
        by_part: dict[str, list[str]] = {}
        for part, fid in groups:
            by_part.setdefault(part, []).extend(self.keys[(part, fid)])
        files: dict[tuple[str, str], list[str]] = {}
        for part, keys in by_part.items():
            n = outputs or sum(1 for p, _ in groups if p == part)
            chunk = -(-len(keys) // n)
            for i in range(0, len(keys), chunk):
                files[(part, new_file_id())] = sorted(keys)[i:i + chunk]
        replaced: dict[str, list[str]] = {}
        for part, fid in groups:
            replaced.setdefault(part, []).append(fid)
        return self._commit(inst.REPLACE_COMMIT, files, operation="CLUSTER", replaced=replaced, pending=pending)

    def schedule_clustering(self, groups: Sequence[tuple[str, str]]) -> str:
        """A pending ``clustering.requested`` plan over the latest slices of ``groups`` (not executed)."""
        slices = {s.file_group: s for s in HudiTable(self.base).file_slices()}
        plan = {"inputGroups": [{"slices": [{"dataFilePath": slices[g].base_file_path, "deltaFilePaths": [],
                                             "fileId": g[1], "partitionPath": g[0], "bootstrapFilePath": None,
                                             "version": 1} for g in groups],
                                 "metrics": {}, "numOutputFileGroups": 1, "extraMetadata": None, "version": 1}],
                "strategy": {"strategyClassName": "x", "strategyParams": {}, "version": 1},
                "extraMetadata": {}, "version": 1, "preserveHoodieMetadata": True,
                "missingSchedulePartitions": []}
        with TableLock(self.base):
            props = load_properties(self.base / ".hoodie")
            t = new_instant_time(latest_time_with_metadata(self.base, props))
            atomic_write(timeline_dir(self.base, props) / instant_file_name(t, inst.CLUSTERING, State.REQUESTED),
                         requested_replace_bytes(clustering_plan_metadata(plan)))
        return t

    def execute_clustering(self, instant_time: str, groups: Sequence[tuple[str, str]]) -> Written:
        pending = resume_clustering(self.base, instant_time, hooks=COMMIT_HOOKS)
        return self.replace(groups, pending=pending)

    # ------------------------------------------------------------------ reads

    def live_groups(self) -> list[tuple[str, str]]:
        return [s.file_group for s in HudiTable(self.base).file_slices()]

    def rows(self, as_of: str | None = None) -> dict[str, int]:
        """``{key: v}`` of the snapshot (as of ``as_of``); asserts every key appears once."""
        out: dict[str, int] = {}
        n = 0
        for s in HudiTable(self.base).file_slices(as_of=as_of):
            t = pq.read_table(s.base_file_path, columns=["id", "v"])
            n += t.num_rows
            out.update(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))
        assert n == len(out), f"{n - len(out)} duplicate key(s)"
        return out

    def data_files(self) -> set[str]:
        """Partition-relative paths of every base file on storage."""
        out = set()
        for p in self.base.rglob("*.parquet"):
            rel = p.relative_to(self.base)
            if rel.parts[0].startswith("."):
                continue
            out.add(str(rel))
        return out

    def timeline_names(self) -> list[str]:
        return sorted(p.name for p in timeline_dir(self.base, load_properties(self.base / ".hoodie")).iterdir()
                      if p.is_file())
