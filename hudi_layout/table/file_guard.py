"""The last guard before an executor creates a file: where it may go, and whether its write may still add files.

Two rules, checked for every base file, partition metadata file and marker the write path creates:

**Where.** :func:`data_file_path` / :func:`marker_path` resolve the target (symlinks included) and refuse
anything outside the base path, and anything under ``.hoodie/`` except a marker of the writer's own
instant under ``.hoodie/.temp/<instant>/``. The partition path is checked with
:func:`hudi_layout.format.partition_path.check_partition_path` whatever produced it; files are opened with
``O_CREAT | O_EXCL | O_NOFOLLOW`` so an existing file or a planted symlink is never written through.

**Whether.** A Spark Python worker can outlive its driver (PySpark's worker daemon runs in its own process
group) and a worker whose JVM died treats the closed socket as end of input and flushes what it holds. Files
such workers create after the instant was rolled back or completed would be orphans, or worse, rows of a
failed write. So each instant has a *file gate*, ``.hoodie/.locks/instant-<T>.lock``, created by
``begin_write``:

* an executor takes a shared ``flock`` on the gate, checks that the gate is still linked, that the writer's
  heartbeat is held (by a live process) and carries the writer's token, and that the instant is still
  inflight, then creates its marker and file and releases the gate (:meth:`FileGate.creating`);
* rollback, abort and completion *close* the gate (:func:`close_gate`): an exclusive ``flock`` waits for the
  creations in progress, then the gate file is unlinked. Afterwards no executor can pass the check, and every
  file created before is on disk, so the listing that follows finds it. A file that is still being written
  after being deleted writes into an unlinked inode: it never appears.

The token (written into the heartbeat file) tells two attempts of the same instant apart: a clustering plan
that is rolled back to requested and executed again keeps its instant time.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hudi_layout.errors import CommitConflictError, HudiLayoutError
from hudi_layout.format.partition_path import UnsafePartitionPathError, check_partition_path

HOODIE = ".hoodie"


class InstantClosedError(CommitConflictError):
    """The instant an executor writes for was rolled back, completed or abandoned by its writer."""


# ------------------------------------------------------------------------------------------- where


def _check_file_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\x00" in name or name.startswith(HOODIE):
        raise UnsafePartitionPathError(f"refusing to create a file named {name!r}")


def _inside(base_real: str, target: str) -> bool:
    return target == base_real or target.startswith(base_real + os.sep)


def data_file_path(base_path: str | os.PathLike[str], partition_path: str, file_name: str) -> str:
    """Absolute path of a data-side file (base file, ``.hoodie_partition_metadata``) of ``partition_path``.

    Refuses (:class:`UnsafePartitionPathError`) unsafe partition paths or names, and targets whose folder
    resolves (through symlinks) outside the base path or into ``.hoodie``.
    """
    check_partition_path(partition_path)
    if file_name != ".hoodie_partition_metadata":
        _check_file_name(file_name)
    base_real = os.path.realpath(base_path)
    folder = os.path.realpath(os.path.join(base_real, partition_path)) if partition_path else base_real
    if not _inside(base_real, folder) or _inside(os.path.join(base_real, HOODIE), folder):
        raise UnsafePartitionPathError(
            f"refusing to write {file_name!r}: partition folder {partition_path!r} resolves to {folder}, "
            f"outside the table {base_real} or inside its .hoodie folder")
    return os.path.join(folder, file_name)


#: Hudi's marker IO types: a new file group (CREATE), a new slice of an existing one (MERGE), a log append
MARKER_IO_TYPES = ("CREATE", "MERGE", "APPEND")


def marker_path(base_path: str | os.PathLike[str], instant_time: str, partition_path: str, file_name: str,
                io_type: str = "CREATE") -> str:
    """Absolute path of the DIRECT marker ``.hoodie/.temp/<instant>/<partition>/<file>.marker.<io_type>``."""
    if io_type not in MARKER_IO_TYPES:
        raise UnsafePartitionPathError(f"refusing marker IO type {io_type!r}")
    check_partition_path(partition_path)
    _check_file_name(file_name)
    if not instant_time.isdigit():
        raise UnsafePartitionPathError(f"refusing marker of instant {instant_time!r}")
    base_real = os.path.realpath(base_path)
    temp = os.path.join(base_real, HOODIE, ".temp", instant_time)
    folder = os.path.realpath(os.path.join(temp, partition_path)) if partition_path else os.path.realpath(temp)
    if not _inside(os.path.realpath(temp), folder):
        raise UnsafePartitionPathError(f"refusing marker folder {folder}: outside {temp}")
    return os.path.join(folder, f"{file_name}.marker.{io_type}")


def create_new_file(path: str) -> int:
    """Open ``path`` for writing, creating it; never an existing file, never through a symlink."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)


