"""In-process cache of table state for scan planning, validated on every use.

A pruned read must not pay, on every query, for work whose result only changes when the table changes:
decoding Avro commit metadata, listing and parsing ~1000 base file names, reading the column_stats HFiles.
This module keeps those results per table and re-validates them with a few cheap directory listings on
**every** lookup, so a new commit is never missed.

Why serving from the cache is safe (a stale entry could make data skipping drop a file that now matches):

* **Commit metadata** of a *completed* instant is immutable (Hudi completes an instant with one atomic
  rename and never rewrites the completed file). Entries are keyed by the file's path, size and
  ``st_mtime_ns``, so even a rewritten file (e.g. a restored table) is decoded again.
* **Latest file slices and the table schema** are a function of the timeline and of the base files on
  storage. The key is the set of instant file names in the timeline directory (every commit, clustering,
  rollback, clean, restore and archival adds, renames or removes one), plus ``hoodie.properties``
  (size + mtime) and the modification time of every partition directory (adding or removing a file in a
  directory changes its mtime) -- the last part is belt and braces: files of pending instants are ignored
  by the view anyway.
* **column_stats arrays** are a function of the data timeline (which MDT instants are valid), the MDT
  timeline, both ``hoodie.properties`` and the HFiles / log files of the MDT ``column_stats`` and ``files``
  partitions. The key holds all of them: instant file names of both timelines, and name + size + mtime of
  every file in the two MDT partitions (a new MDT deltacommit adds an instant file and a log file or
  appends to one; compaction adds a base file).

Lookups return the cached object itself: callers must treat it as read-only (commit metadata dicts,
``pa.Table`` and frozen ``FileSlice`` objects; lists are copied). The caches are bounded LRUs.
``HUDI_LAYOUT_SCAN_CACHE=0`` (or :func:`disabled`) turns caching off, e.g. to compare with the uncached path.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

V = TypeVar("V")

#: tables whose state is kept (each holds one file-slice list and a few column_stats tables)
MAX_TABLES = 8
#: decoded commit metadata files kept (a 1000-file commit decodes to a few MB of Python objects)
MAX_COMMIT_METADATA = 64
#: derived values kept (:func:`commit_metadata` with a ``view``): a set of file names each, so many fit
MAX_DERIVED = 32_768
#: column_stats tables kept per table (per column and partition selection)
MAX_COLUMN_STATS = 64

_enabled = os.environ.get("HUDI_LAYOUT_SCAN_CACHE", "1") not in ("0", "false", "no", "off")
_lock = threading.RLock()


def enabled() -> bool:
    return _enabled


@contextmanager
def disabled() -> Iterator[None]:
    """Run a block with caching off (lookups compute directly and store nothing)."""
    global _enabled
    old, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = old


class _Lru:
    """A small thread-safe LRU map."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        with _lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        with _lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with _lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


# ------------------------------------------------------------------------------------------ fingerprints


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _names(directory: Path) -> frozenset[str]:
    try:
        return frozenset(e.name for e in os.scandir(directory) if e.is_file())
    except FileNotFoundError:
        return frozenset()


