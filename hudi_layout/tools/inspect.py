"""``hudi-layout inspect``: a table's properties, timeline, file groups, pending clustering / compaction, MDT."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hudi_layout import options as cfg
from hudi_layout.errors import HudiLayoutError
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.metadata.mdt_timeline import require_mdt_writable
from hudi_layout.table.commit_protocol import refuse_pending_restore
from hudi_layout.table.hudi_table import HudiTable


def _change_blockers(table: HudiTable) -> list[dict[str, str | None]]:
    """The table-wide states that make every change refuse (the same checks the operations run first), so
    ``inspect`` says why before a write fails."""
    checks = [lambda: refuse_pending_restore(table.base_path, table.properties)]
    if table.has_metadata_table:
        checks.append(lambda: require_mdt_writable(table.base_path, table.properties))
    out: list[dict[str, str | None]] = []
    for check in checks:
        try:
            check()
        except HudiLayoutError as e:
            out.append({"error": str(e), "hint": e.hint})
    return out


def inspect_table(path: str, *, max_instants: int = 30) -> dict[str, Any]:
    table = HudiTable(path)
    props = table.properties
    slices = table.file_slices()
    per_partition = Counter(s.partition_path for s in slices)
    pending = [{"instant": i.requested_time, "state": i.state.value,
                "file_groups": sum(len(g.get("slices") or []) for g in (plan.get("inputGroups") or []))}
               for i, plan in table.timeline.pending_clustering()]
    compacting = [{"instant": t, "file_groups": None if groups is None else len(groups)}
                  for t, groups in sorted(table.timeline.pending_compactions().items())]
    instants = [{"requested": i.requested_time, "action": i.action, "state": i.state.value,
                 "completed": i.completion_time} for i in table.timeline.instants][-max_instants:]
    mdt: dict[str, Any] = {"exists": table.has_metadata_table, "partitions": props.metadata_partitions}
    if table.has_metadata_table and "column_stats" in props.metadata_partitions:
        try:
            mdt["indexed_columns"] = ColumnStatsIndex(str(table.base_path)).indexed_columns()
        except Exception as e:  # informational: inspect reports a damaged index instead of failing
            mdt["indexed_columns_error"] = str(e)
    conf = cfg.default_conf_path()
    return {
        "path": str(table.base_path),
        "table_name": props.table_name,
        "table_type": props.table_type,
        "table_version": props.version,
        "record_key_fields": props.record_key_fields,
        "partition_fields": props.partition_fields,
        "hive_style_partitioning": props.hive_style_partitioning,
        "partitions": len(per_partition),
        "file_groups": len(slices),
        "total_bytes": sum(s.total_size_bytes for s in slices),
        "log_files": sum(len(s.log_file_names) for s in slices),
        "file_groups_per_partition": dict(sorted(per_partition.items())[:50]),
        "pending_clustering": pending,
        "pending_compaction": compacting,
        "timeline": instants,
        "metadata_table": mdt,
        "changes_refused": _change_blockers(table),
        "defaults_file": str(conf) if conf else None,
        "defaults_file_candidates": [str(p) for p in cfg.defaults_file_candidates()],
    }


def render(info: dict[str, Any]) -> str:
    lines = [
        f"table        {info['table_name']} ({info['table_type']}, version {info['table_version']})",
        f"path         {info['path']}",
        f"record key   {', '.join(info['record_key_fields'])}",
        f"partitions   {', '.join(info['partition_fields']) or '(none)'}"
        f"{' hive-style' if info['hive_style_partitioning'] else ''}: {info['partitions']}",
        f"file groups  {info['file_groups']} ({info['total_bytes'] / 1e6:.1f} MB"
        f"{', ' + str(info['log_files']) + ' log files' if info.get('log_files') else ''})",
        f"metadata     {'yes' if info['metadata_table']['exists'] else 'no'}: "
        f"{', '.join(info['metadata_table']['partitions']) or '(no partitions)'}",
    ]
    lines.append(f"defaults     {info['defaults_file'] or '(no defaults file found)'}")
    cols = info["metadata_table"].get("indexed_columns")
    if cols:
        lines.append(f"indexed      {', '.join(cols)}")
    unreadable = info["metadata_table"].get("indexed_columns_error")
    if unreadable:
        lines.append(f"index        unreadable: {unreadable}")
    if info["pending_clustering"]:
        lines.append("pending clustering:")
        lines += [f"  {p['instant']} ({p['state']}, {p['file_groups']} file groups)"
                  for p in info["pending_clustering"]]
    if info.get("pending_compaction"):
        lines.append("pending compaction (hudi-layout compact executes it):")
        for p in info["pending_compaction"]:
            what = "unreadable plan" if p["file_groups"] is None else f"{p['file_groups']} file groups"
            lines.append(f"  {p['instant']} ({what})")
    for blocker in info.get("changes_refused", ()):
        lines.append(f"CHANGES REFUSED: {blocker['error']}")
        if blocker["hint"]:
            lines.append(f"  hint: {blocker['hint']}")
    lines.append("timeline (latest last):")
    lines += [f"  {i['requested']} {i['action']:<14} {i['state']:<10} {i['completed'] or ''}" for i in info["timeline"]]
    return "\n".join(lines)