# ------------------------------------------------------------------------------------------- whether


def gate_path(base_path: str | os.PathLike[str], instant_time: str) -> Path:
    return Path(base_path) / HOODIE / ".locks" / f"instant-{instant_time}.lock"


def open_gate(base_path: str | os.PathLike[str], instant_time: str) -> None:
    """Create the file gate of a new (or resumed) instant; called by the commit protocol under the table lock."""
    p = gate_path(base_path, instant_time)
    p.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(p, os.O_RDWR | os.O_CREAT, 0o644))


def close_gate(base_path: str | os.PathLike[str], instant_time: str, *, timeout_s: float = 120.0) -> None:
    """Wait for file creations in progress for ``instant_time``, then stop any more (unlink the gate).

    Creations hold the gate for milliseconds (a marker and an empty file); a process that holds it longer is
    stopped or hung, and after ``timeout_s`` this raises instead of rolling back under it.
    """
    p = gate_path(base_path, instant_time)
    try:
        fd = os.open(p, os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() > deadline:
                    raise HudiLayoutError(
                        f"a process is still creating files for instant {instant_time} (it holds {p} for more "
                        f"than {timeout_s:.0f}s)", hint="find and stop the stuck Spark worker, then retry") from None
                time.sleep(0.01)
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
    finally:
        os.close(fd)  # releases the lock


def heartbeat_token(heartbeat_file: str | os.PathLike[str]) -> str | None:
    """The token a live writer wrote into its heartbeat file (second field), or None."""
    try:
        with open(heartbeat_file, "rb") as fh:
            parts = fh.read(256).split()
    except FileNotFoundError:
        return None
    return parts[1].decode("ascii", "replace") if len(parts) >= 2 else None


def _heartbeat_held(heartbeat_file: str) -> bool:
    try:
        fd = os.open(heartbeat_file, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True  # someone holds it exclusively: the writer is alive
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


@dataclass(frozen=True)
class FileGate:
    """What an executor needs (picklable) to check, before each file, that its instant still takes files."""

    base_path: str
    instant_time: str
    inflight_file: str
    heartbeat_file: str
    token: str

    def problem(self) -> str | None:
        """Why files may no longer be created for this instant (None: they may)."""
        if not _heartbeat_held(self.heartbeat_file):
            return "its writer is gone (heartbeat not held)"
        if heartbeat_token(self.heartbeat_file) != self.token:
            return "another attempt of the instant owns it now"
        if not os.path.exists(self.inflight_file):
            return "it is no longer inflight"
        return None

    @contextmanager
    def creating(self) -> Iterator[None]:
        """Hold the gate (shared) while creating files; raises :class:`InstantClosedError` when closed."""
        path = gate_path(self.base_path, self.instant_time)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            raise InstantClosedError(
                f"instant {self.instant_time} takes no more files (rolled back, completed or abandoned)") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if os.fstat(fd).st_nlink == 0:
                raise InstantClosedError(f"instant {self.instant_time} was closed while this task waited")
            why = self.problem()
            if why is not None:
                raise InstantClosedError(f"instant {self.instant_time} takes no more files: {why}")
            yield
        finally:
            os.close(fd)
