"""Hudi metadata table (MDT): keys, ``HoodieMetadataRecord`` codec, log blocks, reader, writer, column stats.

Spec: ``docs/hudi-format.md`` §5 (MDT) and §6.8 (prefix lookups).

Public entry points (imported lazily so ``import hudi_layout.metadata.hfile`` stays light):

- :class:`ColumnStatsIndex` — ``load_column(col, partitions=None)`` (typed min/max, for data skipping),
  ``stats_by_column(cols)``, ``load(cols)`` (long form, dense-union min/max), ``indexed_columns()``;
- :class:`MetadataTableReader` — ``files_listing()``, ``all_partitions()``, ``column_stats(prefixes)``;
- :class:`MetadataWriter` — ``initialize()``, ``write_deltacommit()``, ``maybe_compact()`` / ``compact()``,
  ``rollback()``; :func:`check_maintainable`, :func:`rollback_metadata_instant`,
  :func:`update_data_table_properties`, :class:`FileColumnStats`.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "ColumnStatsIndex": "hudi_layout.metadata.column_stats_index",
    "MetadataTableReader": "hudi_layout.metadata.mdt_reader",
    "MetadataWriter": "hudi_layout.metadata.mdt_writer",
    "FileColumnStats": "hudi_layout.metadata.mdt_writer",
    "check_maintainable": "hudi_layout.metadata.mdt_writer",
    "rollback_metadata_instant": "hudi_layout.metadata.mdt_writer",
    "update_data_table_properties": "hudi_layout.metadata.mdt_writer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hudi_layout.metadata' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
