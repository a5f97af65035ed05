"""The savepoint action's timeline content: ``HoodieSavepointMetadata`` (Avro), docs/savepoints.md.

A savepoint at a completed commit ``T`` is ``T.savepoint.inflight`` (empty) and the completed ``T.savepoint``
(table version 6) or ``T_C.savepoint`` (versions 8 / 9, ``C`` its own completion time). The completed file
lists, per partition path (``""`` for a non-partitioned table), the names of the files of every file slice that
a read as of ``T`` needs: base file and log files. Hudi's cleaner never deletes a listed file (nor the rest of
its slice), so time travel to ``T`` stays possible and Hudi can restore the table to ``T``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hudi_layout.errors import CorruptFileError
from hudi_layout.format.commit_metadata import avro_container_bytes, decode_timeline_content

#: TimelineMetadataUtils.DEFAULT_VERSION, which Hudi writes in every savepoint
SAVEPOINT_METADATA_VERSION = 1


@dataclass(frozen=True)
class SavepointMetadata:
    """What a completed savepoint file says."""

    savepointed_by: str
    #: milliseconds since the epoch (Java's ``System.currentTimeMillis()``)
    savepointed_at_ms: int
    comments: str
    #: partition path -> names of the savepointed files in it
    files: Mapping[str, tuple[str, ...]]

    @property
    def file_count(self) -> int:
        return sum(len(v) for v in self.files.values())

    def file_set(self) -> frozenset[tuple[str, str]]:
        """``(partition path, file name)`` of every savepointed file."""
        return frozenset((p, n) for p, names in self.files.items() for n in names)

    def to_record(self) -> dict[str, Any]:
        return {
            "savepointedBy": self.savepointed_by,
            "savepointedAt": self.savepointed_at_ms,
            "comments": self.comments,
            "partitionMetadata": {p: {"partitionPath": p, "savepointDataFile": list(names)}
                                  for p, names in sorted(self.files.items())},
            "version": SAVEPOINT_METADATA_VERSION,
        }


def savepoint_metadata_bytes(metadata: SavepointMetadata) -> bytes:
    return avro_container_bytes("HoodieSavepointMetadata", metadata.to_record())


def decode_savepoint_metadata(data: bytes, what: str = "savepoint metadata") -> SavepointMetadata:
    """A completed ``.savepoint`` file (Avro; written by Hudi or by us)."""
    rec = decode_timeline_content(data, what)
    parts = rec.get("partitionMetadata")
    if not isinstance(parts, dict):
        raise CorruptFileError(f"{what}: no partitionMetadata map")
    files: dict[str, tuple[str, ...]] = {}
    for key, value in parts.items():
        if not isinstance(value, dict):
            raise CorruptFileError(f"{what}: partition {key!r} is not a record")
        names = value.get("savepointDataFile") or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise CorruptFileError(f"{what}: partition {key!r} lists no file names")
        # the map key and partitionPath agree in Hudi's files; the key is what the cleaner's lookups use
        files[str(key)] = tuple(n.rsplit("/", 1)[-1] for n in names)
    return SavepointMetadata(str(rec.get("savepointedBy") or ""), int(rec.get("savepointedAt") or 0),
                             str(rec.get("comments") or ""), files)


# ------------------------------------------------------------------------------------------------- restore


@dataclass(frozen=True)
class RestorePlan:
    """``R.restore.requested`` (Avro ``HoodieRestorePlan``, version 2): the instants a restore to the savepoint
    ``savepoint_time`` rolls back, newest first, as ``(requested time, action)``."""

    savepoint_time: str
    instants: tuple[tuple[str, str], ...]

    def to_record(self) -> dict[str, Any]:
        return {"instantsToRollback": [{"commitTime": t, "action": a} for t, a in self.instants],
                "version": 2, "savepointToRestoreTimestamp": self.savepoint_time}


def restore_plan_bytes(plan: RestorePlan) -> bytes:
    return avro_container_bytes("HoodieRestorePlan", plan.to_record())


def decode_restore_plan(data: bytes, what: str = "restore plan") -> RestorePlan:
    rec = decode_timeline_content(data, what)
    items = rec.get("instantsToRollback")
    if not isinstance(items, list):
        raise CorruptFileError(f"{what}: no instantsToRollback list")
    try:
        instants = tuple((str(i["commitTime"]), str(i["action"])) for i in items)
    except (KeyError, TypeError) as exc:
        raise CorruptFileError(f"{what}: an instant to roll back lacks its time or action") from exc
    return RestorePlan(str(rec.get("savepointToRestoreTimestamp") or ""), instants)


def restore_metadata_bytes(start_time: str, millis: int, rolled_back: Mapping[tuple[str, str], Mapping[str, Any]]
                           ) -> bytes:
    """The completed ``R.restore`` (Avro ``HoodieRestoreMetadata``): per rolled-back instant ``(time, action)``
    one ``HoodieRollbackMetadata`` record (newest first, as the plan)."""
    return avro_container_bytes("HoodieRestoreMetadata", {
        "startRestoreTime": start_time, "timeTakenInMillis": millis,
        "instantsToRollback": [t for t, _a in rolled_back],
        "hoodieRestoreMetadata": {t: [dict(meta)] for (t, _a), meta in rolled_back.items()},
        "version": 1,
        "restoreInstantInfo": [{"commitTime": t, "action": a} for t, a in rolled_back],
        "extraMetadata": None,
    })
