"""Which files of the metadata table no reader needs any more (its own cleaning, docs/cleaning.md).

The MDT is a Merge-on-Read table: every deltacommit adds log files, every compaction adds a new base HFile per
file group and leaves the older base and the compacted log files behind. Once a compaction has been complete
for the grace period, the file slices before it are obsolete: every MDT reader that listed the MDT after that
compaction uses the new base (docs/hudi-format.md §5.7 slicing), one that listed before had the grace period to
read. Obsolete per file group:

* base HFiles older than the newest base of a completed compaction (also bases of failed compactions);
* log files whose deltacommit completed at or before that compaction (their blocks are in the new base), and
  log files of deltacommits that never completed and are older than it (left by a crash; the caller holds the
  table lock, under which every MDT deltacommit is written from start to end, so none is in progress).

Hudi cleans the MDT with its own cleaner and records a clean instant on the MDT timeline; we delete the same
kind of files without an instant (MDT readers, ours, Java's and hudi-rs', list the MDT's storage).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

from hudi_layout.format.file_naming import try_parse_log_file_name
from hudi_layout.format.instant import parse_instant_time
from hudi_layout.metadata import keys as K
from hudi_layout.metadata.mdt_reader import SOLO_COMMIT_TIMESTAMP, MetadataTableReader, _base_file_parts


def obsolete_files(base_path: str | os.PathLike[str], now: datetime, grace_seconds: int) -> list[Path]:
    """MDT files (``files`` and ``column_stats`` partitions) that no reader needs; call under the table lock.
    ``now`` is naive wall-clock time in the table's timeline zone."""
    reader = MetadataTableReader(base_path)
    sync = reader.sync
    cutoff = now - timedelta(seconds=grace_seconds)
    out: list[Path] = []
    for partition in (K.FILES, K.COLUMN_STATS):
        pdir = reader.mdt_dir / partition
        try:
            names = os.listdir(pdir)
        except FileNotFoundError:
            continue
        bases: dict[str, list[tuple[str, str]]] = {}
        logs: dict[str, list[tuple[str, str]]] = {}
        for name in names:
            if name.startswith("."):
                ln = try_parse_log_file_name(name)
                if ln is not None:
                    logs.setdefault(ln.file_id, []).append((ln.instant_time, name))
                continue
            parts = _base_file_parts(name)
            if parts is not None:
                bases.setdefault(parts[0], []).append((parts[1], name))
        for fid, found in bases.items():
            done = [t for t, _n in found if t in sync.mdt_completion]
            if not done:
                continue
            newest = max(done)
            if newest.startswith(SOLO_COMMIT_TIMESTAMP):
                continue  # only the initial base: nothing was compacted yet
            finished = sync.mdt_completion[newest]
            if parse_instant_time(finished[:17]) > cutoff:
                continue  # a reader that listed before this compaction may still read the older slice
            out += [pdir / n for t, n in found if t < newest]
            for t, n in logs.get(fid, ()):
                completed = sync.mdt_completion.get(t)
                if (completed is not None and completed <= newest) or (completed is None and t <= newest):
                    out.append(pdir / n)
    return sorted(out)
