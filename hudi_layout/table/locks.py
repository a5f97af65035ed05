"""File-system locks for commits, and heartbeats that tell a live writer from a dead one.

* The **table lock** (``.hoodie/.locks/table.lock``) serialises the short metadata steps of every writer
  (starting an instant, rolling back failed writes, the conflict check + MDT update + completion).
  It is an ``fcntl.flock`` lock, so the kernel releases it when a process dies: a crash never leaves
  the table locked. Like Hudi's ``FileSystemBasedLockProvider`` it is meant for writers that share one
  file system with proper locking (a local disk or NFS with lock support), not object stores.
* A **heartbeat** (``.hoodie/.heartbeat/<instant>``) is held with ``flock`` for as long as the writer of
  that instant is alive. A pending instant whose heartbeat can be locked by someone else belongs to a
  dead writer and may be rolled back; one whose heartbeat is held is still being written. The file holds
  ``<epoch ms> <token>``; executors compare the token before creating files (:mod:`.file_guard`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
import uuid
from pathlib import Path
from types import TracebackType

from hudi_layout.errors import HudiLayoutError


class LockTimeoutError(HudiLayoutError):
    """The table lock could not be taken in time (another writer holds it)."""


class TableLock:
    """Exclusive, re-entrant-per-object lock on a table, released on process death."""

    def __init__(self, base_path: str | os.PathLike[str], *, timeout_s: float = 600.0) -> None:
        self.path = Path(base_path) / ".hoodie" / ".locks" / "table.lock"
        self.timeout_s = timeout_s
        self._fd: int | None = None
        self._depth = 0

    def acquire(self) -> None:
        if self._fd is not None:
            self._depth += 1
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise LockTimeoutError(
                        f"could not lock {self.path} within {self.timeout_s:.0f}s: another writer holds it"
                    ) from None
                time.sleep(0.05)
        self._fd = fd
        self._depth = 1

    def release(self) -> None:
        if self._fd is None:
            return
        self._depth -= 1
        if self._depth > 0:
            return
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> TableLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def heartbeat_path(base_path: str | os.PathLike[str], instant_time: str) -> Path:
    return Path(base_path) / ".hoodie" / ".heartbeat" / instant_time


class Heartbeat:
    """Held by the process writing ``instant_time`` until the instant completes or is abandoned."""

    def __init__(self, base_path: str | os.PathLike[str], instant_time: str) -> None:
        self.path = heartbeat_path(base_path, instant_time)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        #: tells this attempt's executors from those of an earlier attempt of the same instant
        self.token = uuid.uuid4().hex
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f"{int(time.time() * 1000)} {self.token}".encode())

    def stop(self, *, delete: bool = True) -> None:
        if self._fd is None:
            return
        if delete:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def writer_is_alive(base_path: str | os.PathLike[str], instant_time: str) -> bool:
    """True when some live process holds the heartbeat of ``instant_time``.

    A missing heartbeat file means no live writer (Hudi's own writers also count as dead once their
    heartbeat stops; we do not wait for an expiry because our heartbeats are kernel locks).
    """
    path = heartbeat_path(base_path, instant_time)
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
