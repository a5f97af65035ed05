"""Shared helpers for the integration tests (Spark + hudi-rs end to end).

* :func:`rows_digest` — order-independent digest of the data rows of an Arrow table (same rules as
  ``shared/tools/rows_digest.py``: drop ``_hoodie*`` columns, ``str(value)`` per cell, sort the JSON rows,
  sha256 prefix).
* :func:`hudi_rs_read` / :func:`hudi_rs_slices` — what the independent reader (hudi-rs) sees.
* :func:`our_slices` — the same through our file-system view.
* :func:`tree_snapshot` — a comparable snapshot of a directory tree (paths, sizes, mtimes, content hashes).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa


def rows_digest(table: pa.Table) -> str | None:
    """Digest of the non-meta columns of ``table``; ``None`` for an empty table."""
    if table.num_rows == 0:
        return None
    names = [n for n in table.column_names if not n.startswith("_hoodie")]
    values = {n: table.column(n).to_pylist() for n in names}
    lines = sorted(json.dumps([str(values[n][i]) for n in names]) for i in range(table.num_rows))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def data_only(table: pa.Table) -> pa.Table:
    return table.select([n for n in table.column_names if not n.startswith("_hoodie")])


def hudi_rs_table(path: str | os.PathLike[str]) -> Any:
    import hudi

    return hudi.HudiTableBuilder.from_base_uri(str(path)).build()


def hudi_rs_read(path: str | os.PathLike[str]) -> pa.Table:
    """Snapshot read by hudi-rs, as one Arrow table (meta columns included)."""
    table = hudi_rs_table(path)
    batches = table.read()
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches)


def hudi_rs_slices(path: str | os.PathLike[str]) -> set[str]:
    """``partition/base_file_name`` of every latest file slice hudi-rs sees (``name`` when non-partitioned)."""
    out = set()
    for fs in hudi_rs_table(path).get_file_slices():
        part = fs.partition_path or ""
        out.add(f"{part}/{fs.base_file_name}" if part else fs.base_file_name)
    return out


def our_slices(path: str | os.PathLike[str]) -> set[str]:
    from hudi_layout import HudiTable

    return {s.relative_path for s in HudiTable(str(path)).file_slices()}


def tree_snapshot(root: str | os.PathLike[str]) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``root``: directories as ``("dir",)``, files as (size, mtime_ns, sha256)."""
    root = Path(root)
    snap: dict[str, tuple[Any, ...]] = {}
    if not root.exists():
        return snap
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        for d in dirnames:
            snap[os.path.join(rel_dir, d)] = ("dir",)
        for f in filenames:
            p = os.path.join(dirpath, f)
            st = os.stat(p)
            with open(p, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            snap[os.path.join(rel_dir, f)] = (st.st_size, st.st_mtime_ns, digest)
    return snap


def diff_snapshots(before: dict[str, tuple[Any, ...]], after: dict[str, tuple[Any, ...]]) -> list[str]:
    out = []
    for k in sorted(set(before) | set(after)):
        if k not in after:
            out.append(f"removed {k}")
        elif k not in before:
            out.append(f"added {k}")
        elif before[k] != after[k]:
            out.append(f"changed {k}")
    return out


def timeline_files(path: str | os.PathLike[str]) -> list[str]:
    """Instant file names of the data table's active timeline (v8+: ``.hoodie/timeline``)."""
    hoodie = Path(path) / ".hoodie"
    tdir = hoodie / "timeline" if (hoodie / "timeline").is_dir() else hoodie
    return sorted(e.name for e in tdir.iterdir() if e.is_file() and e.name[:1].isdigit())


def base_files_on_disk(path: str | os.PathLike[str]) -> set[str]:
    """Relative paths of every ``*.parquet`` outside hidden folders."""
    base = Path(path)
    out = set()
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for f in filenames:
            if f.endswith(".parquet"):
                out.add(os.path.relpath(os.path.join(dirpath, f), base).replace(os.sep, "/"))
    return out
