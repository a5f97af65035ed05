"""The clean action's timeline content: ``HoodieCleanerPlan`` and ``HoodieCleanMetadata`` (Avro).

docs/hudi-format-live-tables.md §1.1-§1.3. We write what Hudi 1.x writes: plan version 2 with **absolute** paths
in ``filePathsToBeDeletedPerPartition`` (the deprecated ``filesToBeDeletedPerPartition`` as an empty map) and
clean metadata version 2 with **file names** in the three per-partition lists. Reading accepts plan version 1
(file names, lifted to ``<base>/<partition>/<name>`` as Java's V1->V2 migration does).

A plan read from storage names files to delete by absolute path, so :func:`contained_file` is the gate every
path passes before anything is deleted: it must be a data file name directly inside the partition folder it is
listed under, below the table's base path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hudi_layout.errors import CorruptFileError
from hudi_layout.format.commit_metadata import avro_container_bytes, decode_avro_container
from hudi_layout.format.file_naming import try_parse_base_file_name, try_parse_log_file_name

#: CleanPlanner.LATEST_CLEAN_PLAN_VERSION in every Hudi release read (live §1.2)
CLEAN_PLAN_VERSION = 2
#: CleanerUtils.LATEST_CLEAN_METADATA_VERSION (live §1.3)
CLEAN_METADATA_VERSION = 2
#: ``extraMetadata`` key of a clean plan (and of its completed clean) listing, comma-separated, the savepoints the
#: plan honoured; Hudi's incremental cleaner plans every partition again once one of them is gone
SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"


@dataclass(frozen=True)
class CleanerPlan:
    """What a clean will delete (``T.clean.requested``)."""

    policy: str
    #: ``(requested time, action)`` of the earliest commit to retain; ``None`` for KEEP_LATEST_FILE_VERSIONS
    earliest_instant_to_retain: tuple[str, str] | None
    last_completed_commit: str
    #: relative partition path (``""`` when non-partitioned) -> absolute paths of the files to delete
    files_to_delete: Mapping[str, tuple[str, ...]]
    partitions_to_delete: tuple[str, ...] = ()
    extra_metadata: Mapping[str, str] | None = None

    @property
    def file_count(self) -> int:
        return sum(len(v) for v in self.files_to_delete.values())

    def file_names(self) -> dict[str, list[str]]:
        """``{partition: [file name, ...]}`` (what the clean metadata and the MDT record)."""
        return {p: [os.path.basename(f) for f in paths] for p, paths in self.files_to_delete.items()}

    def to_record(self) -> dict[str, Any]:
        ectr = None
        if self.earliest_instant_to_retain is not None:
            t, action = self.earliest_instant_to_retain
            ectr = {"timestamp": t, "action": action, "state": "COMPLETED"}
        return {
            "earliestInstantToRetain": ectr,
            "lastCompletedCommitTimestamp": self.last_completed_commit,
            "policy": self.policy,
            "filesToBeDeletedPerPartition": {},
            "version": CLEAN_PLAN_VERSION,
            "filePathsToBeDeletedPerPartition": {
                p: [{"filePath": f, "isBootstrapBaseFile": False} for f in paths]
                for p, paths in sorted(self.files_to_delete.items())},
            "partitionsToBeDeleted": list(self.partitions_to_delete),
            "extraMetadata": dict(self.extra_metadata) if self.extra_metadata is not None else None,
        }


def cleaner_plan_bytes(plan: CleanerPlan) -> bytes:
    return avro_container_bytes("HoodieCleanerPlan", plan.to_record())


def _strip_scheme(path: str) -> str:
    """Java writes local paths with or without a ``file:`` scheme."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def decode_cleaner_plan(data: bytes, base_path: str | os.PathLike[str], what: str = "clean plan") -> CleanerPlan:
    """A ``T.clean.requested`` file (plan version 1 or 2) as a :class:`CleanerPlan` with absolute paths."""
    rec = decode_avro_container(data, what)
    if not rec:
        raise CorruptFileError(f"{what}: empty clean plan")
    base = Path(base_path)
    files: dict[str, list[str]] = {}
    version = rec.get("version") or 1
    if version >= 2:
        for part, infos in (rec.get("filePathsToBeDeletedPerPartition") or {}).items():
            for info in infos or []:
                if info.get("isBootstrapBaseFile"):
                    raise CorruptFileError(f"{what}: bootstrap base files are not supported ({info.get('filePath')})")
                if info.get("filePath"):
                    files.setdefault(part, []).append(_strip_scheme(info["filePath"]))
    else:  # version 1: names only (CleanPlanV2MigrationHandler builds <base>/<partition>/<name>)
        for part, names in (rec.get("filesToBeDeletedPerPartition") or {}).items():
            pdir = base / part if part else base
            files.setdefault(part, []).extend(str(pdir / n) for n in names or [])
    ectr_rec = rec.get("earliestInstantToRetain")
    ectr = (ectr_rec["timestamp"], ectr_rec["action"]) if ectr_rec else None
    return CleanerPlan(policy=rec.get("policy") or "", earliest_instant_to_retain=ectr,
                       last_completed_commit=rec.get("lastCompletedCommitTimestamp") or "",
                       files_to_delete={p: tuple(v) for p, v in files.items()},
                       partitions_to_delete=tuple(rec.get("partitionsToBeDeleted") or ()),
                       extra_metadata=rec.get("extraMetadata"))


