"""A refused command leaves the table byte for byte as it was, lock file included (session 30's interop probe:
``clean`` of a table whose metadata table we cannot maintain, ``cluster`` of a version-6 table and ``compact`` of a
Merge-on-Read table with such a metadata table created ``.hoodie/.locks/table.lock`` before refusing), and a
clustering preview reports the refusal of the run it previews (it said "would cluster" where the run is refused)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hudi_layout.errors import HudiLayoutError
from hudi_layout.services.cleaning import clean
from hudi_layout.services.clustering import execute_pending, preview_clustering, run_clustering
from hudi_layout.services.compaction import compact
from tests.helpers.integration import tree_snapshot


def _no_spark() -> Any:
    raise AssertionError("a refused command started Spark")


CASES: list[tuple[str, str, Callable[[str], Any]]] = [
    ("cow_v9_txns_simple_meta.zip", "clean", lambda p: clean(p, {})),
    ("cow_v9_txns_simple_meta.zip", "preview", lambda p: preview_clustering(p, ["txn_ts"])),
    ("cow_v9_txns_simple_meta.zip", "schedule", lambda p: run_clustering(_no_spark, p, ["txn_ts"],
                                                                         schedule_only=True)),
    ("cow_v9_txns_simple_meta.zip", "execute_pending", lambda p: execute_pending(None, p)),  # type: ignore[arg-type]
    ("cow_v6_nonpartitioned.zip", "cluster", lambda p: run_clustering(_no_spark, p, ["id"], schedule_only=True)),
    ("mor_avro_v9_txns_simple_meta.zip", "compact", lambda p: compact(None, p)),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("zip_name", "what", "run"), CASES, ids=[f"{c[1]}-{c[0][:-4]}" for c in CASES])
def test_a_refused_command_leaves_the_table_as_it_was(fixture_table, zip_name, what, run) -> None:
    path = str(fixture_table(zip_name))
    before = tree_snapshot(path)
    with pytest.raises(HudiLayoutError):
        run(path)
    assert tree_snapshot(path) == before, what
