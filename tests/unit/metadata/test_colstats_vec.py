"""The vectorised column_stats decoder agrees with the per-record reference on random records."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_layout.metadata import keys as K
from hudi_layout.metadata import records as R
from hudi_layout.metadata.column_stats_index import ColumnStatsIndex
from hudi_layout.metadata.stats_values import value_type_for_arrow

TYPES = {
    "int32": (pa.int32(), st.integers(-2**31, 2**31 - 1)),
    "int64": (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    "float32": (pa.float32(), st.floats(width=32, allow_nan=False)),
    "float64": (pa.float64(), st.floats(allow_nan=False)),
    "string": (pa.string(), st.text(max_size=40)),
    "binary": (pa.binary(), st.binary(max_size=20)),
    "bool": (pa.bool_(), st.booleans()),
    "date": (pa.date32(), st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1))),
    "ts": (pa.timestamp("us", tz="UTC"), st.integers(-2**55, 2**55)),  # within datetime range
    "dec": (pa.decimal128(20, 3), st.decimals(min_value=-10**16, max_value=10**16, places=3,
                                              allow_nan=False, allow_infinity=False)),
}


class _NoReader:
    """ColumnStatsIndex without a table: only the decoding helpers are exercised."""

    def has_partition(self, name: str) -> bool:
        return False


def _index() -> ColumnStatsIndex:
    idx = ColumnStatsIndex.__new__(ColumnStatsIndex)
    idx.base_path = Path(".")
    idx.reader = _NoReader()  # type: ignore[assignment]
    idx._partition_by_id = {K.partition_index_id("p").encode(): "p"}
    return idx


@pytest.mark.parametrize("name", sorted(TYPES))
@pytest.mark.parametrize("version", [8, 9])
def test_vectorised_matches_reference(name: str, version: int) -> None:
    typ, values = TYPES[name]
    if name == "dec" and version == 8:  # V1 DecimalWrapper is decimal(30,15): at most 15 integer digits
        values = st.decimals(min_value=-10**14, max_value=10**14, places=3, allow_nan=False, allow_infinity=False)

    @settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
    @pytest.mark.property
    @given(st.lists(st.tuples(st.one_of(st.none(), values), st.one_of(st.none(), values),
                              st.integers(0, 2**40), st.integers(0, 2**40), st.booleans()),
                    min_size=1, max_size=30))
    def check(rows) -> None:
        info = value_type_for_arrow(typ)
        keys, vals = [], []
        for i, (lo, hi, nc, vc, deleted) in enumerate(rows):
            if deleted:
                rec = R.column_stats_tombstone("p", f"f{i}.parquet", "c", 2 if version >= 9 else 1)
            else:
                rec = R.column_stats_record("p", f"f{i}.parquet", "c", lo, hi, nc, vc, 1, 2,
                                            value_type=info, index_version=2 if version >= 9 else 1)
            keys.append(rec.key.encode())
            vals.append(R.encode_record(rec, version))
        idx = _index()
        fast = idx._vectorised(keys, vals, version)
        ref = idx._slow(keys, vals, version)
        assert fast.num_rows == ref.num_rows == sum(1 for r in rows if not r[4])
        if fast.num_rows:
            assert fast.column("min").type == ref.column("min").type or ref.column("min").null_count == ref.num_rows
            for a, b in zip(fast.to_pylist(), ref.to_pylist()):
                for k in a:
                    x, y = a[k], b[k]
                    if isinstance(x, float) and isinstance(y, float):
                        assert x == y or (x != x and y != y)
                    elif isinstance(x, decimal.Decimal) and isinstance(y, decimal.Decimal):
                        assert x == y
                    else:
                        assert x == y, (k, x, y)

    check()
