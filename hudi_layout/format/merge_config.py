"""How two versions of a record merge: a table's merge mode and ordering fields (the one place for that rule).

Read by the Merge-on-Read reader (:mod:`hudi_layout.scan.merge`) and by upserts
(:mod:`hudi_layout.writer.merge`). Rules: docs/hudi-format-live-tables.md §2.2.

* v8/v9: ``hoodie.record.merge.mode`` (unset: event time when an ordering field is set, else commit time);
  ordering fields from ``hoodie.table.ordering.fields``, else ``hoodie.table.precombine.field``.
* v6: the payload class decides (``hoodie.compaction.payload.class``, Hudi 0.x's default
  ``OverwriteWithLatestAvroPayload`` when unset): ``DefaultHoodieRecordPayload`` = event time,
  ``OverwriteWithLatestAvroPayload`` = commit time, as Hudi 1.x infers for version-6 tables.

``CUSTOM`` merge modes, other payload classes, partial updates and custom delete markers are refused.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from hudi_layout.errors import UnsupportedTableError

OVERWRITE_WITH_LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
#: ``hoodie.compaction.record.merger.strategy`` of v6 tables whose merging is left to the payload class
PAYLOAD_BASED_STRATEGY_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
#: ``hoodie.record.merge.strategy.id`` values Hudi 1.x stores with the two built-in modes (v8 tables)
EVENT_TIME_STRATEGY_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY_ID = "ce9acb64-bde0-424c-9b91-f6ebba25356d"

READ_HINT = "read this table with Apache Hudi (Spark/Flink)"


class MergeMode(str, enum.Enum):
    """``hoodie.record.merge.mode`` values we can merge (``CUSTOM`` is refused)."""

    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"

    @classmethod
    def parse(cls, value: str) -> MergeMode:
        raw = value.strip().upper()
        if raw not in cls.__members__:
            raise ValueError(f"expected {' or '.join(cls.__members__)}")
        return cls[raw]


#: the merge mode Hudi 1.x reads a payload class as (``HoodieTableConfig.inferMergingConfigsForV9TableCreation``
#: for a new table, the same rule for version-6 tables): the only two payloads we merge
PAYLOAD_MERGE_MODES = {DEFAULT_PAYLOAD: MergeMode.EVENT_TIME_ORDERING,
                       OVERWRITE_WITH_LATEST_PAYLOAD: MergeMode.COMMIT_TIME_ORDERING}


def payload_merge_mode(payload: str) -> MergeMode:
    """The merge mode of a payload class, by full or simple name; ``ValueError`` for any other payload."""
    name = payload.strip()
    for full, mode in PAYLOAD_MERGE_MODES.items():
        if name in (full, full.rsplit(".", 1)[1]):
            return mode
    raise ValueError(f"payload class {name} is not supported; only DefaultHoodieRecordPayload and "
                     "OverwriteWithLatestAvroPayload can be merged")


def _unsupported(message: str, hint: str | None) -> UnsupportedTableError:
    return UnsupportedTableError(message, hint=hint or READ_HINT)


def merge_config(props: Mapping[str, str], *, hint: str | None = None) -> tuple[MergeMode, tuple[str, ...]]:
    """Merge mode and ordering fields of a table, from ``hoodie.properties``; refuses what we cannot merge
    (the error carries ``hint``, by default: read it with Hudi)."""
    name = props.get("hoodie.table.name", "?")
    version = int(props.get("hoodie.table.version", "0") or 0)
    raw_fields = props.get("hoodie.table.ordering.fields") or props.get("hoodie.table.precombine.field") or ""
    ordering = tuple(f.strip() for f in raw_fields.split(",") if f.strip())
    if (props.get("hoodie.populate.meta.fields") or "true").strip().lower() == "false":
        raise _unsupported(f"table {name}: hoodie.populate.meta.fields=false: records carry no "
                           "_hoodie_record_key, so they cannot be merged by key", hint)
    partial = (props.get("hoodie.table.partial.update.mode") or "NONE").strip().upper()
    if partial != "NONE":
        raise _unsupported(f"table {name}: hoodie.table.partial.update.mode={partial} (partial updates) "
                           "is not supported", hint)
    for key in props:
        low = key.lower()
        if "delete.marker" in low or "delete.field" in low or low.endswith("delete.key"):
            raise _unsupported(f"table {name}: custom delete markers ({key}) are not supported", hint)
    mode: MergeMode
    if version >= 8:
        raw = (props.get("hoodie.record.merge.mode") or "").strip().upper()
        if not raw:
            mode = MergeMode.EVENT_TIME_ORDERING if ordering else MergeMode.COMMIT_TIME_ORDERING
        elif raw in MergeMode.__members__:
            mode = MergeMode[raw]
        else:
            what = props.get("hoodie.record.merge.strategy.id") or props.get("hoodie.table.legacy.payload.class") \
                or props.get("hoodie.compaction.payload.class") or "?"
            raise _unsupported(f"table {name}: hoodie.record.merge.mode={raw} (merger {what}) is not supported; "
                               "only COMMIT_TIME_ORDERING and EVENT_TIME_ORDERING can be merged", hint)
    else:
        payload = (props.get("hoodie.compaction.payload.class") or OVERWRITE_WITH_LATEST_PAYLOAD).strip()
        if payload not in PAYLOAD_MERGE_MODES:
            raise _unsupported(f"table {name}: payload class {payload} is not supported; only "
                               "DefaultHoodieRecordPayload and OverwriteWithLatestAvroPayload can be merged", hint)
        mode = PAYLOAD_MERGE_MODES[payload]
        strategy = (props.get("hoodie.compaction.record.merger.strategy") or PAYLOAD_BASED_STRATEGY_ID).strip()
        if strategy != PAYLOAD_BASED_STRATEGY_ID:
            raise _unsupported(f"table {name}: record merger strategy {strategy} is not supported", hint)
    if mode is MergeMode.EVENT_TIME_ORDERING and not ordering:
        raise _unsupported(f"table {name}: EVENT_TIME_ORDERING without an ordering field",
                           hint="set hoodie.table.ordering.fields in hoodie.properties")
    return mode, ordering


def merge_properties(version: int, mode: MergeMode, ordering: tuple[str, ...]) -> dict[str, str]:
    """The ``hoodie.properties`` entries a new table of ``version`` records for ``mode`` and ``ordering``, as
    Hudi 1.x writes them: v9 stores the mode and ``hoodie.table.ordering.fields``; v8 the mode, the merge
    strategy id, the payload class and ``hoodie.table.precombine.field`` (docs/hudi-format-live-tables.md §2.2)."""
    out = {"hoodie.record.merge.mode": mode.value}
    if version >= 9:
        if ordering:
            out["hoodie.table.ordering.fields"] = ",".join(ordering)
        return out
    event = mode is MergeMode.EVENT_TIME_ORDERING
    out["hoodie.record.merge.strategy.id"] = EVENT_TIME_STRATEGY_ID if event else COMMIT_TIME_STRATEGY_ID
    out["hoodie.compaction.payload.class"] = DEFAULT_PAYLOAD if event else OVERWRITE_WITH_LATEST_PAYLOAD
    if ordering:
        out["hoodie.table.precombine.field"] = ",".join(ordering)
    return out
