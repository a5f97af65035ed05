"""Progress of long steps (ingest, clustering, index build), told to whoever listens; silent by default.

Engines and jobs call :func:`report` with a :class:`Progress`; nothing happens unless a listener is
installed with :func:`listening` (the ``hudi-layout`` command installs a terminal progress bar when stderr
is a terminal). A listener that raises is dropped from that report, never breaks the step.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Progress:
    """Where a step is: ``done`` of ``total`` ``unit`` (tasks, files...), and what it wrote or read so far."""

    step: str
    done: float = 0.0
    total: float | None = None
    unit: str = "tasks"
    files: int = 0
    rows: int = 0
    bytes: int = 0
    finished: bool = False


Listener = Callable[[Progress], None]

_lock = threading.Lock()
_listeners: list[Listener] = []


@contextmanager
def listening(listener: Listener) -> Iterator[Listener]:
    """Send every :func:`report` to ``listener`` inside the block (from any thread)."""
    with _lock:
        _listeners.append(listener)
    try:
        yield listener
    finally:
        with _lock:
            _listeners.remove(listener)


def is_listened() -> bool:
    """True when someone listens: jobs skip the work of counting otherwise."""
    return bool(_listeners)


def report(progress: Progress) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(progress)
        except Exception:  # a display problem never breaks a write
            log.debug("progress listener failed", exc_info=True)
