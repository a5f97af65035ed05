"""The per-file-group merge of upserts and deletes (hudi_layout.writer.merge), without Spark or files:
commit / event time, ties, nulls, several ordering fields, soft and hard deletes, row order, meta columns;
plus a property test against a plain-Python model."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_layout.format.merge_config import MergeMode
from hudi_layout.writer.base_file_writer import WriterInputError
from hudi_layout.writer.merge import DELETE_FLAG_COLUMN, MergeRules, merge_rows, stored_wins

COMMIT = MergeRules(MergeMode.COMMIT_TIME_ORDERING)
EVENT = MergeRules(MergeMode.EVENT_TIME_ORDERING, ("ts",))
T = "20260101000000000"


def stored(keys, ts, vals, commit="20250101000000000") -> pa.Table:
    n = len(keys)
    s = pa.string()
    return pa.table({
        "_hoodie_commit_time": pa.array([commit] * n, s),
        "_hoodie_commit_seqno": pa.array([f"{commit}_0_{i}" for i in range(n)], s),
        "_hoodie_record_key": pa.array(keys, s), "_hoodie_partition_path": pa.array(["p"] * n, s),
        "_hoodie_file_name": pa.array(["old.parquet"] * n, s), "ts": pa.array(ts, pa.int64()),
        "v": pa.array(vals, s)})


def incoming(keys, ts, vals, deletes=None) -> pa.Table:
    n = len(keys)
    s = pa.string()
    return pa.table({"ts": pa.array(ts, pa.int64()), "v": pa.array(vals, s), "_hoodie_record_key": pa.array(keys, s),
                     "_hoodie_partition_path": pa.array(["p"] * n, s),
                     DELETE_FLAG_COLUMN: pa.array(deletes or [False] * n, pa.bool_())})


def run(s, i, rules=COMMIT):
    return merge_rows(s, i, rules, instant_time=T, file_name="new.parquet", seqno_prefix=f"{T}_3_", first_seqno=7)


def test_commit_time_replaces_in_place_and_keeps_untouched_meta() -> None:
    s = stored(["a", "b", "c"], [5, 5, 5], ["A", "B", "C"])
    out = run(s, incoming(["c", "a"], [1, 1], ["C2", "A2"]))
    assert (out.updated, out.deleted) == (2, 0)
    t = out.table
    assert t.column("_hoodie_record_key").to_pylist() == ["a", "b", "c"]  # stored order kept
    assert t.column("v").to_pylist() == ["A2", "B", "C2"]
    assert t.column("_hoodie_commit_time").to_pylist() == [T, "20250101000000000", T]
    seq = t.column("_hoodie_commit_seqno").to_pylist()
    assert seq[1] == "20250101000000000_0_1" and {seq[0], seq[2]} == {f"{T}_3_7", f"{T}_3_8"}
    assert set(t.column("_hoodie_file_name").to_pylist()) == {"new.parquet"}
    assert t.schema == s.schema


def test_event_time_keeps_larger_stored_value_and_ties_go_to_the_incoming_record() -> None:
    s = stored(["a", "b", "c"], [5, 5, 5], ["A", "B", "C"])
    out = run(s, incoming(["a", "b", "c"], [4, 5, 6], ["A2", "B2", "C2"]), EVENT)
    assert out.table.column("v").to_pylist() == ["A", "B2", "C2"]
    assert out.updated == 2


def test_nothing_changes_when_every_record_loses() -> None:
    s = stored(["a"], [9], ["A"])
    out = run(s, incoming(["a"], [1], ["A2"]), EVENT)
    assert out.table is None and out.updated == out.deleted == 0


def test_nulls_are_lowest_and_equal_to_each_other() -> None:
    s = stored(["a", "b", "c"], [None, 3, None], ["A", "B", "C"])
    out = run(s, incoming(["a", "b", "c"], [1, None, None], ["A2", "B2", "C2"]), EVENT)
    # a: null < 1 -> incoming; b: 3 > null -> stored; c: null == null -> tie -> incoming
    assert out.table.column("v").to_pylist() == ["A2", "B", "C2"]


def test_several_ordering_fields_compare_like_a_tuple() -> None:
    a = pa.table({"x": [1, 1, 2], "y": [5, 5, 0]})
    b = pa.table({"x": [1, 1, 1], "y": [4, 6, 9]})
    assert stored_wins(a, b, ("x", "y")).tolist() == [True, False, True]


def test_soft_delete_takes_part_in_the_ordering_and_hard_delete_always_wins() -> None:
    s = stored(["a", "b"], [5, 5], ["A", "B"])
    soft = run(s, incoming(["a", "b"], [4, 6], ["-", "-"], deletes=[True, True]), EVENT)
    assert soft.table.column("_hoodie_record_key").to_pylist() == ["a"] and soft.deleted == 1
    hard_rules = MergeRules(MergeMode.EVENT_TIME_ORDERING, ("ts",), hard_deletes=True)
    hard = run(s, incoming(["a", "b"], [0, 0], ["-", "-"], deletes=[True, True]), hard_rules)
    assert hard.table.num_rows == 0 and hard.deleted == 2 and hard.table.schema == s.schema


def test_delete_only_records_need_no_data_columns() -> None:
    s = stored(["a", "b"], [1, 2], ["A", "B"])
    keys_only = pa.table({"_hoodie_record_key": ["b"], "_hoodie_partition_path": ["p"], DELETE_FLAG_COLUMN: [True]})
    out = run(s, keys_only, MergeRules(MergeMode.COMMIT_TIME_ORDERING, hard_deletes=True))
    assert out.table.column("v").to_pylist() == ["A"]


def test_a_key_stored_twice_has_every_copy_updated() -> None:
    s = stored(["a", "x", "a"], [1, 1, 1], ["A1", "X", "A2"])
    out = run(s, incoming(["a"], [2], ["new"]))
    assert out.table.column("v").to_pylist() == ["new", "X", "new"] and out.updated == 2


def test_a_tagged_key_missing_from_the_file_is_an_error() -> None:
    with pytest.raises(WriterInputError, match="not found in their base file"):
        run(stored(["a"], [1], ["A"]), incoming(["zz"], [1], ["Z"]))


def test_incoming_types_are_conformed_to_the_stored_file() -> None:
    s = stored(["a"], [1], ["A"])
    i = incoming(["a"], [2], ["B"]).set_column(0, "ts", pa.array([2], pa.int32()))
    out = run(s, i)
    assert out.table.schema.field("ts").type == pa.int64() and out.table.column("ts").to_pylist() == [2]


# -- property: the merge equals a plain-Python model ------------------------------------------------------------

@st.composite
def cases(draw):
    keys = draw(st.lists(st.sampled_from("abcdefgh"), min_size=0, max_size=10))
    s_ts = draw(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=len(keys), max_size=len(keys)))
    touched = draw(st.lists(st.sampled_from(sorted(set(keys)) or ["a"]), unique=True, max_size=len(set(keys))))
    touched = [k for k in touched if k in keys]
    i_ts = draw(st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=len(touched), max_size=len(touched)))
    dels = draw(st.lists(st.booleans(), min_size=len(touched), max_size=len(touched)))
    mode = draw(st.sampled_from([COMMIT, EVENT, MergeRules(MergeMode.EVENT_TIME_ORDERING, ("ts",), True)]))
    return keys, s_ts, touched, i_ts, dels, mode


def _model(keys, s_ts, touched, i_ts, dels, rules):
    incoming_by = {k: (t, d, f"new-{k}") for k, t, d in zip(touched, i_ts, dels)}
    out = []
    for i, (k, t) in enumerate(zip(keys, s_ts)):
        if k not in incoming_by:
            out.append((k, f"old-{i}"))
            continue
        it, d, v = incoming_by[k]
        # a delete without an ordering value wins whatever the stored one (Hudi's default ordering value)
        natural_delete = d and it is None
        lose = rules.event_time and not (d and rules.hard_deletes) and not natural_delete and (
            (t is not None and it is None) or (t is not None and it is not None and t > it))
        if lose:
            out.append((k, f"old-{i}"))
        elif not d:
            out.append((k, v))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
@pytest.mark.property
def test_merge_matches_a_plain_model(case) -> None:
    keys, s_ts, touched, i_ts, dels, rules = case
    s = stored(keys, s_ts, [f"old-{i}" for i in range(len(keys))])
    i = incoming(touched, i_ts, [f"new-{k}" for k in touched], dels)
    out = run(s, i, rules)
    want = _model(keys, s_ts, touched, i_ts, dels, rules)
    got = list(zip(out.table.column("_hoodie_record_key").to_pylist(), out.table.column("v").to_pylist())) \
        if out.table is not None else [(k, f"old-{n}") for n, k in enumerate(keys)]
    assert got == want
    if out.table is not None:
        changed = [ct == T for ct in out.table.column("_hoodie_commit_time").to_pylist()]
        assert sum(changed) == out.updated
        assert len(keys) - out.table.num_rows == out.deleted


def test_combine_keeps_one_record_per_partition_and_key() -> None:
    from hudi_layout.writer.merge import SEQUENCE_COLUMN, combine_records

    t = pa.table({"_hoodie_record_key": ["k", "k", "k", "k", "j"], "_hoodie_partition_path": ["a", "a", "b", "a", "a"],
                  "ts": pa.array([2, None, 1, 2, 0], pa.int64()), "v": ["x", "y", "z", "w", "q"],
                  SEQUENCE_COLUMN: pa.array([0, 1, 2, 3, 4], pa.int64())})
    got = combine_records(t, EVENT)
    assert sorted(zip(got.column("_hoodie_partition_path").to_pylist(), got.column("_hoodie_record_key").to_pylist(),
                      got.column("v").to_pylist())) == [("a", "j", "q"), ("a", "k", "w"), ("b", "k", "z")]
    # commit time: only the position counts
    got = combine_records(t, COMMIT)
    assert dict(zip(zip(got.column("_hoodie_partition_path").to_pylist(), got.column("_hoodie_record_key").to_pylist()),
                    got.column("v").to_pylist()))[("a", "k")] == "w"
    t2 = t.set_column(4, SEQUENCE_COLUMN, pa.array([5, 1, 2, 0, 4], pa.int64()))
    assert "x" in combine_records(t2, EVENT).column("v").to_pylist()  # a tie on ts goes to the later record


def test_an_incoming_negative_zero_replaces_a_stored_zero() -> None:
    s = stored(["a"], [5], ["A"]).append_column("d", pa.array([0.0], pa.float64()))
    i = incoming(["a"], [5], ["A"]).append_column("d", pa.array([-0.0], pa.float64()))
    out = run(s, i)
    assert str(out.table.column("d")[0].as_py()) == "-0.0"


def test_null_and_value_are_not_the_same() -> None:
    s = stored(["a", "b"], [None, 1], ["A", None])
    out = run(s, incoming(["a", "b"], [None, 1], ["A", "now set"]))
    assert out.table.column("v").to_pylist() == ["A", "now set"] and out.table.column("ts").to_pylist() == [None, 1]


def test_natural_deletes_in_a_batch_fold_as_the_read_path_folds_log_records() -> None:
    """Event time: a delete without an ordering value (``_hoodie_is_deleted`` and a null ``ts``) discards the
    key's earlier records of the batch whatever their ``ts`` and wins over the stored record; a record after it
    starts the comparison again (and then meets the stored record as usual)."""
    from hudi_layout.writer.merge import DELETE_FLAG_COLUMN, SEQUENCE_COLUMN, combine_records

    def batch(rows):
        return pa.table({"_hoodie_record_key": [r[0] for r in rows], "_hoodie_partition_path": ["p"] * len(rows),
                         "ts": pa.array([r[1] for r in rows], pa.int64()), "v": [r[2] for r in rows],
                         DELETE_FLAG_COLUMN: [r[3] for r in rows],
                         SEQUENCE_COLUMN: pa.array(range(len(rows)), pa.int64())})

    got = combine_records(batch([("k", 9, "x", False), ("k", None, None, True), ("j", 1, "j", False)]), EVENT)
    assert sorted(zip(got.column("_hoodie_record_key").to_pylist(), got.column(DELETE_FLAG_COLUMN).to_pylist())) \
        == [("j", False), ("k", True)]
    got = combine_records(batch([("k", 9, "x", False), ("k", None, None, True), ("k", 2, "y", False)]), EVENT)
    assert got.column("v").to_pylist() == ["y"]  # the record after the delete, though its ts is lower than 9
    s = stored(["k"], [8], ["old"])
    out = run(s, incoming(["k"], [None], [None], [True]), EVENT)
    assert out.table is not None and out.table.num_rows == 0 and out.deleted == 1
    out = run(s, incoming(["k"], [7], ["new"], [True]), EVENT)  # a delete with an older ts loses as before
    assert out.table is None
