"""Hudi's meta fields: the five columns a writer puts in front of every record's own columns.

One place for their names; every layer that needs them imports them from here.
"""

from __future__ import annotations

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"

#: In the order Hudi writes them, first in every base file and data block.
META_COLUMNS: tuple[str, ...] = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)
