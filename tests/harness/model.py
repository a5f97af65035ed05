"""The rows a table must hold at each instant, maintained by the harness as it changes the table.

The model knows nothing of files: a commit adds rows stamped with its instant time, an upsert replaces the
rows of its keys (stamped) and adds the others, a delete drops rows, an overwrite replaces every row (or those
of some partitions), a partition delete drops a partition's rows, a clustering keeps the rows *and* their
commit times, a crashed writer and a clean change nothing. Instant times are learnt from the timeline folder
after each step (:func:`completed_instants`), so the model also answers time travel (``as of`` a requested
time, as hudi-rs defines it) and incremental queries (the commits *completed* in ``(begin, end]``, as Hudi 1.x
and hudi-rs define them).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Row = Mapping[str, Any]
COMMIT_TIME = "_hoodie_commit_time"

_COMPLETED = re.compile(r"^(\d{17})(?:_(\d{17}))?\.(commit|replacecommit|deltacommit)$")


@dataclass(frozen=True)
class Instant:
    requested: str
    completed: str | None
    action: str


def completed_instants(base_path: str | os.PathLike[str]) -> list[Instant]:
    """Completed write instants of the data timeline, by requested time (layout 2: ``.hoodie/timeline``)."""
    hoodie = Path(base_path) / ".hoodie"
    tdir = hoodie / "timeline" if (hoodie / "timeline").is_dir() else hoodie
    out = []
    for name in os.listdir(tdir):
        m = _COMPLETED.match(name)
        if m:
            out.append(Instant(m.group(1), m.group(2), m.group(3)))
    return sorted(out, key=lambda i: i.requested)


@dataclass
class TableModel:
    """Snapshots by requested instant time; each row carries ``_hoodie_commit_time``."""

    snapshots: list[tuple[Instant, tuple[Row, ...]]] = field(default_factory=list)

    @property
    def current(self) -> tuple[Row, ...]:
        return self.snapshots[-1][1] if self.snapshots else ()

    @property
    def instants(self) -> list[Instant]:
        return [i for i, _ in self.snapshots]

    def commit(self, instant: Instant, rows: Sequence[Row]) -> None:
        """An append: the current rows plus ``rows`` stamped with ``instant``."""
        added = tuple({**r, COMMIT_TIME: instant.requested} for r in rows)
        self._add(instant, self.current + added)

    def upsert(self, instant: Instant, rows: Sequence[Row]) -> None:
        """An upsert (ids unique in ``rows``): a stored row of an incoming id is replaced where it stood, the
        other incoming rows are added; both stamped with ``instant``. Untouched rows keep their commit time."""
        incoming = {r["id"]: {**r, COMMIT_TIME: instant.requested} for r in rows}
        kept = tuple(incoming.pop(r["id"]) if r["id"] in incoming else r for r in self.current)
        self._add(instant, kept + tuple(incoming.values()))

    def delete(self, instant: Instant, ids: Sequence[int]) -> None:
        gone = set(ids)
        self._add(instant, tuple(r for r in self.current if r["id"] not in gone))

    def overwrite(self, instant: Instant, rows: Sequence[Row]) -> None:
        self._add(instant, tuple({**r, COMMIT_TIME: instant.requested} for r in rows))

    def overwrite_partitions(self, instant: Instant, rows: Sequence[Row], partitions: set[Any] | None) -> None:
        """An ``insert_overwrite``: the rows of ``partitions`` (values of the partition column; None: an
        unpartitioned table, whose one partition is everything) give way to ``rows``, stamped."""
        folders = None if partitions is None else {partition_folder(v) for v in partitions}
        kept = () if folders is None else tuple(r for r in self.current if partition_folder(r["part"]) not in folders)
        self._add(instant, kept + tuple({**r, COMMIT_TIME: instant.requested} for r in rows))

    def drop_partitions(self, instant: Instant, folders: set[str]) -> None:
        """A ``delete_partition``: every row in the partition ``folders`` goes."""
        self._add(instant, tuple(r for r in self.current if partition_folder(r["part"]) not in folders))

    def cluster(self, instant: Instant) -> None:
        """A clustering: same rows, same commit times, a new instant."""
        self._add(instant, self.current)

    def restore(self, savepoint_time: str) -> None:
        """Hudi's restore to a savepoint: every instant requested after it is gone, as if never written."""
        self.snapshots = [(i, rows) for i, rows in self.snapshots if i.requested <= savepoint_time]

    def _add(self, instant: Instant, rows: tuple[Row, ...]) -> None:
        if self.snapshots and instant.requested <= self.snapshots[-1][0].requested:
            raise AssertionError(f"instant {instant} is not after {self.snapshots[-1][0]}")
        self.snapshots.append((instant, rows))

    def as_of(self, instant_time: str) -> tuple[Row, ...]:
        """Rows visible to a query as of ``instant_time``: the last instant requested at or before it."""
        rows: tuple[Row, ...] = ()
        for inst, snap in self.snapshots:
            if inst.requested <= instant_time:
                rows = snap
        return rows

    def incremental(self, begin: str, end: str | None) -> tuple[Row, ...]:
        """Rows of the commits *completed* in ``(begin, end]`` (Hudi 1.x and hudi-rs compare incremental bounds
        with completion times), as the table holds them at ``end``: the snapshot of the last instant completed
        by ``end``, keeping the rows whose commit time is the requested time of a selected commit."""
        done = [(inst, snap) for inst, snap in self.snapshots if inst.completed is not None]
        end_time = end if end is not None else (max(i.completed for i, _ in done) if done else "")
        selected = {i.requested for i, _ in done if begin < i.completed <= end_time}
        last = self.completed_by(end_time)
        at_end = last[1] if last is not None else ()
        return tuple(r for r in at_end if r[COMMIT_TIME] in selected)

    def completed_by(self, end: str) -> tuple[Instant, tuple[Row, ...]] | None:
        """The last instant *completed* at or before ``end`` and its rows (an incremental read's end view)."""
        last = None
        for inst, snap in sorted((x for x in self.snapshots if x[0].completed is not None),
                                 key=lambda x: x[0].completed):
            if inst.completed <= end:
                last = (inst, snap)
        return last


def partition_folder(value: Any) -> str:
    """The folder of a ``part`` value, as Hudi's key generators name it: NULL and ``''`` share the default
    partition (so an overwrite or a partition delete of one takes the other's rows too)."""
    return "__HIVE_DEFAULT_PARTITION__" if value is None or value == "" else str(value)
