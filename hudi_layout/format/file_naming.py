"""Hudi data file names, write tokens, file ids and partition paths (docs/hudi-format.md §1.4–§1.6).

Base file: ``<fileId>_<writeToken>_<instantTime>.<ext>`` (``FSUtils.makeBaseFileName``).
Log file:  ``.<fileId>_<instant>.<ext>.<version>_<writeToken>[.cdc]``.
Partition paths (values into folder names and back) are :mod:`hudi_layout.format.partition_path`.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from hudi_layout.errors import InvalidArgumentError

DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"
DEPRECATED_DEFAULT_PARTITION_PATH = "default"
PARTITION_METAFILE = ".hoodie_partition_metadata"

_BASE_RE = re.compile(
    r"^(?P<file_id>[^/]+?)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d{14,20})(?P<ext>\.[A-Za-z0-9]+)$")
#: ``.<fileId>_<instant>.<log|archive>.<version>[_<token>[.cdc]]`` (the one log-file grammar: data table and MDT)
LOG_FILE_RE = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(\.cdc)?)?$")


@dataclass(frozen=True)
class BaseFileName:
    file_id: str
    write_token: str
    instant_time: str
    extension: str  # with the dot: ".parquet"

    @property
    def name(self) -> str:
        return make_base_file_name(self.file_id, self.write_token, self.instant_time, self.extension)


@dataclass(frozen=True)
class LogFileName:
    file_id: str
    instant_time: str  # base commit time (v6) or writing deltacommit (v8+)
    version: int
    write_token: str | None = None
    extension: str = "log"  # "log" or "archive" (no dot)
    is_cdc: bool = False

    @property
    def name(self) -> str:
        token = f"_{self.write_token}" if self.write_token else ""
        cdc = ".cdc" if self.is_cdc else ""
        return f".{self.file_id}_{self.instant_time}.{self.extension}.{self.version}{token}{cdc}"


def make_write_token(task_partition_id: int, stage_id: int, attempt_id: int) -> str:
    """``FSUtils.makeWriteToken``: ``<taskPartitionId>-<stageId>-<taskAttemptId>``."""
    return f"{task_partition_id}-{stage_id}-{attempt_id}"


def new_file_id(index: int = 0) -> str:
    """A new file group id ``<uuid4>-<index>`` (index = file number within one write task)."""
    return f"{uuid.uuid4()}-{index}"


def make_base_file_name(file_id: str, write_token: str, instant_time: str,
                        extension: str = ".parquet") -> str:
    if not extension.startswith("."):
        extension = "." + extension
    if not file_id or "/" in file_id:
        raise InvalidArgumentError(f"bad file id {file_id!r}")
    return f"{file_id}_{write_token}_{instant_time}{extension}"


def parse_base_file_name(name: str) -> BaseFileName:
    """Parse a base file name (basename, no directory). Raises InvalidArgumentError if it is not one."""
    m = _BASE_RE.match(name)
    if not m or name.startswith("."):
        raise InvalidArgumentError(f"not a Hudi base file name: {name!r}")
    return BaseFileName(m["file_id"], m["token"], m["instant"], m["ext"])


def try_parse_base_file_name(name: str) -> BaseFileName | None:
    try:
        return parse_base_file_name(name)
    except InvalidArgumentError:
        return None


def try_parse_log_file_name(name: str) -> LogFileName | None:
    """The parts of a log file name (basename), ``None`` when ``name`` is not one."""
    m = LOG_FILE_RE.match(name)
    if not m:
        return None
    return LogFileName(file_id=m.group(1), instant_time=m.group(2), extension=m.group(3),
                       version=int(m.group(4)), write_token=m.group(6), is_cdc=m.group(10) is not None)


def try_parse_data_log_file_name(name: str) -> LogFileName | None:
    """A file group's data log file (``.<fileId>_<instant>.log.<version>_<token>``) in a partition folder:
    ``None`` for any other name, ``.cdc`` change logs included."""
    if not name.startswith("."):
        return None
    parsed = try_parse_log_file_name(name)
    return parsed if parsed is not None and parsed.extension == "log" and not parsed.is_cdc else None


def parse_log_file_name(name: str) -> LogFileName:
    parsed = try_parse_log_file_name(name)
    if parsed is None:
        raise InvalidArgumentError(f"not a Hudi log file name: {name!r}")
    return parsed


def is_log_file_name(name: str) -> bool:
    return bool(LOG_FILE_RE.match(name))


def make_log_file_name(file_id: str, instant_time: str, version: int = 1, write_token: str = "0-0-0") -> str:
    return LogFileName(file_id, instant_time, version, write_token).name


def log_sort_key(n: LogFileName) -> tuple[str, int, str]:
    """Order of log files within a file group, as ``HoodieLogFile.LogFileComparator``: the instant in the name,
    then the log version as a number (``log.2`` before ``log.10``), then the write token as a string (a missing
    token first)."""
    return (n.instant_time, n.version, n.write_token or "")


# ------------------------------------------------------------------------------------ partition paths
# Encoding values into partition paths (and back) is :mod:`hudi_layout.format.partition_path`.


def partition_depth(partition_path: str) -> int:
    return 0 if partition_path in ("", ".") else len(partition_path.strip("/").split("/"))
