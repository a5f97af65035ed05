"""Build small Merge-on-Read tables by hand (no Spark, no JVM) for tests of the MOR read path.

    t = make_mor_table(tmp_path / "t")                       # v9, EVENT_TIME_ORDERING on "ts", key "id"
    c1 = t.deltacommit(inserts={"": [row("a", 1), row("b", 1)]})          # one new file group (base file)
    fid = c1.file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 2, name="a2")]), Deletes(["b"])]})   # one log file
    t.read_ours(), t.read_hudi_rs()                           # merged by hudi_layout / by hudi-rs

Everything a real writer leaves is there: ``hoodie.properties`` of a MERGE_ON_READ table (v6, v8 or v9),
``.hoodie_partition_metadata``, base parquet files with the five meta columns, log files whose blocks carry
``INSTANT_TIME`` / ``SCHEMA`` headers, and ``requested`` / ``inflight`` / completed ``deltacommit`` timeline
files with write stats listing the log files and ``extraMetadata.schema``. Version 6 tables append the blocks
of later deltacommits to the slice's log file (named after the base instant) and roll back with command
blocks; versions 8/9 write one log file per deltacommit (named after it) and roll back by deleting files.
Instant times come from a private clock (one second apart) so tests can place them exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_layout.format.commit_metadata import WriteStat, commit_metadata_bytes, rollback_metadata_bytes
from hudi_layout.format.compaction_plan import compaction_plan_bytes
from hudi_layout.format.file_naming import make_base_file_name, partition_depth
from hudi_layout.format.instant import State, instant_file_name
from hudi_layout.format.log_blocks import (
    NATURAL_ORDER,
    OrderingValue,
    arrow_schema_for_avro,
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
    encode_rollback_block,
)
from hudi_layout.format.log_format import HeaderKey
from hudi_layout.format.meta_fields import META_COLUMNS
from hudi_layout.format.properties import write_properties
from hudi_layout.scan.merge import InstantRange, merge_file_slice, merge_spec_for_table
from hudi_layout.table.create import create_table_layout, table_properties_for
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.partition_metadata import write_partition_metadata

KEY = "id"
DEFAULT_FIELDS: tuple[tuple[str, Any], ...] = (
    ("id", "string"), ("ts", "long"), ("name", "string"), ("amount", "double"))


def row(key: str, ts: int | None, **values: Any) -> dict[str, Any]:
    """A data row with defaults for the default schema: ``name`` = ``key``, ``amount`` = ``ts``."""
    out: dict[str, Any] = {"id": key, "ts": ts, "name": key, "amount": None if ts is None else float(ts)}
    out.update(values)
    return out


# ---------------------------------------------------------------------------------------------- block specs


#: rows of a block or base file: dicts, or an Arrow table of data columns (the fast path for big tables)
Rows = Sequence[Mapping[str, Any]] | pa.Table


@dataclass(frozen=True)
class Upserts:
    """A data block: ``fmt`` ``"avro"`` (AVRO_DATA) or ``"parquet"`` (PARQUET_DATA)."""

    rows: Rows
    fmt: str = "avro"


@dataclass(frozen=True)
class Deletes:
    """A DELETE block; ``orderings`` ``None`` = Java's default (``IntWrapper(0)``, natural order)."""

    keys: Sequence[str]
    orderings: Sequence[OrderingValue | None] | None = None


@dataclass(frozen=True)
class Rollback:
    """A rollback COMMAND block voiding ``target``'s blocks."""

    target: str


@dataclass(frozen=True)
class Raw:
    """Bytes appended as they are (a corrupt or truncated block)."""

    data: bytes


BlockSpec = Upserts | Deletes | Rollback | Raw


@dataclass(frozen=True)
class Commit:
    instant: str
    completion: str | None
    #: file ids of the file groups created by ``inserts``, in order
    file_ids: tuple[str, ...] = ()
    #: table-relative paths of the log files written (or appended to)
    log_paths: tuple[str, ...] = ()


def _fmt(dt: datetime) -> str:
    return dt.strftime("%Y%m%d%H%M%S") + f"{dt.microsecond // 1000:03d}"


