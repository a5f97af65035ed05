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
import threading
import time
import uuid
from pathlib import Path
from types import TracebackType

from hudi_layout.errors import HudiLayoutError
from hudi_layout.format.properties import require_table_config


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
        # a lock belongs to a table: never create folders for a mistyped path (or inside a file's name)
        require_table_config(self.path.parent.parent)
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


#: Hudi's writers count a heartbeat as expired this long after its file was last written (its default
#: ``hoodie.client.heartbeat.interval_in_ms`` of 60 s times ``...tolerable.misses`` of 2; HoodieHeartbeatClient)
HUDI_HEARTBEAT_EXPIRY_SECONDS = 120.0
#: how often a heartbeat of ours touches its file, so Hudi's writers (which judge by modification time) see
#: our write alive however long it runs
HEARTBEAT_REFRESH_SECONDS = 30.0


class Heartbeat:
    """Held by the process writing ``instant_time`` until the instant completes or is abandoned: a kernel lock
    (our writers' test) on a file whose modification time is refreshed (Hudi's writers' test)."""

    def __init__(self, base_path: str | os.PathLike[str], instant_time: str) -> None:
        self.path = heartbeat_path(base_path, instant_time)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        #: tells this attempt's executors from those of an earlier attempt of the same instant
        self.token = uuid.uuid4().hex
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f"{int(time.time() * 1000)} {self.token}".encode())
        self._stopped = threading.Event()
        self._refresher = threading.Thread(target=self._refresh, name=f"hudi-layout-heartbeat-{instant_time}",
                                           daemon=True)
        self._refresher.start()

    def _refresh(self) -> None:
        while not self._stopped.wait(HEARTBEAT_REFRESH_SECONDS):
            try:
                os.utime(self.path)
            except OSError:
                return  # the file is gone (stopped, or the table was removed)

    def stop(self, *, delete: bool = True) -> None:
        if self._fd is None:
            return
        self._stopped.set()
        if delete:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None


def writer_is_alive(base_path: str | os.PathLike[str], instant_time: str) -> bool:
    """True when some live process holds the heartbeat of ``instant_time``, or a Hudi writer refreshed it
    within :data:`HUDI_HEARTBEAT_EXPIRY_SECONDS`.

    A missing heartbeat file means no live writer. Our heartbeats are kernel locks (no waiting for an expiry);
    Hudi's are an empty file its writer re-creates every interval, alive until it is older than the expiry
    (session 19: a pending instant of a running Hudi writer, whose heartbeat was fresh, was rolled back and its
    files deleted; its commit would then have named missing files).
    """
    path = heartbeat_path(base_path, instant_time)
    if heartbeat_file_held(str(path)):
        return True
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    return st.st_size == 0 and time.time() - st.st_mtime <= HUDI_HEARTBEAT_EXPIRY_SECONDS


def heartbeat_file_held(path: str) -> bool:
    """True when a process holds the (exclusive) heartbeat lock on ``path``: a shared, non-blocking probe
    fails exactly then, and probes of several checkers never block each other."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
