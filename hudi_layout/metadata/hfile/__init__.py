"""HFile v3 reader and writer (the file format of Hudi's metadata table). Spec: ``hudi-format-notes.md`` §6."""

from __future__ import annotations

from .reader import HFileReader, read_hfile_items
from .trailer import HFileTrailer

__all__ = ["HFileReader", "HFileTrailer", "read_hfile_items"]
