"""One atomic file write for every metadata file we create (timeline, properties, MDT instants)."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, data: bytes, tmp_dir: Path | None = None) -> None:
    """Write ``data`` to ``path`` so readers see either nothing or the whole file.

    The bytes go to a temporary file (in ``tmp_dir``, or beside ``path`` when none is given — keep it on
    the same file system), are fsynced, and are renamed over ``path`` in one ``os.replace``.
    """
    if tmp_dir is None:
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    else:
        tmp_dir.mkdir(parents=True, exist_ok=True)
        tmp = tmp_dir / f".{path.name}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
