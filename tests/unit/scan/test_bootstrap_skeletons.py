"""Hudi's metadata bootstrap: base files of instant 00000000000001 hold the meta columns only (the data stays in
the bootstrap source files). hudi_layout reads columns from base files, so it refuses them (session 18: before,
every data column read as NULL and an upsert or clustering would have stored the NULLs)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_layout as hl
from hudi_layout.errors import UnsupportedTableError
from hudi_layout.format.capabilities import METADATA_BOOTSTRAP_INSTANT, bootstrap_skeleton_refusal
from hudi_layout.format.commit_metadata import commit_metadata_bytes, decode_commit_metadata
from tests.helpers.live_ops import run_write


def test_only_base_files_of_the_metadata_bootstrap_instant_are_skeletons():
    ours = "183610e4-76b5-484c-9f0c-704f16c3ff6d-0_0-0-0_20261127180322106.parquet"
    skeleton = f"183610e4-76b5-484c-9f0c-704f16c3ff6d-0_0-0-0_{METADATA_BOOTSTRAP_INSTANT}.parquet"
    full_bootstrap = "183610e4-76b5-484c-9f0c-704f16c3ff6d-0_0-0-0_00000000000002.parquet"
    assert bootstrap_skeleton_refusal([ours, full_bootstrap, ""], "read") is None
    why = bootstrap_skeleton_refusal([ours, skeleton], "read")
    assert why is not None and skeleton in why.message and "bootstrap" in why.message


def test_a_table_with_skeleton_base_files_is_refused_by_reads(tmp_path: Path):
    base = tmp_path / "t"
    run_write(str(base), pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}),
              {"hoodie.table.name": "s", "hoodie.datasource.write.recordkey.field": "id",
               "hoodie.metadata.enable": "false"})
    assert hl.explain(str(base), "v = 'a'").candidate_files
    # the same files as a metadata bootstrap would name them (instant 00000000000001 on the timeline)
    (instant,) = {p.name.split("_")[0] for p in (base / ".hoodie" / "timeline").glob("*_*.commit")}
    for p in list((base / ".hoodie" / "timeline").iterdir()) + list(base.glob("*.parquet")):
        p.rename(p.with_name(p.name.replace(instant, METADATA_BOOTSTRAP_INSTANT, 1)))
    (commit,) = (base / ".hoodie" / "timeline").glob("*_*.commit")  # and the files its metadata lists
    text = json.dumps(decode_commit_metadata(commit.read_bytes()))
    meta = json.loads(text.replace(instant, METADATA_BOOTSTRAP_INSTANT))
    commit.write_bytes(commit_metadata_bytes(meta, 9))
    with pytest.raises(UnsupportedTableError, match="metadata bootstrap"):
        hl.explain(str(base), "v = 'a'")
