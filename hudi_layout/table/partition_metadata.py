"""``.hoodie_partition_metadata``: the marker file that makes a folder a Hudi partition (notes §1.3).

Content (Java properties)::

    #partition metadata
    #<date>
    commitTime=<instant that created the partition>
    partitionDepth=<number of path segments; 0 for a non-partitioned table's base path>

Written atomically (temp file in the same folder, then rename), and by default never overwritten, like
``HoodiePartitionMetadata.trySave``: concurrent writers race harmlessly.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from hudi_layout.errors import CorruptFileError
from hudi_layout.format.file_naming import PARTITION_METAFILE
from hudi_layout.format.properties import read_properties_file

#: base-format variants Hudi may write instead (``hoodie.partition.metafile.use.base.format``)
PARTITION_METAFILE_VARIANTS = (PARTITION_METAFILE, PARTITION_METAFILE + ".parquet",
                               PARTITION_METAFILE + ".orc")


@dataclass(frozen=True)
class PartitionMetadata:
    commit_time: str
    partition_depth: int


def has_partition_metadata(directory: str | os.PathLike[str]) -> bool:
    d = Path(directory)
    return any((d / name).is_file() for name in PARTITION_METAFILE_VARIANTS)


def partition_metadata_bytes(commit_time: str, partition_depth: int) -> bytes:
    date = time.strftime("%a %b %d %H:%M:%S %Z %Y")
    return (f"#partition metadata\n#{date}\ncommitTime={commit_time}\n"
            f"partitionDepth={partition_depth}\n").encode("latin-1")


def write_partition_metadata(directory: str | os.PathLike[str], commit_time: str, partition_depth: int,
                             *, overwrite: bool = False) -> bool:
    """Create ``<directory>/.hoodie_partition_metadata`` (and the directory). Returns False if it existed."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    target = d / PARTITION_METAFILE
    if not overwrite and has_partition_metadata(d):
        return False
    tmp = d / f"{PARTITION_METAFILE}_{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(partition_metadata_bytes(commit_time, partition_depth))
        fh.flush()
        os.fsync(fh.fileno())
    if overwrite:
        os.replace(tmp, target)
        return True
    try:
        os.link(tmp, target)  # atomic create-if-absent
    except FileExistsError:
        return False
    except OSError:
        os.replace(tmp, target)  # filesystems without hard links
        return True
    finally:
        if tmp.exists():
            tmp.unlink()
    return True


def read_partition_metadata(directory: str | os.PathLike[str]) -> PartitionMetadata:
    path = Path(directory) / PARTITION_METAFILE
    try:
        props = read_properties_file(path)
    except FileNotFoundError as exc:
        raise CorruptFileError(f"{path}: partition metadata file missing") from exc
    try:
        return PartitionMetadata(props["commitTime"], int(props["partitionDepth"]))
    except (KeyError, ValueError) as exc:
        raise CorruptFileError(f"{path}: bad partition metadata ({exc})") from exc
