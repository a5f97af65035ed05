"""Curve clustering of base files written by Hudi's own (Java) Spark writer.

The curve path reads base files with pyarrow in the executors (``spark/curve_sort.py``), so files from
another writer — Java Hudi's parquet with its own encodings for timestamps, decimals and dates — must come out
with exactly the same rows. hudi-rs then reads the clustered table and must see the rows of EXPECTED.json.
"""

from __future__ import annotations

import pytest

import hudi_layout
from tests.helpers.clustering import completed_replacecommits, hudi_rs_arrow, hudi_rs_slice_names, our_slice_names

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("zip_name, columns, strategy, method, options", [
    ("cow_v9_txns_simple_nometa.zip", ["amount", "txn_ts"], "z-order", "direct", {}),
    ("cow_v9_txns_simple_nometa.zip", ["account_id", "merchant_name", "txn_date"], "hilbert", "sample", {}),
    ("cow_v9_txns_nonpart_meta.zip", ["txn_datetime", "fee_amount"], "z-order", "sample",
     {"hoodie.metadata.enable": "false"}),
])
def test_curve_clustering_of_java_written_files_keeps_every_row(spark, fixture_table, expected_tables,
                                                                shared_rows_digest, zip_name, columns, strategy,
                                                                method, options):
    path = fixture_table(zip_name)
    expected = expected_tables[zip_name]
    m = hudi_layout.cluster(str(path), columns, spark=spark, strategy=strategy, method=method,
                            options={**options, "hoodie.clustering.plan.strategy.target.file.max.bytes": "2048"})
    assert m is not None and m.records == expected["snapshot_rows"]
    assert m.instant_time in completed_replacecommits(path)
    rows = hudi_rs_arrow(path)
    assert rows.num_rows == expected["snapshot_rows"]
    assert shared_rows_digest(rows) == expected["rows_digest_sha256_16"]
    assert our_slice_names(path) == hudi_rs_slice_names(path)
    ours = hudi_layout.read(str(path), spark=spark).toArrow()
    assert sorted(ours.column("txn_id").to_pylist()) == sorted(rows.column("txn_id").to_pylist())