def _files_with_stats(directory: Path) -> frozenset[tuple[str, int, int]]:
    out: set[tuple[str, int, int]] = set()
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return frozenset()
    for e in entries:
        try:
            if e.is_file():
                st = e.stat()
                out.add((e.name, st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.add((e.name, -1, -1))  # vanished while listing: still a distinct state
    return frozenset(out)


def _timeline_dirs(hoodie_dir: Path) -> tuple[Path, ...]:
    """Where instant files may live: ``.hoodie`` (layout 1) and ``.hoodie/timeline`` (layout 2)."""
    return (hoodie_dir, hoodie_dir / "timeline")


def timeline_names(hoodie_dir: Path) -> tuple[frozenset[str], ...]:
    """Instant file names of a table's timeline (both layouts' directories), cheap: two ``scandir``."""
    return tuple(_names(d) for d in _timeline_dirs(hoodie_dir))


def partition_dir_mtimes(base_path: Path, partitions: list[str]) -> tuple[tuple[str, int], ...]:
    out = []
    for p in partitions:
        try:
            out.append((p, (base_path / p if p else base_path).stat().st_mtime_ns))
        except FileNotFoundError:
            out.append((p, -1))
    return tuple(out)


def mdt_key(base_path: Path, mdt_partitions: tuple[str, ...] = ("column_stats", "files")) -> Hashable:
    """State of everything a column_stats read depends on (see the module docstring)."""
    hoodie = base_path / ".hoodie"
    mdt = hoodie / "metadata"
    mdt_hoodie = mdt / ".hoodie"
    return (
        _stat_key(hoodie / "hoodie.properties"),
        timeline_names(hoodie),
        _stat_key(mdt_hoodie / "hoodie.properties"),
        timeline_names(mdt_hoodie),
        tuple(_files_with_stats(mdt / p) for p in mdt_partitions),
    )


# ------------------------------------------------------------------------------------------ commit metadata

_commit_metadata = _Lru(MAX_COMMIT_METADATA)
#: small values derived from commit metadata (the file names a commit lists), one per completed instant file
_derived = _Lru(MAX_DERIVED)


def commit_metadata(path: Path, decode: Callable[[], Any], view: str = "") -> Any:
    """Decoded metadata of a completed instant file at ``path`` (``decode`` runs on a miss), or another
    ``view`` of it (a value derived from it, cached beside it under that name). Read-only!"""
    if not _enabled:
        return decode()
    st = _stat_key(path)
    if st is None:
        return decode()  # let the decoder raise its own error for a vanished file
    key = (str(path), view, *st)
    lru = _derived if view else _commit_metadata
    got = lru.get(key)
    if got is None:
        got = decode()
        lru.put(key, got)
    return got


# ------------------------------------------------------------------------------------------ per-table state


@dataclass
class _TableState:
    values: dict[str, tuple[Hashable, Any]] = field(default_factory=dict)
    column_stats_key: Hashable = None
    column_stats: _Lru = field(default_factory=lambda: _Lru(MAX_COLUMN_STATS))


_tables = _Lru(MAX_TABLES)


def _state(base_path: Path) -> _TableState:
    key = str(base_path)
    st = _tables.get(key)
    if st is None:
        st = _TableState()
        _tables.put(key, st)
    return st


def table_value(base_path: Path, name: str, key: Hashable, compute: Callable[[], V]) -> V:
    """The value ``name`` of the table at ``base_path`` for state ``key`` (recomputed when the key changed).

    ``key`` must be computed *before* calling (from a fresh listing): a value computed while the table
    changes is then stored under the older key, and the next lookup (new key) recomputes it.
    """
    if not _enabled:
        return compute()
    st = _state(base_path)
    with _lock:
        got = st.values.get(name)
    if got is not None and got[0] == key:
        return got[1]
    value = compute()
    with _lock:
        st.values[name] = (key, value)
    return value


def column_stats(base_path: Path, column: str, partitions: tuple[str, ...] | None, key: Hashable,
                 load: Callable[[], V]) -> V:
    """Cached column_stats table of one column (and partition selection) for MDT state ``key``."""
    if not _enabled:
        return load()
    st = _state(base_path)
    with _lock:
        if st.column_stats_key != key:
            st.column_stats = _Lru(MAX_COLUMN_STATS)
            st.column_stats_key = key
        store = st.column_stats
    got = store.get((column, partitions))
    if got is None:
        got = load()
        with _lock:
            if st.column_stats_key == key:  # not invalidated meanwhile by a newer state
                store.put((column, partitions), got)
    return got


def clear() -> None:
    """Forget everything (tests; after out-of-band edits with coarse mtimes)."""
    _commit_metadata.clear()
    _derived.clear()
    _tables.clear()
