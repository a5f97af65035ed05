"""Progress of Spark jobs for :mod:`hudi_layout.progress`: tasks from Spark's status tracker, files / rows /
bytes written from accumulators that the executor-side writer adds to as each task finishes.

:func:`watch` does nothing (no thread, no accumulator) unless a progress listener is installed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hudi_layout import progress

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

POLL_SECONDS = 0.5


@dataclass(frozen=True)
class WriteCounters:
    """Accumulators (files, rows, bytes) that executors add to per file written."""

    files: Any
    rows: Any
    bytes: Any


_counters: WriteCounters | None = None


def write_counters() -> WriteCounters | None:
    """The counters of the running :func:`watch`, if any (the writer job closes over them)."""
    return _counters


@contextmanager
def watch(spark: SparkSession, step: str) -> Iterator[None]:
    """Report the tasks of every Spark stage that runs inside the block, and what the writers wrote."""
    global _counters
    if not progress.is_listened():
        yield
        return
    sc = spark.sparkContext
    counters = WriteCounters(sc.accumulator(0), sc.accumulator(0), sc.accumulator(0))
    before = set(sc.statusTracker().getActiveStageIds())
    stages: dict[int, tuple[int, int]] = {}
    stop = threading.Event()

    def snapshot(finished: bool = False) -> progress.Progress:
        tracker = sc.statusTracker()
        for sid in tracker.getActiveStageIds():
            if sid in before:
                continue
            info = tracker.getStageInfo(sid)
            if info is not None:
                stages[sid] = (info.numCompletedTasks, info.numTasks)
        for sid, (_done, total) in list(stages.items()):
            info = tracker.getStageInfo(sid)
            stages[sid] = (info.numCompletedTasks, info.numTasks) if info is not None else (total, total)
        done = sum(d for d, _ in stages.values())
        total = sum(t for _, t in stages.values())
        return progress.Progress(step, done, total or None, "tasks", counters.files.value, counters.rows.value,
                                 counters.bytes.value, finished)

    def loop() -> None:
        while not stop.wait(POLL_SECONDS):
            try:
                progress.report(snapshot())
            except Exception:  # the session went away: stop reporting
                return

    _counters = counters
    thread = threading.Thread(target=loop, name="hudi_layout-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
        _counters = None
        try:
            final = snapshot(finished=True)
            progress.report(final if final.total else progress.Progress(step, 1, 1, "steps", finished=True))
        except Exception:
            progress.report(progress.Progress(step, 1, 1, "steps", finished=True))
