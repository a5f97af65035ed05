"""predicate_boxes: examples, and soundness against the row oracle."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_layout.curves import encode_column
from hudi_layout.curves.region import code_box
from hudi_layout.skipping.bind import bind
from hudi_layout.skipping.boxes import Bound, predicate_boxes
from hudi_layout.skipping.oracle import evaluate_rows
from hudi_layout.skipping.sql import from_sql
from tests.unit.skipping.test_skipping_differential import TYPES, draw_predicate

SCHEMA = pa.schema([("port", pa.int32()), ("ip", pa.string()), ("x", pa.float64())])


def boxes(sql: str, columns: tuple[str, ...] = ("port", "ip")) -> list[dict[str, tuple[Bound, ...]]]:
    return predicate_boxes(bind(from_sql(sql), SCHEMA), columns, SCHEMA)


def test_examples() -> None:
    assert boxes("port BETWEEN 1 AND 9") == [{"port": (Bound(">=", 1, pa.int64()), Bound("<=", 9, pa.int64()))}]
    assert boxes("ip LIKE '10.%'") == [{"ip": (Bound("prefix", "10."),)}]
    assert boxes("port IN (1, 2) AND ip = 'a'") == [
        {"port": (Bound("=", 1, pa.int64()),), "ip": (Bound("=", "a", pa.string()),)},
        {"port": (Bound("=", 2, pa.int64()),), "ip": (Bound("=", "a", pa.string()),)}]
    assert boxes("port = 1 OR x > 2") == [{}]
    assert boxes("port = 1 OR ip > 'b'") == [{"port": (Bound("=", 1, pa.int64()),)},
                                             {"ip": (Bound(">", "b", pa.string()),)}]
    assert boxes("NOT (port < 5)") == [{"port": (Bound(">=", 5, pa.int64()),)}]
    for unconstrained in ("port != 3", "port IS NULL", "port NOT IN (1)", "ip NOT LIKE 'a%'", "x < 1",
                          "port <=> NULL", "abs(port) = 1"):
        assert boxes(unconstrained) == [{}], unconstrained
    # a literal compared in another type (Spark widens int vs decimal): a bound, but no code interval
    (box,) = boxes("port = 2.5")
    assert code_box(box, {"port": pa.int32()}) == {}
    for never in ("port = NULL", "port IN (NULL)", "FALSE"):
        assert boxes(never) == [], never
    wide = " OR ".join(f"port = {i}" for i in range(40))
    assert boxes(wide) == [{}]  # too many boxes: unconstrained


def test_and_of_many_boxes_keeps_the_smaller_side() -> None:
    left = "(" + " OR ".join(f"port = {i}" for i in range(8)) + ")"
    right = "(" + " OR ".join(f"ip = 'v{i}'" for i in range(6)) + ")"
    got = boxes(f"{left} AND {right}")
    assert len(got) == 6 and all(set(b) == {"ip"} for b in got)


@st.composite
def case(draw: st.DrawFn) -> tuple[Any, ...]:
    kinds = {"a": draw(st.sampled_from(sorted(TYPES))), "b": draw(st.sampled_from(sorted(TYPES)))}
    n = draw(st.integers(1, 15))
    columns = {k: draw(st.lists(st.one_of(st.none(), TYPES[t][1]), min_size=n, max_size=n)) for k, t in kinds.items()}
    return kinds, columns, draw_predicate(draw, {k: (kinds[k], columns[k]) for k in kinds}), n


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.property
@given(case())
def test_every_matching_row_lies_in_a_box(c: tuple[Any, ...]) -> None:
    kinds, columns, pred, n = c
    arrays = {k: pa.array(columns[k], TYPES[kinds[k]][0]) for k in kinds}
    schema = pa.schema([(k, a.type) for k, a in arrays.items()])
    pred = bind(pred, schema)
    codes = {k: encode_column(a) for k, a in arrays.items()}
    types = {k: a.type for k, a in arrays.items()}
    code_boxes = [code_box(b, types) for b in predicate_boxes(pred, ("a", "b"), schema)]
    rows = [{k: columns[k][i] for k in kinds} for i in range(n)]
    for i, match in enumerate(evaluate_rows(pred, rows)):
        if match:
            assert any(b is not None and all(lo <= int(codes[k][i]) <= hi for k, (lo, hi) in b.items())
                       for b in code_boxes), (pred, rows[i])
