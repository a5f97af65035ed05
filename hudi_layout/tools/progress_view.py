"""The terminal progress bar of the ``hudi-layout`` command: one line per step with tasks, files, rows,
bytes written, elapsed time and ETA. Shown only when stderr is a terminal (and not under ``CI``), so logs
and CI output stay clean; ``HUDI_LAYOUT_PROGRESS=1`` / ``0`` forces it on / off."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from hudi_layout import progress


def progress_wanted(stream: IO[str] | None = None) -> bool:
    forced = os.environ.get("HUDI_LAYOUT_PROGRESS", "").strip().lower()
    if forced in ("1", "true", "yes", "on"):
        return True
    if forced in ("0", "false", "no", "off"):
        return False
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("CI")


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover


def _written(p: progress.Progress) -> str:
    parts = []
    if p.files:
        parts.append(f"{p.files:,} files")
    if p.rows:
        parts.append(f"{p.rows:,} rows")
    if p.bytes:
        parts.append(human_bytes(p.bytes))
    return " · ".join(parts)


@contextmanager
def terminal_progress(enabled: bool | None = None) -> Iterator[bool]:
    """Show progress reports as rich progress bars on stderr inside the block (when ``enabled``, default
    :func:`progress_wanted`). Yields whether bars are shown."""
    if enabled is None:
        enabled = progress_wanted()
    if not enabled:
        yield False
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        SpinnerColumn,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bars = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                    TextColumn("{task.fields[count]}"),
                    TextColumn("{task.fields[written]}"), TimeElapsedColumn(), TextColumn("ETA"),
                    TimeRemainingColumn(), console=Console(stderr=True), transient=False)
    tasks: dict[str, TaskID] = {}

    def listener(p: progress.Progress) -> None:
        tid = tasks.get(p.step)
        if tid is None:
            tid = tasks[p.step] = bars.add_task(p.step, total=p.total, count="", written="")
        count = f"{p.done:,.0f}/{p.total:,.0f} {p.unit}" if p.total else f"{p.done:,.0f} {p.unit}"
        bars.update(tid, completed=p.done, total=p.total, count=count, written=_written(p))
        if p.finished:
            bars.stop_task(tid)

    with bars, progress.listening(listener):
        yield True
