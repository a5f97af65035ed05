"""A sample Merge-on-Read table with every kind of log content, shared by the MOR read and clustering tests."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from hudi_layout.format.log_format import MAGIC
from tests.helpers.mor_builder import Deletes, MorTable, Raw, Rollback, Upserts, make_mor_table, row

#: the sample table's columns: grid points (x, y) to cluster on, ``ts`` the ordering field
FIELDS = (("id", "string"), ("ts", "long"), ("name", "string"), ("x", "long"), ("y", "long"))


def grid_rows(rng: np.random.Generator, keys: range, side: int = 32) -> list[dict[str, Any]]:
    return [row(f"k{i:05d}", 1, x=int(rng.integers(0, side)), y=int(rng.integers(0, side))) for i in keys]


def sample_mor_table(path: Path, *, groups: int = 4, rows_per_group: int = 250, seed: int = 5,
                     column_stats: bool = True, version: int = 9) -> MorTable:
    """``groups`` file groups of random grid points, then 10% updates per file group in Avro and parquet
    blocks, deletes, a rolled-back deltacommit (rollback command block), a corrupt block, and a log-only file
    group. With ``column_stats`` the metadata table indexes base and log files."""
    rng = np.random.default_rng(seed)
    t = make_mor_table(path, fields=FIELDS, column_stats=column_stats, version=version)
    fids = []
    for g in range(groups):
        fids += t.deltacommit(inserts={"": grid_rows(rng, range(g * rows_per_group, (g + 1) * rows_per_group))}
                              ).file_ids
    total = groups * rows_per_group
    for g, fid in enumerate(fids):
        keys = rng.choice(np.arange(g * rows_per_group, (g + 1) * rows_per_group), rows_per_group // 10,
                          replace=False)
        ups = [row(f"k{int(k):05d}", 2, name=f"upd{g}", x=int(rng.integers(0, 32)), y=int(rng.integers(0, 32)))
               for k in keys]
        half = len(ups) // 2
        t.deltacommit(logs={fid: [Upserts(ups[:half]), Upserts(ups[half:], fmt="parquet"),
                                  Deletes([f"k{g * rows_per_group + 1:05d}", f"k{g * rows_per_group + 2:05d}"])]})
    target = t.deltacommit(logs={fids[0]: [Upserts([row("k00000", 9, name="voided", x=99, y=99)])]})
    t.deltacommit(logs={fids[0]: [Rollback(target.instant), Raw(MAGIC + b"\x00" * 7 + b"\x10torn"),
                                  Upserts([row("k00003", 3, name="after-corrupt", x=1, y=1)])]})
    t.deltacommit(log_inserts={"": grid_rows(rng, range(total, total + 50))})
    return t


def hudi_rs_listing_storage(path: Path, tmp: Path) -> pa.Table:
    """hudi-rs's read of a copy of the table without its metadata table: hudi-rs 0.5 lists files from the
    metadata table when there is one and then leaves out log-only file groups (Hudi reads them)."""
    from hudi_layout.metadata.mdt_writer import update_data_table_properties
    from tests.helpers.integration import hudi_rs_read

    copy = tmp / "no-mdt"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(path, copy)
    shutil.rmtree(copy / ".hoodie" / "metadata", ignore_errors=True)
    update_data_table_properties(copy, {"hoodie.table.metadata.partitions": ""})
    return hudi_rs_read(copy)
