"""The report's pictures: value axes (text / number / time), query bounds, panels drawn to PNG."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from hudi_layout.skipping.sql import from_sql
from hudi_layout.tools.layout_pictures import (
    Axis,
    FileBox,
    Panel,
    column_bounds,
    draw_pair_grid,
    draw_partition_grid,
    pairs_of,
    query_pairs,
)


def test_text_axis_places_strings_by_rank_and_labels_ticks_with_them() -> None:
    axis = Axis.for_values("carrier", ["UA", "AA", "DL", "UA", None])
    assert axis.kind == "text" and axis.text_values == ("AA", "DL", "UA")
    assert axis.position("DL") == 1.0
    assert axis.position("B6") == 0.5  # between AA and DL
    assert axis.span("AA", "UA") == (-0.4, 2.4)


def test_number_and_time_axes() -> None:
    num = Axis.for_values("dep_delay", [-5.0, 120.5, float("nan")])
    assert num.kind == "number" and num.position(3) == 3.0 and num.position(float("inf")) is None
    t = Axis.for_values("time_hour", [dt.datetime(2013, 1, 1, 5), dt.datetime(2013, 12, 31, 23)])
    assert t.kind == "time"
    assert t.position(dt.date(2013, 1, 2)) > t.position(dt.datetime(2013, 1, 1, 5))


@pytest.mark.parametrize("where,column,expected", [
    ("carrier = 'UA'", "carrier", ("UA", "UA")),
    ("dep_delay > 60 AND dep_delay <= 120", "dep_delay", (60, 120)),
    ("carrier IN ('AA', 'UA', 'DL')", "carrier", ("AA", "UA")),
    ("carrier = 'UA' OR carrier = 'AA'", "carrier", ("AA", "UA")),
    ("carrier = 'UA' OR dest = 'SFO'", "carrier", None),
    ("dep_delay > 60", "carrier", None),
    ("dest LIKE 'S%'", "dest", ("S", "S\U0010ffff")),
])
def test_column_bounds(where: str, column: str, expected: tuple | None) -> None:
    assert column_bounds(from_sql(where), column) == expected


def test_query_pairs_put_the_query_columns_first() -> None:
    cols = ["carrier", "dest", "dep_delay", "distance"]
    assert len(pairs_of(cols)) == 6
    pairs = query_pairs(from_sql("carrier = 'UA' AND dep_delay > 60"), cols)
    assert pairs[0] == ("carrier", "dep_delay")
    assert all({"carrier", "dep_delay"} & set(p) for p in pairs)


def _boxes() -> list[FileBox]:
    out = []
    for i, (c0, c1) in enumerate([("AA", "B6"), ("DL", "EV"), ("UA", "UA"), ("AA", "UA")]):
        out.append(FileBox(f"f{i}.parquet", "2013/01" if i < 2 else "2013/02",
                           {"carrier": (c0, c1), "delay": (i * 10.0, i * 10.0 + 15),
                            "ts": (dt.datetime(2013, 1, 1 + i), dt.datetime(2013, 1, 2 + i))}))
    return out


def test_pictures_are_written(tmp_path: Path) -> None:
    boxes = tuple(_boxes())
    before = Panel("before", None, boxes)
    after = Panel("after", None, boxes[:2])
    png = draw_pair_grid([after, before], ["carrier", "delay", "ts"], tmp_path / "grid.png", title="t")
    assert png.stat().st_size > 10_000
    query = Panel("after", None, boxes, read=frozenset({"f2.parquet"}), files_in_table=4, read_in_table=1)
    png = draw_pair_grid([query], ["carrier", "delay"], tmp_path / "q.png", title="q",
                         query=from_sql("carrier = 'UA' AND delay > 10"))
    assert png.stat().st_size > 5_000
    parts = [[Panel("after", p, tuple(b for b in boxes if b.partition == p))] for p in ("2013/01", "2013/02")]
    assert draw_partition_grid(parts, "carrier", "delay", tmp_path / "p.png", title="p").is_file()


def test_text_axis_labels_the_query_constants() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axis = Axis.for_values("dest", [f"A{i:02d}" for i in range(40)] + ["ZZZ"])
    fig, ax = plt.subplots()
    axis.style(ax, "y", marks=["A17", "B"])  # one bound value, one between bounds
    labels = [t.get_text() for t in ax.get_yticklabels()]
    plt.close(fig)
    assert "A17" in labels and "B" in labels and len(labels) <= 14