def contained_file(base_path: str | os.PathLike[str], partition: str, path: str) -> Path:
    """``path`` as a :class:`Path` if it is a data file directly inside ``<base>/<partition>``; else raise.

    A plan is data read from storage: a path outside the table, into ``.hoodie``, with ``..`` segments, through
    a symlinked partition folder, or not named like a base or log file is refused (nothing outside the table's
    data files is ever deleted)."""
    base = Path(base_path).resolve()
    part = Path(partition)
    if partition and (part.is_absolute() or any(s in ("", ".", "..") or s.startswith(".") for s in part.parts)):
        raise CorruptFileError(f"clean plan names partition {partition!r}, which is not a partition path")
    part_dir = base.joinpath(*part.parts) if partition else base
    if part_dir.resolve() != part_dir:
        raise CorruptFileError(f"clean plan partition {partition!r} resolves outside the table at {base}")
    p = Path(_strip_scheme(path))
    if not p.is_absolute() or ".." in p.parts or "\x00" in path or p.parent.resolve() != part_dir:
        raise CorruptFileError(f"clean plan names {path!r}, which is not a file of partition {partition!r} "
                               f"of the table at {base}")
    if try_parse_base_file_name(p.name) is None and try_parse_log_file_name(p.name) is None:
        raise CorruptFileError(f"clean plan names {path!r}, which is not a Hudi data file")
    return part_dir / p.name


@dataclass(frozen=True)
class CleanPartitionResult:
    """``HoodieCleanPartitionMetadata``: one partition's planned and actual deletions (file names)."""

    partition: str
    policy: str
    delete_patterns: tuple[str, ...]
    deleted: tuple[str, ...]
    failed: tuple[str, ...] = ()
    is_partition_deleted: bool = False

    def to_record(self) -> dict[str, Any]:
        return {"partitionPath": self.partition, "policy": self.policy,
                "deletePathPatterns": list(self.delete_patterns), "successDeleteFiles": list(self.deleted),
                "failedDeleteFiles": list(self.failed), "isPartitionDeleted": self.is_partition_deleted}


@dataclass(frozen=True)
class CleanMetadata:
    """``HoodieCleanMetadata``: the completed ``T_C.clean``."""

    start_clean_time: str
    time_taken_ms: int
    earliest_commit_to_retain: str
    last_completed_commit: str
    partitions: Mapping[str, CleanPartitionResult] = field(default_factory=dict)
    extra_metadata: Mapping[str, str] | None = None

    @property
    def total_files_deleted(self) -> int:
        return sum(len(p.deleted) for p in self.partitions.values())

    def to_record(self) -> dict[str, Any]:
        return {
            "startCleanTime": self.start_clean_time, "timeTakenInMillis": int(self.time_taken_ms),
            "totalFilesDeleted": self.total_files_deleted, "earliestCommitToRetain": self.earliest_commit_to_retain,
            "lastCompletedCommitTimestamp": self.last_completed_commit,
            "partitionMetadata": {p: r.to_record() for p, r in sorted(self.partitions.items())},
            "version": CLEAN_METADATA_VERSION, "bootstrapPartitionMetadata": {},
            "extraMetadata": dict(self.extra_metadata) if self.extra_metadata is not None else None,
        }


def clean_metadata_bytes(metadata: CleanMetadata) -> bytes:
    return avro_container_bytes("HoodieCleanMetadata", metadata.to_record())


def decode_clean_metadata(data: bytes, what: str = "clean metadata") -> CleanMetadata:
    """A completed ``.clean`` file; version-1 lists (paths) are reduced to file names like Java's migration."""
    rec = decode_avro_container(data, what)
    if not rec:  # an empty clean (Java's incremental cleaner may write one on purpose, live §1.2)
        return CleanMetadata("", 0, "", "")

    def names(values: Any) -> tuple[str, ...]:
        return tuple(os.path.basename(_strip_scheme(v)) for v in values or ())

    parts = {p: CleanPartitionResult(p, r.get("policy") or "", names(r.get("deletePathPatterns")),
                                     names(r.get("successDeleteFiles")), names(r.get("failedDeleteFiles")),
                                     bool(r.get("isPartitionDeleted")))
             for p, r in (rec.get("partitionMetadata") or {}).items()}
    return CleanMetadata(rec.get("startCleanTime") or "", int(rec.get("timeTakenInMillis") or 0),
                         rec.get("earliestCommitToRetain") or "", rec.get("lastCompletedCommitTimestamp") or "",
                         parts, rec.get("extraMetadata"))
