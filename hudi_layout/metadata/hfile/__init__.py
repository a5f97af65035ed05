"""HFile v3 reader and writer (the file format of Hudi's metadata table). Spec: ``docs/hudi-format.md`` §6.

- :class:`HFileReader` reads a path or bytes (HFiles are embedded in MDT log blocks, §5.8);
- :class:`HFileWriter` / :func:`write_hfile` write HBase-2.4-compatible files (§6.9).
"""

from __future__ import annotations

from hudi_layout.metadata.hfile.index import IndexEntry
from hudi_layout.metadata.hfile.reader import HFileReader, prefix_successor, read_hfile_items
from hudi_layout.metadata.hfile.trailer import HUDI_COMPARATOR, HFileTrailer
from hudi_layout.metadata.hfile.writer import HFileWriter, write_hfile

__all__ = [
    "HUDI_COMPARATOR",
    "HFileReader",
    "HFileTrailer",
    "HFileWriter",
    "IndexEntry",
    "prefix_successor",
    "read_hfile_items",
    "write_hfile",
]
