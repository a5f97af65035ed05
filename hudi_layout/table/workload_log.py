"""The opt-in query log of a table: which predicates reads saw (``hudi_layout.workload.log.enable=true``).

One JSON line per planned query in ``<base>/.hoodie/.aux/hudi_layout/workload.log``: ``{"t": epoch ms,
"source": "read" | "explain" | "datasource" | ..., "where": Spark SQL text}``. The file sits in Hudi's
auxiliary folder, outside every data and metadata file (Hudi readers never look there), and is only ever
appended to.

Recording must never break a read: :func:`record` swallows every ``OSError`` (read-only storage, a full
disk, a missing ``.hoodie``), writes each line with one ``O_APPEND`` write (lines of concurrent readers do not
interleave on a local file system), and stops growing the file past a size cap.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

LOG_DIR = Path(".hoodie") / ".aux" / "hudi_layout"
LOG_NAME = "workload.log"
_warned_full: set[str] = set()


def log_path(base_path: str | os.PathLike[str]) -> Path:
    return Path(base_path) / LOG_DIR / LOG_NAME


@dataclass(frozen=True)
class LoggedQuery:
    where: str
    source: str
    millis: int


def record(base_path: str | os.PathLike[str], where_sql: str, source: str, *, max_bytes: int) -> bool:
    """Append one predicate to the table's log; ``False`` (and nothing raised) when it could not be written."""
    path = log_path(base_path)
    line = json.dumps({"t": int(time.time() * 1000), "source": source, "where": where_sql},
                      separators=(",", ":")) + "\n"
    try:
        if not path.parent.parent.parent.is_dir():  # no .hoodie: not a table we may write into
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            size = 0
        if size + len(line) > max_bytes:
            if str(path) not in _warned_full:
                _warned_full.add(str(path))
                log.warning("workload log %s reached %d bytes; not recording more queries", path, max_bytes)
            return False
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        return True
    except OSError as e:
        log.debug("workload log not written (%s): %s", path, e)
        return False


def read_entries(base_path: str | os.PathLike[str]) -> Iterator[LoggedQuery]:
    """Every well-formed entry of the table's log, oldest first (malformed lines are skipped)."""
    path = log_path(base_path)
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return
    for line in lines:
        try:
            d = json.loads(line)
            where = d["where"]
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(where, str) and where.strip():
            yield LoggedQuery(where=where, source=str(d.get("source", "")), millis=int(d.get("t", 0) or 0))
