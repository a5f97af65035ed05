"""``HudiTable``: one Hudi table on local storage, read side (properties, timeline, file slices, schema)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hudi_layout.format.instant import REPLACE_COMMIT, WRITE_ACTIONS
from hudi_layout.format.meta_fields import META_COLUMNS
from hudi_layout.format.properties import TableProperties, load_properties, require_table_config, table_config_exists
from hudi_layout.table import cache as table_cache
from hudi_layout.table.fs_view import FileSlice, FileSystemView, list_partitions
from hudi_layout.table.paths import table_dir
from hudi_layout.table.timeline import Timeline


class HudiTable:
    """A Hudi table at ``path`` (a local directory or ``file:`` URI).

    ``properties`` and ``timeline`` are snapshots taken at construction; call :meth:`reload` after writes.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        base = table_dir(path)
        if not base.is_dir():
            require_table_config(base / ".hoodie")  # says why: no folder, a file, a dangling link
        self.base_path = base
        self.hoodie_dir = base / ".hoodie"
        self.properties: TableProperties = load_properties(self.hoodie_dir)
        self.timeline: Timeline = self._load_timeline()

    def _load_timeline(self) -> Timeline:
        props = self.properties
        return Timeline.of_table(self.hoodie_dir, props)

    def reload(self) -> HudiTable:
        """Re-read ``hoodie.properties`` and the timeline (returns self)."""
        self.properties = load_properties(self.hoodie_dir)
        self.timeline = self._load_timeline()
        return self

    def __repr__(self) -> str:
        return f"HudiTable({str(self.base_path)!r}, v{self.properties.version}, {self.properties.table_type})"

    # ---------------------------------------------------------------- basic facts

    @property
    def name(self) -> str:
        return self.properties.table_name

    @property
    def table_version(self) -> int:
        return self.properties.version

    @property
    def is_mor(self) -> bool:
        return self.properties.is_mor

    @property
    def is_partitioned(self) -> bool:
        return self.properties.is_partitioned

    @property
    def metadata_table_path(self) -> Path:
        return self.hoodie_dir / "metadata"

    @property
    def has_metadata_table(self) -> bool:
        return table_config_exists(self.metadata_table_path / ".hoodie")

    # ---------------------------------------------------------------- files

    @property
    def fs_view(self) -> FileSystemView:
        return FileSystemView(self.base_path, self.timeline, self.properties.base_file_extension)

    def partitions(self) -> list[str]:
        """Partition paths found on storage (``[""]`` for a non-partitioned table with data)."""
        return list_partitions(self.base_path)

    def file_slices(self, as_of: str | None = None, partitions: list[str] | None = None, *,
                    completed_by: str | None = None) -> list[FileSlice]:
        """Latest committed, non-replaced file slices (sorted by partition, fileId); ``as_of`` a requested time
        (time travel), ``completed_by`` a completion time (see :class:`~hudi_layout.table.fs_view.FileSystemView`)."""
        return self.fs_view.file_slices(as_of, partitions, completed_by=completed_by)

    def timeline_key(self) -> tuple[Any, ...]:
        """The state this snapshot's schema and file view derive from: the instant file names of the timeline
        and the properties (see :mod:`hudi_layout.table.cache`)."""
        return (str(self.timeline.timeline_dir), frozenset(f.file_name for f in self.timeline.files),
                frozenset(self.properties.items()))

    def latest_file_slices(self) -> list[FileSlice]:
        """``file_slices()`` of the whole table through the validated in-process cache (the read path).

        The key is :meth:`timeline_key` plus the mtime of every partition directory, listed now."""
        parts = self.partitions()
        key = (self.timeline_key(), table_cache.partition_dir_mtimes(self.base_path, parts))
        slices = table_cache.table_value(self.base_path, "file_slices", key,
                                         lambda: self.fs_view.file_slices(None, parts))
        return list(slices)

    def pending_clustering_file_groups(self) -> set[tuple[str, str]]:
        """``{(partition, fileId)}`` that are inputs of a pending clustering plan."""
        return self.fs_view.pending_clustering_file_groups()

    # ---------------------------------------------------------------- schema

    def schema(self, as_of: str | None = None) -> str | None:
        """Latest table Avro schema JSON (no meta fields): ``extraMetadata.schema`` of the completed commit that
        completed last, falling back to ``hoodie.table.create.schema``; ``None`` if neither exists.

        "Last" is by completion time (v8/v9; the requested time where a name has none): a writer settles its
        commit's schema under the table lock against the schema it finds then, so the commit that completed
        last carries every evolution before it, even when it was requested earlier.

        ``as_of`` (time travel): the schema as of that instant, as Hudi's Spark reads take it
        (``TableSchemaResolver.getTableAvroSchema(timestamp)``): only commits requested at or before it count,
        so a travel to before a schema change reads the columns and types of then (to before the first commit:
        the latest, as there, where no instant by then means "the latest")."""
        done = self.timeline.completed().commits_and_replaces().instants
        if as_of is not None and not any(i.requested_time <= as_of for i in done):
            as_of = None
        for inst in sorted(done, key=lambda i: (i.completion_time or i.requested_time, i.requested_time),
                           reverse=True):
            if inst.action not in WRITE_ACTIONS or (as_of is not None and inst.requested_time > as_of):
                continue
            md = self.timeline.read_commit_metadata_shared(inst)
            schema = (md.get("extraMetadata") or {}).get("schema")
            if schema:
                return schema
        return self.properties.create_schema

    def cached_schema(self, as_of: str | None = None) -> str | None:
        """:meth:`schema` through the validated in-process cache (keyed by :meth:`timeline_key`)."""
        if as_of is None:
            return table_cache.table_value(self.base_path, "schema", self.timeline_key(), self.schema)
        return table_cache.table_value(self.base_path, f"schema as of {as_of}", self.timeline_key(),
                                       lambda: self.schema(as_of))

    def schema_dict(self) -> dict[str, Any] | None:
        s = self.schema()
        return json.loads(s) if s else None

    def data_columns(self) -> list[str]:
        """Top-level column names of :meth:`schema` other than the meta fields (``[]`` for a table without
        schema)."""
        sd = self.schema_dict()
        if not sd:
            return []
        # only the five meta fields: ``_hoodie_is_deleted`` is a column of the user's schema (the delete marker)
        return [f["name"] for f in sd.get("fields", []) if f["name"] not in META_COLUMNS]

    def completed_replacecommits(self) -> list[str]:
        return [i.requested_time for i in self.timeline.completed().actions(REPLACE_COMMIT)]
