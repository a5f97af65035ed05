"""Hudi's internal schema ("schema on read", docs/schema-evolution.md): column ids, and the names they had.

A Hudi writer with ``hoodie.schema.on.read.enable=true`` (Spark SQL's ``ALTER TABLE ... RENAME COLUMN`` /
``DROP COLUMN`` on a Hudi table need it) gives every column an id and keeps every version of the schema in
``.hoodie/.schema/<instant>.schemacommit`` (one JSON document, ``{"schemas": [...]}``, each version holding
``max_column_id``, ``version-id`` and the record's fields with ``id`` / ``name`` / ``type``; nested records,
arrays (``element-id``) and maps (``key-id`` / ``value-id``) carry ids too). Hudi's readers then match a base
file's columns to the query's **by id**: after a rename, files written before it hold the column under its
old name, and Hudi still reads their values; after a drop and an add of the same name, the old values are
*not* the new column's.

hudi_layout reads columns by name. That is exact as long as every id kept one name and every name one id
over the whole history: :func:`name_changes` lists where that fails, and such tables are refused
(:mod:`hudi_layout.format.capabilities`) instead of read with nulls (or stale values) under the new names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: the folder of ``.hoodie`` holding the schema history (Hudi's ``FileBasedInternalSchemaStorageManager``)
SCHEMA_HISTORY_DIR = ".schema"
#: the action name of a schema-history instant; a completed one is ``<instant>.schemacommit``
SCHEMA_COMMIT_ACTION = "schemacommit"


def versions_of(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The schema versions of a history document (``{"schemas": [...]}``) or of one version alone."""
    schemas = document.get("schemas")
    if isinstance(schemas, list):
        return [s for s in schemas if isinstance(s, Mapping)]
    return [document] if "fields" in document else []


def names_by_id(schema: Mapping[str, Any]) -> dict[int, str]:
    """Every id of a version (columns, nested fields, array elements, map keys / values) -> its dotted path."""
    out: dict[int, str] = {}
    _collect(schema, "", out)
    return out


def _collect(node: Any, path: str, out: dict[int, str]) -> None:
    if not isinstance(node, Mapping):
        return  # a primitive type name
    kind = node.get("type")
    if kind == "record" or "fields" in node:
        for f in node.get("fields") or ():
            if isinstance(f, Mapping) and "id" in f and "name" in f:
                name = f"{path}.{f['name']}" if path else str(f["name"])
                out[int(f["id"])] = name
                _collect(f.get("type"), name, out)
    elif kind == "array":
        if "element-id" in node:
            out[int(node["element-id"])] = f"{path}.element"
        _collect(node.get("element"), f"{path}.element", out)
    elif kind == "map":
        for part in ("key", "value"):
            if f"{part}-id" in node:
                out[int(node[f"{part}-id"])] = f"{path}.{part}"
            _collect(node.get(part), f"{path}.{part}", out)


def name_changes(versions: Iterable[Mapping[str, Any]]) -> list[str]:
    """Where reading by name differs from Hudi's reading by id: an id whose name changed (a rename), or a
    name that belonged to different ids (dropped and added again). Empty when names and ids agree."""
    names: dict[int, set[str]] = {}
    ids: dict[str, set[int]] = {}
    for version in versions:
        for i, name in names_by_id(version).items():
            names.setdefault(i, set()).add(name)
            ids.setdefault(name, set()).add(i)
    out = [f"renamed {' / '.join(sorted(n))}" for i, n in sorted(names.items()) if len(n) > 1]
    out += [f"{name!r} dropped and added again" for name, i in sorted(ids.items()) if len(i) > 1]
    return out


def history_files(hoodie_dir: str | os.PathLike[str]) -> list[Path]:
    """The completed schema-history instants of a table (``.hoodie/.schema/*.schemacommit``), oldest first."""
    folder = Path(hoodie_dir) / SCHEMA_HISTORY_DIR
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted((Path(e.path) for e in entries if e.name.endswith(f".{SCHEMA_COMMIT_ACTION}") and e.is_file()),
                  key=lambda p: p.name)


def history_name_changes(hoodie_dir: str | os.PathLike[str]) -> tuple[bool, list[str]]:
    """``(has an internal schema history, its name changes)`` over every completed history file (each holds
    the versions up to its instant; one left by a failed schema change is counted too, erring towards a
    refusal). A file that cannot be parsed counts as a change: what it says is unknown."""
    files = history_files(hoodie_dir)
    versions: list[Mapping[str, Any]] = []
    unreadable: list[str] = []
    for f in files:
        try:
            document = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            unreadable.append(f.name)
            continue
        versions += versions_of(document) if isinstance(document, Mapping) else []
    changes = name_changes(versions)
    changes += [f"schema history {name} cannot be read" for name in unreadable]
    return bool(files), changes
