"""Curve-region pruning never drops a file holding a matching row (differential, against the row oracle).

Random rows of two columns of random types (nulls, NaN, strings sharing 8-byte prefixes...) are laid out
along a z-order or Hilbert curve (min/max ranges or sampled bounds, equal or unequal bits, coarsened stored
bounds), cut into files of consecutive keys, and each file's key range is recorded as a clustering commit
records it. A random predicate tree goes through :func:`files_outside_region`; every file it drops must hold
no row the oracle (Spark semantics) matches.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_layout.curves import curve_key_from_codes, encode_column, encoded_range, sample_bounds
from hudi_layout.curves.region import ColumnReduction, CurveRegions, CurveShape, encoding_family
from hudi_layout.scan.curve_region import files_outside_region
from hudi_layout.skipping.bind import bind
from hudi_layout.skipping.oracle import evaluate_rows
from hudi_layout.skipping.sql import from_sql
from tests.unit.skipping.test_skipping_differential import TYPES, draw_predicate

# bool columns have two values: curves over them are legal but dull; keep them, they test the edges
KINDS = sorted(TYPES)


@st.composite
def laid_out(draw: st.DrawFn) -> dict[str, Any]:
    kinds = {"a": draw(st.sampled_from(KINDS)), "b": draw(st.sampled_from(KINDS))}
    n = draw(st.integers(1, 60))
    columns = {name: draw(st.lists(st.one_of(st.none(), TYPES[kind][1]) if draw(st.booleans()) else TYPES[kind][1],
                                   min_size=n, max_size=n)) for name, kind in kinds.items()}
    curve = draw(st.sampled_from(["zorder", "hilbert"]))
    bits = draw(st.sampled_from([(2, 2), (3, 3), (4, 2), (2, 5), (8, 8)]))
    method = draw(st.sampled_from(["range", "bounds"]))
    keep = draw(st.sampled_from([1, 3, 1024]))  # stored bounds: heavily coarsened to exact
    files = draw(st.integers(1, 12))
    pred = draw_predicate(draw, {k: (kinds[k], columns[k]) for k in kinds})
    return {"kinds": kinds, "columns": columns, "curve": curve, "bits": bits, "method": method, "keep": keep,
            "files": files, "pred": pred, "n": n}


def _check(case: dict[str, Any]) -> None:
    kinds, columns, n = case["kinds"], case["columns"], case["n"]
    arrays = {k: pa.array(columns[k], TYPES[kinds[k]][0]) for k in kinds}
    schema = pa.schema([(k, arrays[k].type) for k in kinds])
    codes = [encode_column(arrays[k]) for k in ("a", "b")]
    bits = case["bits"]
    if case["method"] == "range":
        ranges = [encoded_range(arrays[k]) for k in ("a", "b")]
        keys = curve_key_from_codes(codes, curve=case["curve"], bits_per_column=bits, ranges=ranges)
        reductions = tuple(ColumnReduction.from_range(r) for r in ranges)
    else:
        bounds = [sample_bounds(c, b) for c, b in zip(codes, bits)]
        keys = curve_key_from_codes(codes, curve=case["curve"], bits_per_column=bits, bounds=bounds)
        reductions = tuple(ColumnReduction.from_bounds(b, keep=case["keep"]) for b in bounds)
    order = np.argsort(keys, kind="stable")
    cuts = np.array_split(order, min(case["files"], n))
    names = [f"f{i}" for i in range(len(cuts))]
    regions = CurveRegions(columns=("a", "b"), types=tuple(encoding_family(arrays[k].type) for k in ("a", "b")),
                           shape=CurveShape(case["curve"], bits), reductions=reductions,
                           files={nm: (int(keys[c].min()), int(keys[c].max())) for nm, c in zip(names, cuts)})
    pred = bind(case["pred"], schema)
    dropped = files_outside_region(pred, regions, names, schema)
    assert dropped is not None
    rows = [{k: columns[k][i] for k in kinds} for i in range(n)]
    matches = evaluate_rows(pred, rows)
    for f in dropped:
        hit = [i for i in cuts[f] if matches[i]]
        assert not hit, f"file {names[f]} was dropped ({dropped[f]}) but rows {hit} match {pred}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@pytest.mark.property
@given(laid_out())
def test_curve_region_never_drops_a_file_with_a_matching_row(case: dict[str, Any]) -> None:
    _check(case)


def test_it_does_drop_files_on_a_grid() -> None:
    """Not vacuous: on a 64 x 64 grid in 16 Hilbert files (16 x 16 blocks), a small box keeps one file."""
    ys, xs = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    a, b = pa.array(ys.ravel()), pa.array(xs.ravel())
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())])
    ranges = [encoded_range(a), encoded_range(b)]
    keys = curve_key_from_codes([encode_column(a), encode_column(b)], curve="hilbert", bits_per_column=6,
                                ranges=ranges)
    order = np.argsort(keys)
    cuts = np.array_split(order, 16)
    names = [f"f{i}" for i in range(16)]
    regions = CurveRegions(("a", "b"), ("signed", "signed"), CurveShape("hilbert", (6, 6)),
                           tuple(ColumnReduction.from_range(r) for r in ranges),
                           {nm: (int(keys[c].min()), int(keys[c].max())) for nm, c in zip(names, cuts)})
    pred = bind(from_sql("a BETWEEN 20 AND 21 AND b BETWEEN 34 AND 37"), schema)
    dropped = files_outside_region(pred, regions, names, schema)
    assert dropped is not None and len(dropped) == 15  # the box lies inside one 16 x 16 Hilbert file
    assert "curve region" in next(iter(dropped.values()))
    # a changed column type (another code space) disables the step rather than judging with stale codes
    assert files_outside_region(pred, regions, names, pa.schema([("a", pa.float64()), ("b", pa.int64())])) is None
    # OR with an unconstrained side keeps everything; an unsatisfiable box drops everything
    wider = schema.append(pa.field("c", pa.int64()))
    assert files_outside_region(bind(from_sql("a = 3 OR c = 1"), wider), regions, names, wider) == {}
    assert len(files_outside_region(bind(from_sql("a > 5 AND a < 3"), schema), regions, names, schema) or {}) == 16
