"""Workloads from Python, files and the query log; column weights; the query log itself."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_layout.clustering.workload import Workload, WorkloadQuery, as_workload
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.table import workload_log

SCHEMA = pa.schema([("src_ip", pa.string()), ("dst_port", pa.int32()), ("payload", pa.string())])


def test_of_texts_pairs_and_queries() -> None:
    w = Workload.of(["src_ip LIKE '10.%'", ("dst_port = 443", 3), WorkloadQuery("WHERE dst_port < 10;", 0.5)])
    assert [q.where for q in w.queries] == ["src_ip LIKE '10.%'", "dst_port = 443", "dst_port < 10"]
    assert [q.weight for q in w.queries] == [1.0, 3.0, 0.5]
    assert w.total_weight == 4.5 and len(w) == 3
    for bad in ("dst_port = 1", [("x = 1", "heavy")], [("x = 1", 0)], [""], [42]):
        with pytest.raises(InvalidArgumentError):
            Workload.of(bad)  # type: ignore[arg-type]


def test_file_format(tmp_path: Path) -> None:
    f = tmp_path / "w.sql"
    f.write_text("# the port queries\n\n2\tdst_port = 443\nWHERE src_ip LIKE '1.%'\n0.5\tdst_port < 1024\n"
                 "src_ip = 'a\tb'\n")
    w = Workload.from_file(f)
    assert [(q.where, q.weight) for q in w.queries] == [
        ("dst_port = 443", 2.0), ("src_ip LIKE '1.%'", 1.0), ("dst_port < 1024", 0.5), ("src_ip = 'a\tb'", 1.0)]
    assert w.queries[0].origin == "w.sql:3"
    assert Workload.from_text(w.to_text()).queries == tuple(
        WorkloadQuery(q.where, q.weight, f"workload:{i}") for i, q in enumerate(w.queries, start=1))
    assert as_workload(str(f)).queries == w.queries and as_workload(w) is w
    (tmp_path / "empty").write_text("# nothing\n")
    with pytest.raises(InvalidArgumentError, match="no predicate"):
        Workload.from_file(tmp_path / "empty")
    with pytest.raises(InvalidArgumentError, match="cannot read"):
        Workload.from_file(tmp_path / "missing")


def test_predicates_name_the_bad_line(tmp_path: Path) -> None:
    f = tmp_path / "w.sql"
    f.write_text("dst_port = 1\nnope = 2\n")
    with pytest.raises(InvalidArgumentError, match=r"w\.sql:2.*nope"):
        Workload.from_file(f).predicates(SCHEMA)
    with pytest.raises(InvalidArgumentError, match="w.sql:1"):
        Workload.from_text("dst_port = = 1", origin="w.sql").predicates(SCHEMA)


def test_column_weights() -> None:
    w = Workload.of(["dst_port = 443", "dst_port < 10 AND src_ip LIKE 'a%'", ("src_ip = 'x'", 2.0)])
    weights = w.column_weights(["src_ip", "dst_port", "payload"], SCHEMA)
    assert weights["payload"] == 1.0
    assert weights["src_ip"] > weights["dst_port"] > 1.0  # src_ip: weight 3 of 4, dst_port: 2 of 4


def test_query_log_round_trip_and_weights(tmp_path: Path) -> None:
    base = tmp_path / "t"
    (base / ".hoodie").mkdir(parents=True)
    for where in ["dst_port = 443", "`src_ip` LIKE '1.%'", "dst_port = 443"]:
        assert workload_log.record(base, where, "read", max_bytes=1 << 20)
    entries = list(workload_log.read_entries(base))
    assert [e.where for e in entries] == ["dst_port = 443", "`src_ip` LIKE '1.%'", "dst_port = 443"]
    with open(workload_log.log_path(base), "a") as fh:
        fh.write("not json\n{\"where\": 3}\n")
    w = Workload.from_log(base)
    assert [(q.where, q.weight) for q in w.queries] == [("dst_port = 443", 2.0), ("`src_ip` LIKE '1.%'", 1.0)]
    assert [(q.where, q.weight) for q in Workload.from_log(base, limit=2).queries] == [
        ("`src_ip` LIKE '1.%'", 1.0), ("dst_port = 443", 1.0)]
    w.predicates(SCHEMA)  # what the log records parses back


def test_query_log_never_raises_and_stops_at_its_cap(tmp_path: Path) -> None:
    assert not workload_log.record(tmp_path / "no_table", "x = 1", "read", max_bytes=1 << 20)
    assert not (tmp_path / "no_table").exists()
    base = tmp_path / "t"
    (base / ".hoodie").mkdir(parents=True)
    assert workload_log.record(base, "x = 1", "read", max_bytes=200)
    assert not workload_log.record(base, "x = 2" * 50, "read", max_bytes=200)
    if os.geteuid() != 0:  # root ignores permissions
        (base / ".hoodie" / ".aux" / "hudi_layout").chmod(0o500)
        assert not workload_log.record(base, "x = 3", "read", max_bytes=1 << 20)
    with pytest.raises(InvalidArgumentError, match="empty"):
        Workload.from_log(tmp_path / "no_table")


def test_a_reports_replay_of_the_log_is_not_a_query(tmp_path: Path) -> None:
    """Each ``report --workload log`` planned every logged predicate again and logged it (source "report"), adding
    one to every weight per run (layout probe, session 32): replays are not recorded, and old replay lines are
    skipped."""
    from hudi_layout.scan.plan import REPLAY_SOURCE, plan_scan
    from tests.helpers.tablemaker import add_commit, make_table

    t = make_table(tmp_path / "t")
    add_commit(t, {"region=us": [100], "region=eu": [50]})
    on = {"hudi_layout.workload.log.enable": "true"}
    plan_scan(str(t.base), "x > 5", options=on)
    plan_scan(str(t.base), "x > 5", options=on, source=REPLAY_SOURCE)
    assert [e.source for e in workload_log.read_entries(t.base)] == ["scan"]
    workload_log.record(t.base, "x > 7", REPLAY_SOURCE, max_bytes=1 << 20)  # a line an older report left
    assert [(q.where, q.weight) for q in Workload.from_log(t.base).queries] == [("(`x` > 5)", 1.0)]