@dataclass
class MorTable:
    base: Path
    version: int
    name: str
    fields: tuple[tuple[str, Any], ...]
    partition_field: str | None
    _clock: datetime = field(default_factory=lambda: datetime(2025, 1, 1))
    _counter: int = 0
    #: (partition, file id) -> base instant of the latest slice (v6: the instant new log files are named after)
    slices: dict[tuple[str, str], str] = field(default_factory=dict)
    #: file id -> name of its latest base file ("" for a log-only file group)
    base_files: dict[str, str] = field(default_factory=dict)
    #: file id -> partition
    partitions: dict[str, str] = field(default_factory=dict)
    #: instant -> table-relative log files it wrote or appended to
    written_logs: dict[str, list[str]] = field(default_factory=dict)
    #: write stats of deltacommits left inflight, used when they complete
    _pending_stats: dict[str, dict[str, list[WriteStat]]] = field(default_factory=dict)
    #: keep a metadata table with ``files`` + ``column_stats`` of base *and* log files (v8/v9), as Hudi does
    column_stats: bool = False
    #: per instant: column stats of the files it wrote, for its MDT deltacommit
    _file_stats: dict[str, list[Any]] = field(default_factory=dict)

    # ------------------------------------------------------------------ schema

    @property
    def avro_schema(self) -> dict[str, Any]:
        return {"type": "record", "name": f"{self.name}_record", "namespace": f"hoodie.{self.name}",
                "fields": [{"name": n, "type": ["null", t], "default": None} for n, t in self.fields]}

    @property
    def schema_text(self) -> str:
        """Data schema (no meta fields): ``hoodie.table.create.schema`` and commit ``extraMetadata.schema``."""
        return json.dumps(self.avro_schema, separators=(",", ":"))

    def block_schema_text(self, fields: Sequence[tuple[str, Any]] | None = None) -> str:
        """Writer schema of log blocks: meta fields first (as Hudi writes them), then ``fields``."""
        doc = self.avro_schema
        cols = fields if fields is not None else self.fields
        doc["fields"] = [{"name": c, "type": ["null", "string"], "default": None} for c in META_COLUMNS] + \
            [{"name": n, "type": ["null", t], "default": None} for n, t in cols]
        return json.dumps(doc, separators=(",", ":"))

    @property
    def data_columns(self) -> list[str]:
        return [n for n, _ in self.fields]

    @property
    def timeline(self) -> Path:
        return self.base / ".hoodie" / ("timeline" if self.version >= 8 else "")

    # ------------------------------------------------------------------ clock

    def next_instant(self) -> str:
        self._clock += timedelta(seconds=1)
        return _fmt(self._clock)

    def later(self, instant: str, ms: int = 500) -> str:
        dt = datetime.strptime(instant[:14], "%Y%m%d%H%M%S") + timedelta(milliseconds=int(instant[14:17]) + ms)
        return _fmt(dt)

    # ------------------------------------------------------------------ files

    def _meta_rows(self, rows: Sequence[Mapping[str, Any]], instant: str, partition: str,
                   file_name: str) -> list[dict[str, Any]]:
        self._counter += 1
        out = []
        for i, r in enumerate(rows):
            meta = {"_hoodie_commit_time": instant, "_hoodie_commit_seqno": f"{instant}_{self._counter}_{i}",
                    "_hoodie_record_key": str(r[KEY]), "_hoodie_partition_path": partition,
                    "_hoodie_file_name": file_name}
            out.append({**meta, **r})
        return out

    def _data_table(self, rows: Rows) -> pa.Table:
        """``rows`` (dicts or an Arrow table) as an Arrow table of the data schema."""
        schema = arrow_schema_for_avro(self.avro_schema)
        if isinstance(rows, pa.Table):
            return pa.table([rows.column(f.name).cast(f.type) if f.name in rows.column_names
                             else pa.nulls(rows.num_rows, f.type) for f in schema], schema=schema)
        return pa.Table.from_pylist([{f.name: r.get(f.name) for f in schema} for r in rows], schema=schema)

    def _meta_table(self, rows: Rows, instant: str, partition: str, file_name: str) -> pa.Table:
        """The five meta columns (strings) and the data columns, vectorised (the Arrow fast path)."""
        if not isinstance(rows, pa.Table):
            meta_schema = pa.schema([pa.field(c, pa.string()) for c in META_COLUMNS]
                                    + list(arrow_schema_for_avro(self.avro_schema)))
            return pa.Table.from_pylist(self._meta_rows(rows, instant, partition, file_name), schema=meta_schema)
        self._counter += 1
        data = self._data_table(rows)
        n = data.num_rows
        seq = pc.binary_join_element_wise(f"{instant}_{self._counter}",
                                          pc.cast(pa.array(range(n), pa.int64()), pa.string()), "_")
        meta = [pa.array([instant] * n, pa.string()), seq, pc.cast(data.column(KEY), pa.string()),
                pa.array([partition] * n, pa.string()), pa.array([file_name] * n, pa.string())]
        return pa.table(meta + list(data.columns), names=[*META_COLUMNS, *data.column_names])

    def _stats(self, partition: str, file_name: str, rows: Rows | Sequence[Rows]) -> list[Any]:
        """Column stats of the records written to one file (what Hudi's writers put in ``column_stats``; a
        file without records, such as a log holding only deletes, gets empty stats). ``rows``: one batch of
        rows, or a list of batches (Arrow tables or dict rows)."""
        if not self.column_stats:
            return []
        from hudi_layout.metadata.mdt_writer import FileColumnStats

        schema = arrow_schema_for_avro(self.avro_schema)
        if isinstance(rows, pa.Table) or not rows or isinstance(rows[0], Mapping):
            data = self._data_table(rows)  # type: ignore[arg-type]
        else:
            data = pa.concat_tables([self._data_table(r) for r in rows])  # type: ignore[arg-type]
        out = []
        for f in schema:
            arr = data.column(f.name)
            mm = pc.min_max(arr) if len(arr) else None
            lo = mm["min"].as_py() if mm is not None else None
            hi = mm["max"].as_py() if mm is not None else None
            out.append(FileColumnStats(partition, file_name, f.name, lo, hi, arr.null_count, len(arr), f.type))
        return out

    def _partition_dir(self, partition: str, instant: str) -> Path:
        pdir = self.base / partition if partition else self.base
        pdir.mkdir(parents=True, exist_ok=True)
        if not (pdir / ".hoodie_partition_metadata").exists():
            write_partition_metadata(pdir, instant, partition_depth(partition))
        return pdir

    def _write_base(self, partition: str, rows: Rows, instant: str) -> tuple[str, str]:
        fid = f"{len(self.partitions):08d}-0000-0000-0000-000000000000-0"
        name = make_base_file_name(fid, "0-0-0", instant)
        table = self._meta_table(rows, instant, partition, name)
        pq.write_table(table, self._partition_dir(partition, instant) / name)
        self.partitions[fid] = partition
        self.slices[(partition, fid)] = instant
        self.base_files[fid] = name
        return fid, name

    def _new_log_only_group(self, partition: str, instant: str) -> str:
        fid = f"{len(self.partitions):08d}-0000-0000-0000-000000000000-0"
        self._partition_dir(partition, instant)
        self.partitions[fid] = partition
        self.slices[(partition, fid)] = instant
        self.base_files[fid] = ""
        return fid

    def _encode(self, spec: BlockSpec, instant: str, partition: str, fid: str,
                header: Mapping[int, str] | None) -> bytes:
        if isinstance(spec, Upserts):
            schema_text = self.block_schema_text()
            table = self._meta_table(spec.rows, instant, partition, fid)
            if spec.fmt == "parquet":
                return encode_parquet_data_block(instant, schema_text, table, extra_header=header)
            return encode_avro_data_block(instant, schema_text, table.to_pylist(), extra_header=header)
        if isinstance(spec, Deletes):
            orderings = spec.orderings if spec.orderings is not None else [NATURAL_ORDER] * len(spec.keys)
            return encode_delete_block(instant, [(k, partition, o) for k, o in zip(spec.keys, orderings)],
                                       schema_text=self.block_schema_text(), extra_header=header)
        if isinstance(spec, Rollback):
            return encode_rollback_block(instant, spec.target)
        return spec.data

    def log_name(self, fid: str, instant: str) -> str:
        """v6: the slice's log file (named after its base instant); v8/v9: a new file per deltacommit."""
        partition = self.partitions[fid]
        stamp = self.slices[(partition, fid)] if self.version < 8 else instant
        return f".{fid}_{stamp}.log.1_0-0-0"

    def _append_log(self, fid: str, instant: str, blocks: Sequence[BlockSpec],
                    header: Mapping[int, str] | None) -> str:
        partition = self.partitions[fid]
        name = self.log_name(fid, instant)
        payload = b"".join(self._encode(b, instant, partition, fid, header) for b in blocks)
        with open(self._partition_dir(partition, instant) / name, "ab") as fh:
            fh.write(payload)
        return f"{partition}/{name}" if partition else name

    # ------------------------------------------------------------------ timeline

    def _timeline_file(self, instant: str, action: str, state: State, completion: str | None = None) -> Path:
        layout = 2 if self.version >= 8 else 1
        return self.timeline / instant_file_name(instant, action, state, completion, layout_version=layout)

    def deltacommit(self, *, inserts: Mapping[str, Rows] | None = None,
                    logs: Mapping[str, Sequence[BlockSpec]] | None = None, complete: bool = True,
                    instant: str | None = None, completion: str | None = None,
                    block_header: Mapping[int, str] | None = None,
                    log_inserts: Mapping[str, Rows] | None = None,
                    unindexed_logs: bool = False) -> Commit:
        """One deltacommit: ``inserts`` (partition -> rows) become new file groups (base files);
        ``log_inserts`` (partition -> rows) new file groups holding only a log file (as Hudi's writers do with
        indexes that can route inserts to logs); ``logs`` (file id -> blocks) are written to the file groups'
        logs. ``complete=False`` leaves it inflight. With ``column_stats`` on, ``unindexed_logs=True`` leaves
        the log files written here out of the index (base files are still indexed)."""
        t = instant or self.next_instant()
        self._timeline_file(t, "deltacommit", State.REQUESTED).write_bytes(b"")
        self._timeline_file(t, "deltacommit", State.INFLIGHT).write_bytes(b"")
        stats: dict[str, list[WriteStat]] = {}
        new_ids: list[str] = []
        log_paths: list[str] = []
        file_stats: list[Any] = []
        for partition, rows in (inserts or {}).items():
            fid, name = self._write_base(partition, rows, t)
            file_stats += self._stats(partition, name, rows)
            new_ids.append(fid)
            rel = f"{partition}/{name}" if partition else name
            size = (self.base / rel).stat().st_size
            stats.setdefault(partition, []).append(WriteStat(
                file_id=fid, path=rel, partition_path=partition, num_writes=len(rows), file_size_in_bytes=size,
                num_inserts=len(rows)))
        logs = dict(logs or {})
        for partition, rows in (log_inserts or {}).items():
            fid = self._new_log_only_group(partition, t)
            new_ids.append(fid)
            logs[fid] = [Upserts(rows)]
        for fid, blocks in logs.items():
            rel = self._append_log(fid, t, blocks, {HeaderKey(k): v for k, v in (block_header or {}).items()})
            log_paths.append(rel)
            if not unindexed_logs:
                file_stats += self._stats(self.partitions[fid], rel.rsplit("/", 1)[-1],
                                          [b.rows for b in blocks if isinstance(b, Upserts)])
            partition = self.partitions[fid]
            base_instant = self.slices[(partition, fid)]
            size = (self.base / rel).stat().st_size
            stats.setdefault(partition, []).append(WriteStat(
                file_id=fid, path=rel, partition_path=partition, num_writes=sum(
                    len(b.rows) for b in blocks if isinstance(b, Upserts)), file_size_in_bytes=size,
                # Hudi 1.x (v8 / v9) names the deltacommit itself and no base file; 0.x the slice's
                prev_commit=t if self.version >= 8 else base_instant,
                extra={"baseFile": "" if self.version >= 8 else self.base_files[fid],
                       "logFiles": [rel.rsplit("/", 1)[-1]], "logVersion": 1, "logOffset": 0}))
        self.written_logs[t] = log_paths
        self._file_stats[t] = file_stats
        done = None
        if complete:
            done = self.complete(t, stats=stats, completion=completion)
        else:
            self._pending_stats[t] = stats
        return Commit(t, done, tuple(new_ids), tuple(log_paths))

    def complete(self, instant: str, *, stats: Mapping[str, list[WriteStat]] | None = None,
                 completion: str | None = None) -> str | None:
        """Complete a deltacommit (``completion`` time for v8/v9; default 500 ms after it started)."""
        stats = stats if stats is not None else self._pending_stats.pop(instant, {})
        done = (completion or self.later(instant)) if self.version >= 8 else None
        self._write_metadata(instant, stats)
        doc = {"partitionToWriteStats": stats, "operationType": "UPSERT",
               "extraMetadata": {"schema": self.schema_text}}
        self._timeline_file(instant, "deltacommit", State.COMPLETED, done).write_bytes(
            commit_metadata_bytes(doc, self.version))
        return done

    def _write_metadata(self, instant: str, stats: Mapping[str, list[WriteStat]]) -> None:
        """The MDT deltacommit of a data instant (written before the data instant completes, as Hudi does)."""
        if not self.column_stats:
            return
        from hudi_layout.metadata.mdt_writer import MetadataWriter

        files: dict[str, dict[str, int]] = {}
        for partition, sts in stats.items():
            for st in sts:
                files.setdefault(partition, {})[st.path.rsplit("/", 1)[-1]] = st.file_size_in_bytes
        MetadataWriter(self.base).write_deltacommit(instant, files, self._file_stats.pop(instant, []),
                                                    partitions_added=sorted(files))

    def compact(self, fid: str, rows: Sequence[Mapping[str, Any]], *, completion: str | None = None) -> Commit:
        """A compaction of file group ``fid``: a new base file holding ``rows`` (the caller gives the merged
        rows), ``compaction.requested`` (with its plan) / ``.inflight`` and a completed ``commit``."""
        t = self.schedule_compaction([fid])
        return self.finish_compaction(t, {fid: rows}, completion=completion)

    def schedule_compaction(self, fids: Sequence[str]) -> str:
        """Schedule a compaction of ``fids`` (``compaction.requested`` holding a HoodieCompactionPlan) and leave
        it pending. On v6 tables, later log blocks of those file groups go to log files named after it."""
        t = self.next_instant()
        ops = []
        for fid in fids:
            partition = self.partitions[fid]
            pdir = self.base / partition if partition else self.base
            ops.append({"baseInstantTime": self.slices[(partition, fid)],
                        "deltaFilePaths": sorted(p.name for p in pdir.iterdir() if p.name.startswith(f".{fid}_")),
                        "dataFilePath": self.base_files[fid] or None, "fileId": fid, "partitionPath": partition,
                        "metrics": {}, "bootstrapFilePath": None})
        self._timeline_file(t, "compaction", State.REQUESTED).write_bytes(compaction_plan_bytes(ops))
        if self.version < 8:
            for fid in fids:
                self.slices[(self.partitions[fid], fid)] = t
        return t

    def finish_compaction(self, instant: str, rows_by_fid: Mapping[str, Sequence[Mapping[str, Any]]], *,
                          completion: str | None = None) -> Commit:
        """Complete compaction ``instant``: one new base file per file group (``rows_by_fid``: the merged rows;
        a row's ``_hoodie_commit_time`` may be given, else the compaction instant)."""
        t = instant
        self._timeline_file(t, "compaction", State.INFLIGHT).write_bytes(b"")
        stats: dict[str, list[WriteStat]] = {}
        data_schema = arrow_schema_for_avro(self.avro_schema)
        schema = pa.schema([pa.field(c, pa.string()) for c in META_COLUMNS] + list(data_schema))
        for fid, rows in rows_by_fid.items():
            partition = self.partitions[fid]
            name = make_base_file_name(fid, "0-0-0", t)
            metas = self._meta_rows(rows, t, partition, name)
            for m, r in zip(metas, rows):  # a compaction keeps each record's commit time
                m["_hoodie_commit_time"] = r.get("_hoodie_commit_time", t)
            pq.write_table(pa.Table.from_pylist(metas, schema=schema), self._partition_dir(partition, t) / name)
            self._file_stats.setdefault(t, []).extend(self._stats(partition, name, rows))
            if self.slices[(partition, fid)] < t:
                self.slices[(partition, fid)] = t
            self.base_files[fid] = name
            rel = f"{partition}/{name}" if partition else name
            stats.setdefault(partition, []).append(WriteStat(
                file_id=fid, path=rel, partition_path=partition, num_writes=len(rows),
                file_size_in_bytes=(self.base / rel).stat().st_size, prev_commit=t))
        done = (completion or self.later(t)) if self.version >= 8 else None
        doc = {"partitionToWriteStats": stats, "operationType": "COMPACT", "compacted": True,
               "extraMetadata": {"schema": self.schema_text}}
        self._write_metadata(t, stats)
        self._timeline_file(t, "commit", State.COMPLETED, done).write_bytes(commit_metadata_bytes(doc, self.version))
        return Commit(t, done)

    def rollback(self, target: str) -> str:
        """Roll back a pending deltacommit as Hudi does: v6 appends a rollback command block to every log the
        instant wrote to; v8/v9 delete its log files. Then the rollback instant completes."""
        t = self.next_instant()
        paths = self.written_logs.get(target, [])
        for rel in paths:
            path = self.base / rel
            if self.version < 8:
                with open(path, "ab") as fh:
                    fh.write(encode_rollback_block(t, target))
            elif path.exists():
                path.unlink()
        for f in self.timeline.iterdir():
            if f.name.startswith(f"{target}.") and f.is_file():
                f.unlink()
        meta = {"startRollbackTime": t, "timeTakenInMillis": 1, "totalFilesDeleted": len(paths),
                "commitsRollback": [target], "partitionMetadata": {}, "version": 1,
                "instantsRollback": [{"commitTime": target, "action": "deltacommit"}]}
        done = self.later(t) if self.version >= 8 else None
        self._timeline_file(t, "rollback", State.COMPLETED, done).write_bytes(rollback_metadata_bytes(meta))
        return t

    # ------------------------------------------------------------------ reading

    def hudi_table(self) -> HudiTable:
        return HudiTable(self.base)

    def read_ours(self, *, as_of: str | None = None, instant_range: InstantRange | None = None,
                  columns: Sequence[str] | None = None) -> pa.Table:
        """Every latest file slice merged by :func:`merge_file_slice`, concatenated."""
        table = self.hudi_table()
        spec = merge_spec_for_table(table, as_of=as_of, instant_range=instant_range, columns=columns)
        parts = []
        for s in table.file_slices(as_of=as_of):
            parts.append(merge_file_slice(s.base_file_path, s.log_file_paths(table.base_path), spec=spec))
        return pa.concat_tables(parts) if parts else spec.output_schema.empty_table()

    def read_hudi_rs(self, *, as_of: str | None = None) -> pa.Table:
        import hudi

        table = hudi.HudiTableBuilder.from_base_uri(str(self.base)).build()
        options = hudi.HudiReadOptions().with_as_of_timestamp(as_of) if as_of else None
        batches = table.read(options)
        return pa.Table.from_batches(batches) if batches else pa.table({})


