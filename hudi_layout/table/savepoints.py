"""The savepoints on a table's timeline (docs/savepoints.md): which exist, and which files they pin.

A completed savepoint pins the files its metadata lists; the cleaner keeps every file slice one of whose files is
pinned (Hudi's ``CleanPlanner`` matches file names). A savepoint still inflight (its creator stopped before
completing it) pins nothing Hudi knows of, so the cleaner refuses to run while one is there rather than guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hudi_layout.format.instant import SAVEPOINT, Instant
from hudi_layout.format.savepoint_metadata import SavepointMetadata, decode_savepoint_metadata
from hudi_layout.table import cache as table_cache
from hudi_layout.table.timeline import Timeline


@dataclass(frozen=True)
class Savepoint:
    """A completed savepoint: its instant and what it lists."""

    instant: Instant
    metadata: SavepointMetadata

    @property
    def instant_time(self) -> str:
        return self.instant.requested_time


def completed_savepoints(timeline: Timeline) -> list[Savepoint]:
    """The completed savepoints, oldest first (each file decoded once per process: completed files are
    immutable)."""
    out = []
    for i in timeline.completed().actions(SAVEPOINT):
        path = timeline.path_of(i)

        def decode(i: Instant = i, path: Path = path) -> SavepointMetadata:
            return decode_savepoint_metadata(timeline.read_bytes(i), str(path))

        meta: SavepointMetadata = table_cache.commit_metadata(path, decode, view="savepoint")
        out.append(Savepoint(i, meta))
    return out


def pending_savepoints(timeline: Timeline) -> list[Instant]:
    """Savepoints begun and never completed (``T.savepoint.inflight`` alone)."""
    return list(timeline.pending().actions(SAVEPOINT))


def savepointed_file_names(savepoints: list[Savepoint]) -> frozenset[str]:
    """Names of every file some savepoint lists (the cleaner's test, by name as Hudi's)."""
    return frozenset(n for s in savepoints for names in s.metadata.files.values() for n in names)
