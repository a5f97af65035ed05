"""Hudi on-disk format: properties, instants/timeline, commit metadata, file naming, file-system view.

Import the submodules directly (``from hudi_layout.table.hudi_table import HudiTable``); the names below
are also re-exported lazily so importing this package stays cheap and free of import cycles.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "HudiTable": "hudi_layout.table.hudi_table",
    "FileSlice": "hudi_layout.table.fs_view",
    "FileSystemView": "hudi_layout.table.fs_view",
    "Timeline": "hudi_layout.table.timeline",
    "Instant": "hudi_layout.format.instant",
    "State": "hudi_layout.format.instant",
    "TableProperties": "hudi_layout.format.properties",
    "load_properties": "hudi_layout.format.properties",
    "write_properties": "hudi_layout.format.properties",
    "WriteStat": "hudi_layout.format.commit_metadata",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hudi_layout.table' has no attribute {name!r}")
    return getattr(import_module(module), name)