def make_mor_table(base: Path, *, version: int = 9, name: str = "mor",
                   fields: Sequence[tuple[str, Any]] = DEFAULT_FIELDS, partition_field: str | None = None,
                   merge_mode: str | None = "EVENT_TIME_ORDERING", ordering_fields: str | None = "ts",
                   payload_class: str | None = None, extra_props: Mapping[str, str] | None = None,
                   column_stats: bool = False) -> MorTable:
    """An empty MERGE_ON_READ table of ``version`` (6, 8 or 9) with key ``id``.

    ``merge_mode`` / ``ordering_fields`` go to ``hoodie.record.merge.mode`` and ``hoodie.table.ordering.fields``
    (v8: ``hoodie.table.precombine.field``); v6 tables take ``payload_class`` and the precombine field.
    ``None`` leaves a property unset. ``column_stats`` (v8/v9) creates a metadata table whose ``column_stats``
    index covers base and log files, kept by every deltacommit and compaction.
    """
    t = MorTable(base, version, name, tuple(fields), partition_field, column_stats=column_stats)
    arrow = arrow_schema_for_avro(t.avro_schema)
    props = table_properties_for(table_name=name, schema=arrow, record_key_fields=[KEY],
                                 partition_fields=[partition_field] if partition_field else [],
                                 hive_style=True, table_version=9 if version == 6 else version)
    props["hoodie.table.type"] = "MERGE_ON_READ"
    props["hoodie.table.create.schema"] = t.schema_text
    props["hoodie.table.timeline.timezone"] = "UTC"
    props.pop("hoodie.record.merge.mode", None)
    if version >= 8:
        if merge_mode is not None:
            props["hoodie.record.merge.mode"] = merge_mode
        if ordering_fields is not None:
            props["hoodie.table.ordering.fields" if version >= 9 else "hoodie.table.precombine.field"] = \
                ordering_fields
    else:
        for k in ("hoodie.timeline.path", "hoodie.timeline.history.path", "hoodie.table.format",
                  "hoodie.table.initial.version", "hoodie.table.keygenerator.type"):
            props.pop(k, None)
        props.update({"hoodie.table.version": "6", "hoodie.timeline.layout.version": "1",
                      "hoodie.archivelog.folder": "archived",
                      "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator"
                      if partition_field else "org.apache.hudi.keygen.NonpartitionedKeyGenerator"})
        if ordering_fields is not None:
            props["hoodie.table.precombine.field"] = ordering_fields
        if payload_class is not None:
            props["hoodie.compaction.payload.class"] = payload_class
    props.update(extra_props or {})
    create_table_layout(base, props)
    if version == 6:
        write_properties(base / ".hoodie" / "hoodie.properties", props)
    if column_stats:
        from hudi_layout.metadata.mdt_writer import MetadataWriter, update_data_table_properties

        assert version >= 8, "the metadata table is only written for v8/v9 tables"
        update_data_table_properties(base, MetadataWriter(base).initialize())
    return t
