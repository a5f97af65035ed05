"""Metadata-table record keys and key → file-group mapping.

Spec: docs/hudi-format.md §5.2 (file groups, Java ``String.hashCode`` mapping) and §5.5 (column_stats keys).

A column_stats key is ``ColumnIndexID ‖ PartitionIndexID ‖ FileIndexID`` where the first two are Base64 of
the big-endian XXH64 digest (seed **sign-extended** ``0xFFFFFFFFDABADABA``: Java passes ``int 0xdabadaba``
to a ``long`` parameter) and the third is Base64 of the MD5 of the base file name. All parts are fixed
length (12 + 12 + 24 chars) so column / column+partition prefixes select contiguous key ranges.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

import xxhash

HASH_SEED = 0xFFFFFFFFDABADABA
NON_PARTITIONED_NAME = "."
ALL_PARTITIONS_KEY = "__all_partitions__"

COLUMN_ID_LEN = 12
PARTITION_ID_LEN = 12
FILE_ID_LEN = 24
COLUMN_STATS_KEY_LEN = COLUMN_ID_LEN + PARTITION_ID_LEN + FILE_ID_LEN

# MDT partition name -> file-group id prefix (§5.2)
FILES = "files"
COLUMN_STATS = "column_stats"
PARTITION_STATS = "partition_stats"
_FILE_ID_PREFIX = {
    FILES: "files-",
    COLUMN_STATS: "col-stats-",
    "bloom_filters": "bloom-filters-",
    "record_index": "record-index-",
    PARTITION_STATS: "partition-stats-",
}


def partition_identifier(partition: str) -> str:
    """MDT spelling of a data partition path: ``""`` (non-partitioned) becomes ``"."``."""
    return NON_PARTITIONED_NAME if partition in ("", NON_PARTITIONED_NAME) else partition


def data_partition_path(identifier: str) -> str:
    """Inverse of :func:`partition_identifier`."""
    return "" if identifier == NON_PARTITIONED_NAME else identifier


@lru_cache(maxsize=4096)
def _xxh_id(text: str) -> str:
    return base64.b64encode(xxhash.xxh64(text.encode("utf-8"), seed=HASH_SEED).digest()).decode("ascii")


def column_index_id(column: str) -> str:
    return _xxh_id(column)


def partition_index_id(partition: str) -> str:
    return _xxh_id(partition_identifier(partition))


@lru_cache(maxsize=1 << 18)
def file_index_id(file_name: str) -> str:
    return base64.b64encode(hashlib.md5(file_name.encode("utf-8")).digest()).decode("ascii")


def column_prefix(column: str) -> str:
    """Key prefix selecting every column_stats record of ``column`` (12 chars)."""
    return column_index_id(column)


@lru_cache(maxsize=65536)
def column_partition_prefix(column: str, partition: str) -> str:
    """Key prefix selecting ``column``'s records in one data partition (24 chars)."""
    return column_index_id(column) + partition_index_id(partition)


def column_stats_key(column: str, partition: str, file_name: str) -> str:
    """Full column_stats record key; ``file_name`` is the bare base-file name (no directory)."""
    if "/" in file_name:
        file_name = file_name.rsplit("/", 1)[1]
    return column_partition_prefix(column, partition) + file_index_id(file_name)


def partition_stats_key(column: str, partition: str) -> str:
    """partition_stats record key = the 24-char column+partition prefix."""
    return column_partition_prefix(column, partition)


def files_key(partition: str) -> str:
    """``files`` partition key for a data partition (``"."`` for non-partitioned)."""
    return partition_identifier(partition)


def java_string_hashcode(text: str) -> int:
    """Java ``String.hashCode``: ``h = 31*h + c`` over UTF-16 code units, wrapped to signed int32."""
    h = 0
    if text.isascii():
        for c in text.encode("ascii"):
            h = (31 * h + c) & 0xFFFFFFFF
    else:
        data = text.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def file_group_indices(keys: list[str], num_file_groups: int) -> list[int]:
    """:func:`file_group_index` for many keys; equal-length ASCII keys (column_stats) use numpy."""
    if not keys:
        return []
    length = len(keys[0])
    if all(len(k) == length and k.isascii() for k in keys) and length:
        import numpy as np

        codes = np.frombuffer("".join(keys).encode("ascii"), np.uint8).reshape(len(keys), length)
        h = np.zeros(len(keys), np.uint32)
        for j in range(length):
            h = h * np.uint32(31) + codes[:, j]
        signed = h.astype(np.int64)
        signed = np.where(signed >= 1 << 31, signed - (1 << 32), signed)
        return (np.abs(signed) % num_file_groups).astype(np.int64).tolist()
    return [file_group_index(k, num_file_groups) for k in keys]


def file_group_index(key: str, num_file_groups: int) -> int:
    """``HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex``: ``abs(hash % n)`` with Java semantics.

    Java computes ``Math.abs(Math.abs(h) % n)``; ``Math.abs(Integer.MIN_VALUE)`` is still negative, and
    Java's ``%`` truncates towards zero, so the result is ``|h| mod n`` computed on the magnitude.
    """
    if num_file_groups <= 0:
        raise ValueError(f"num_file_groups must be positive, got {num_file_groups}")
    h = java_string_hashcode(key)
    if h == -(1 << 31):
        # Math.abs(MIN_VALUE) == MIN_VALUE; Java's % keeps the dividend's sign; outer abs fixes it.
        return (1 << 31) % num_file_groups
    return abs(h) % num_file_groups


def file_group_id(mdt_partition: str, index: int) -> str:
    """``<prefix><4-digit index>-0``, e.g. ``col-stats-0001-0`` (§5.2)."""
    prefix = _FILE_ID_PREFIX.get(mdt_partition)
    if prefix is None:
        prefix = mdt_partition.replace("_", "-") + "-"
    return f"{prefix}{index:04d}-0"


def mdt_partition_of_file_group(file_id: str) -> str | None:
    for part, prefix in _FILE_ID_PREFIX.items():
        if file_id.startswith(prefix):
            return part
    return None
