"""Merge-on-Read file slices in pure Python: table config, block selection, merge rules, fixtures, hudi-rs.

Hand-made tables (``tests/helpers/mor_builder.py``) are read by our merge and by hudi-rs and compared; where
hudi-rs cannot read a case (several ordering fields) the expected rows follow Hudi's documented rules.
A differential property test checks :func:`merge_blocks` against a plain-Python model of those rules.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.errors import CorruptFileError, InvalidArgumentError, UnsupportedTableError
from hudi_layout.format.log_blocks import (
    NATURAL_ORDER,
    OrderingValue,
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
    encode_rollback_block,
)
from hudi_layout.format.log_format import MAGIC, BlockType, HeaderKey, encode_block, iter_blocks
from hudi_layout.format.meta_fields import META_COLUMNS
from hudi_layout.scan.merge import (
    InstantRange,
    MergeMode,
    MergeSpec,
    SelectedBlock,
    iter_merge_blocks,
    iter_merge_file_slice,
    merge_blocks,
    merge_config,
    merge_file_slice,
    merge_spec_for_table,
    ordered_log_files,
    select_blocks,
    table_output_schema,
)
from hudi_layout.table.hudi_table import HudiTable
from tests.helpers.mor_builder import Deletes, MorTable, Raw, Rollback, Upserts, make_mor_table, row

EVENT, COMMIT = MergeMode.EVENT_TIME_ORDERING, MergeMode.COMMIT_TIME_ORDERING
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"

# ---------------------------------------------------------------------------------------------- helpers

DATA_FIELDS = [("id", "string"), ("ts", "long"), ("name", "string"), ("_hoodie_is_deleted", "boolean")]


def _avro(fields: Sequence[tuple[str, str]], meta: bool = True) -> str:
    cols = [(c, "string") for c in META_COLUMNS] if meta else []
    return json.dumps({"type": "record", "name": "t_record", "namespace": "hoodie.t",
                       "fields": [{"name": n, "type": ["null", t], "default": None} for n, t in cols + list(fields)]})


BLOCK_SCHEMA = _avro(DATA_FIELDS)
SCHEMA = table_output_schema(_avro(DATA_FIELDS, meta=False))


def rec(key: str, ts: int | None, instant: str = "i1", name: str | None = None, deleted: bool | None = None) -> dict:
    return {"_hoodie_commit_time": instant, "_hoodie_commit_seqno": f"{instant}_0", "_hoodie_record_key": key,
            "_hoodie_partition_path": "", "_hoodie_file_name": "f", "id": key, "ts": ts,
            "name": name if name is not None else f"{key}@{instant}", "_hoodie_is_deleted": deleted}


def base_of(*rows: dict) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=SCHEMA)


def avro(instant: str, *rows: dict) -> bytes:
    return encode_avro_data_block(instant, BLOCK_SCHEMA, rows)


def parquet(instant: str, *rows: dict) -> bytes:
    return encode_parquet_data_block(instant, BLOCK_SCHEMA, pa.Table.from_pylist(list(rows), schema=SCHEMA))


def delete(instant: str, *keys: tuple[str, OrderingValue | None] | str) -> bytes:
    entries = [(k, "", NATURAL_ORDER) if isinstance(k, str) else (k[0], "", k[1]) for k in keys]
    return encode_delete_block(instant, entries)


def long_(v: int) -> OrderingValue:
    return OrderingValue("LongWrapper", v)


def selected(*raws: bytes, source: str = "f.log") -> list[SelectedBlock]:
    return [SelectedBlock(b, source) for raw in raws for b in iter_blocks(raw)]


def spec(mode: MergeMode = EVENT, instants: Sequence[str] = ("i1", "i2", "i3", "i4", "i5", "i6"),
         **kw: Any) -> MergeSpec:
    kw.setdefault("ordering_fields", ("ts",) if mode is EVENT else ())
    return MergeSpec(schema=kw.pop("schema", SCHEMA), merge_mode=mode, committed_instants=frozenset(instants), **kw)


def merged(base: pa.Table | None, raws: Sequence[bytes], s: MergeSpec) -> dict[str, tuple]:
    sel = select_blocks([("f.log", list(iter_blocks(b"".join(raws))))], s)
    out = merge_blocks(base, sel.blocks, s)
    return {r["id"]: (r["ts"], r["name"]) for r in out.to_pylist()}


def data_rows(table: pa.Table, columns: Sequence[str]) -> list[dict]:
    return sorted(table.select(list(columns)).to_pylist(), key=lambda r: str(r["id"]))


def assert_same_as_hudi_rs(t: MorTable, **kw: Any) -> list[dict]:
    ours = data_rows(t.read_ours(**kw), t.data_columns)
    theirs = data_rows(t.read_hudi_rs(**kw), t.data_columns)
    assert ours == theirs
    return ours


# ---------------------------------------------------------------------------------------------- table config


def _props(version: int = 9, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.table.version": str(version), **extra}


def test_merge_config_v9_modes_and_inference() -> None:
    assert merge_config(_props(**{"hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                                  "hoodie.table.ordering.fields": "ts, seq"})) == (EVENT, ("ts", "seq"))
    assert merge_config(_props(**{"hoodie.record.merge.mode": "commit_time_ordering"})) == (COMMIT, ())
    assert merge_config(_props(8, **{"hoodie.table.precombine.field": "ts"})) == (EVENT, ("ts",))
    assert merge_config(_props()) == (COMMIT, ())


def test_merge_config_v6_payload_classes() -> None:
    assert merge_config(_props(6, **{"hoodie.compaction.payload.class": DEFAULT_PAYLOAD,
                                     "hoodie.table.precombine.field": "ts"})) == (EVENT, ("ts",))
    assert merge_config(_props(6, **{"hoodie.compaction.payload.class": LATEST_PAYLOAD})) == (COMMIT, ())
    assert merge_config(_props(6))[0] is COMMIT  # Hudi 0.x's default payload
    with pytest.raises(UnsupportedTableError, match="PartialUpdateAvroPayload"):
        merge_config(_props(6, **{"hoodie.compaction.payload.class":
                                  "org.apache.hudi.common.model.PartialUpdateAvroPayload"}))
    with pytest.raises(UnsupportedTableError, match="merger strategy"):
        merge_config(_props(6, **{"hoodie.compaction.record.merger.strategy": "1234"}))


@pytest.mark.parametrize("extra, match", [
    ({"hoodie.record.merge.mode": "CUSTOM", "hoodie.record.merge.strategy.id": "my-merger"}, "CUSTOM.*my-merger"),
    ({"hoodie.record.merge.mode": "EVENT_TIME_ORDERING"}, "without an ordering field"),
    ({"hoodie.populate.meta.fields": "false"}, "populate.meta.fields=false"),
    ({"hoodie.table.partial.update.mode": "IGNORE_DEFAULTS"}, "partial updates"),
    ({"hoodie.payload.delete.field": "op"}, "custom delete markers"),
])
def test_merge_config_refusals(extra: dict[str, str], match: str) -> None:
    with pytest.raises(UnsupportedTableError, match=match) as info:
        merge_config(_props(**extra))
    assert info.value.hint


def test_merge_spec_validation() -> None:
    with pytest.raises(InvalidArgumentError, match="ordering field"):
        MergeSpec(schema=SCHEMA, merge_mode=EVENT, ordering_fields=("nope",))
    with pytest.raises(InvalidArgumentError, match="needs at least one ordering field"):
        MergeSpec(schema=SCHEMA, merge_mode=EVENT)
    with pytest.raises(InvalidArgumentError, match="unknown column"):
        MergeSpec(schema=SCHEMA, merge_mode=COMMIT, columns=("nope",))
    with pytest.raises(InvalidArgumentError, match="_hoodie_record_key"):
        MergeSpec(schema=pa.schema([("id", pa.string())]), merge_mode=COMMIT)


def test_merge_spec_is_picklable_and_committed_rule() -> None:
    import pickle

    s = spec(timeline_start="i3", uncommitted_instants=frozenset({"i0"}), instants=("i5",))
    assert pickle.loads(pickle.dumps(s)) == s
    assert s.is_committed("i5") and s.is_committed("i2")  # older than the active timeline: archived
    assert not s.is_committed("i0") and not s.is_committed("i4")


# ---------------------------------------------------------------------------------------------- block selection


def _instants(sel) -> list[str]:
    return [b.instant_time for b in sel.blocks]


def test_selection_skips_corrupt_uncommitted_late_and_out_of_range_blocks() -> None:
    raw = b"".join([avro("i1", rec("a", 1)), MAGIC + b"\x00\x00\x00\x00\x00\x00\x01\x00broken",
                    avro("i2", rec("a", 2)), avro("i9", rec("a", 9)), avro("i3", rec("a", 3))])
    logs = [("f.log", list(iter_blocks(raw)))]
    sel = select_blocks(logs, spec())
    assert _instants(sel) == ["i1", "i2", "i3"] and sel.corrupt_blocks == 1 and sel.skipped_blocks == 1
    assert _instants(select_blocks(logs, spec(upper_bound="i2"))) == ["i1", "i2"]
    assert _instants(select_blocks(logs, spec(incremental_instants=frozenset({"i2", "i9"})))) == ["i2"]


def test_rollback_voids_its_target_in_every_log_file_before_and_after() -> None:
    first = list(iter_blocks(avro("i1", rec("a", 1)) + avro("i2", rec("a", 2))))
    second = list(iter_blocks(encode_rollback_block("i3", "i2") + avro("i2", rec("b", 2)) + avro("i4", rec("c", 4))))
    sel = select_blocks([("1.log", first), ("2.log", second)], spec())
    assert _instants(sel) == ["i1", "i4"] and sel.rollback_targets == {"i2"}
    assert [b.source for b in sel.blocks] == ["1.log", "2.log"]


def test_blocks_are_applied_instant_by_instant_in_order_of_first_appearance() -> None:
    raw = avro("i2", rec("a", 1)) + avro("i1", rec("b", 1)) + delete("i2", "a")
    assert _instants(select_blocks([("f.log", list(iter_blocks(raw)))], spec())) == ["i2", "i2", "i1"]


def _compacted(instant: str, replaces: str, *rows: dict) -> bytes:
    return encode_avro_data_block(instant, BLOCK_SCHEMA, rows,
                                  extra_header={HeaderKey.COMPACTED_BLOCK_TIMES: replaces})


def test_log_compacted_blocks_replace_the_blocks_they_compact() -> None:
    # B1(i1) B2(i2) B3(i3) M1(i4 = i1+i2) M2(i5 = i4+i3) B6(i6): M2 stands where B3 was
    raw = (avro("i1", rec("a", 1)) + avro("i2", rec("b", 2)) + avro("i3", rec("c", 3))
           + _compacted("i4", "i1,i2", rec("a", 1), rec("b", 2))
           + _compacted("i5", "i4,i3", rec("a", 1), rec("b", 2), rec("c", 3)) + avro("i6", rec("a", 6)))
    sel = select_blocks([("f.log", list(iter_blocks(raw)))], spec())
    assert _instants(sel) == ["i5", "i6"]
    # as in Hudi, a compacted block is applied at the place of the blocks it replaces, so without them it is not
    orphan = _compacted("i4", "i1,i2", rec("a", 1)) + avro("i3", rec("c", 3))
    assert _instants(select_blocks([("f.log", list(iter_blocks(orphan)))], spec())) == ["i3"]


@pytest.mark.parametrize("block, match", [
    (encode_block(BlockType.HFILE_DATA, {HeaderKey.INSTANT_TIME: "i1"}, b""), "HFILE_DATA"),
    (encode_block(BlockType.CDC_DATA, {HeaderKey.INSTANT_TIME: "i1"}, b""), "CDC_DATA"),
    (encode_avro_data_block("i1", BLOCK_SCHEMA, [], extra_header={HeaderKey.IS_PARTIAL: "true"}), "IS_PARTIAL"),
])
def test_unsupported_blocks_are_refused_naming_the_file(block: bytes, match: str) -> None:
    with pytest.raises(UnsupportedTableError, match=f"x.log: .*{match}"):
        select_blocks([("x.log", list(iter_blocks(block)))], spec())


def test_block_without_instant_time_is_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="no INSTANT_TIME"):
        block = encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: "{}"}, b"0" * 16)
        select_blocks([("x.log", list(iter_blocks(block)))], spec())


def test_log_files_are_ordered_like_hudi_and_cdc_logs_dropped() -> None:
    names = [".f_i2.log.1_0-1-1", ".f_i1.log.10_0-1-1", ".f_i1.log.2_0-1-1", ".f_i1.log.2_0-1-0",
             ".f_i1.log.1_0-1-1.cdc", "/p/.f_i0.log.1_1-0-0"]
    assert ordered_log_files(names) == ["/p/.f_i0.log.1_1-0-0", ".f_i1.log.2_0-1-0", ".f_i1.log.2_0-1-1",
                                        ".f_i1.log.10_0-1-1", ".f_i2.log.1_0-1-1"]


# ---------------------------------------------------------------------------------------------- merge rules


def test_commit_time_ordering_last_write_wins() -> None:
    base = base_of(rec("a", 5, "i1"), rec("b", 5, "i1"), rec("c", 5, "i1"))
    out = merged(base, [avro("i2", rec("a", 1, "i2"), rec("d", 1, "i2")), delete("i3", "b"),
                        parquet("i4", rec("b", 0, "i4"), rec("a", 0, "i4", name="a-last"))], spec(COMMIT))
    assert out == {"a": (0, "a-last"), "b": (0, "b@i4"), "c": (5, "c@i1"), "d": (1, "d@i2")}


def test_event_time_ordering_greatest_value_wins_ties_to_the_later_write() -> None:
    base = base_of(rec("a", 5, "i1"), rec("b", 5, "i1"), rec("c", 5, "i1"))
    out = merged(base, [avro("i2", rec("a", 4, "i2"), rec("b", 5, "i2"), rec("c", 7, "i2")),
                        parquet("i3", rec("c", 6, "i3"), rec("d", None, "i3")),
                        avro("i4", rec("d", None, "i4"))], spec())
    assert out == {"a": (5, "a@i1"), "b": (5, "b@i2"), "c": (7, "c@i2"), "d": (None, "d@i4")}


def test_event_time_nulls_are_lowest() -> None:
    out = merged(base_of(rec("a", None, "i1")), [avro("i2", rec("a", -3, "i2")), avro("i3", rec("a", None, "i3"))],
                 spec())
    assert out == {"a": (-3, "a@i2")}


def test_deletes_with_ordering_values() -> None:
    base = base_of(rec("a", 5, "i1"), rec("b", 5, "i1"), rec("c", 5, "i1"))
    out = merged(base, [delete("i2", ("a", long_(4)), ("b", long_(5)), ("c", long_(6)))], spec())
    assert out == {"a": (5, "a@i1")}  # a newer record survives an older delete; ties go to the delete


def test_delete_then_reinsert_and_delete_of_log_only_keys() -> None:
    out = merged(None, [avro("i1", rec("a", 3), rec("b", 3)), delete("i2", ("a", long_(2)), "b"),
                        avro("i3", rec("a", 1, "i3"), rec("b", 1, "i3"))], spec())
    # a: the record (3) beats its delete (2) and the later, lower update (1); b: natural delete, then re-insert
    assert out == {"a": (3, "a@i1"), "b": (1, "b@i3")}


def test_natural_order_delete_restarts_the_fold_and_base_comes_back_below_it() -> None:
    """Hudi folds the log first, then merges the base record: after a natural-order delete, a lower re-insert
    loses against the base record (hudi-rs agrees, see the hand-made table test)."""
    out = merged(base_of(rec("a", 10, "i1"), rec("b", 10, "i1")),
                 [delete("i2", "a", "b"), avro("i3", rec("a", 3, "i3"), rec("b", 30, "i3"))], spec())
    assert out == {"a": (10, "a@i1"), "b": (30, "b@i3")}
    assert merged(base_of(rec("a", 10, "i1")), [avro("i2", rec("a", 30, "i2")), delete("i3", "a")], spec()) == {}


def test_natural_order_delete_absorbs_later_deletes() -> None:
    base = base_of(rec("a", 10, "i1"), rec("b", 10, "i1"))
    out = merged(base, [delete("i2", "a", ("b", long_(1))), delete("i3", ("a", long_(1)), "b")], spec())
    assert out == {}  # a: the later ordered delete does not undo the natural one; b: natural after ordered


def test_hoodie_is_deleted_is_a_delete_with_its_ordering_value() -> None:
    base = base_of(rec("a", 5, "i1"), rec("b", 5, "i1"), rec("c", 5, "i1", deleted=True))
    out = merged(base, [avro("i2", rec("a", 6, "i2", deleted=True), rec("b", 4, "i2", deleted=True))], spec())
    # a: deleted (newer); b: the delete is older than the record; c: a base row no log touches is left alone
    assert out == {"b": (5, "b@i1"), "c": (5, "c@i1")}
    assert merged(base_of(rec("a", 5, "i1")), [avro("i2", rec("a", 1, "i2", deleted=True))], spec(COMMIT)) == {}


@pytest.mark.parametrize("mode", [EVENT, COMMIT])
def test_a_key_stored_twice_meets_log_records_in_its_first_copy_only(mode: MergeMode) -> None:
    """Hudi's file-group reader takes a log record out of its map at the first base record of its key; a later
    copy is read as stored (hudi-rs agrees; the session 22 probe's ``edge2.py``)."""
    base = base_of(rec("a", 5, "i1", name="a5"), rec("b", 1, "i1"), rec("a", 6, "i1", name="a6"))

    def rows(raws: list[bytes]) -> list[tuple]:
        s = spec(mode)
        sel = select_blocks([("f.log", list(iter_blocks(b"".join(raws))))], s)
        return sorted((r["id"], r["ts"], r["name"]) for r in merge_blocks(base, sel.blocks, s).to_pylist())

    assert rows([avro("i2", rec("a", 7, "i2", name="a7"))]) == [("a", 6, "a6"), ("a", 7, "a7"), ("b", 1, "b@i1")]
    assert rows([delete("i2", "a")]) == [("a", 6, "a6"), ("b", 1, "b@i1")]
    stale = rows([avro("i2", rec("a", 4, "i2", name="a4"))])
    if mode is EVENT:  # the first copy (5) beats the stale record (4); the second copy is untouched
        assert stale == [("a", 5, "a5"), ("a", 6, "a6"), ("b", 1, "b@i1")]
    else:
        assert stale == [("a", 4, "a4"), ("a", 6, "a6"), ("b", 1, "b@i1")]


def test_several_ordering_fields_compare_in_order() -> None:
    fields = [("id", "string"), ("ts", "long"), ("seq", "int"), ("name", "string")]
    schema = table_output_schema(_avro(fields, meta=False))
    block_schema = _avro(fields)

    def r(k: str, ts: int, seq: int | None, instant: str) -> dict:
        return {**rec(k, ts, instant), "seq": seq}

    base = pa.Table.from_pylist([r("a", 1, 5, "i1"), r("b", 1, 5, "i1"), r("c", 1, 5, "i1")], schema=schema)
    log = encode_avro_data_block("i2", block_schema, [r("a", 1, 6, "i2"), r("b", 1, None, "i2"), r("c", 0, 9, "i2")])
    dels = encode_delete_block("i3", [("a", "", OrderingValue("ArrayWrapper", (long_(1), OrderingValue(
        "IntWrapper", 5)))), ("b", "", OrderingValue("ArrayWrapper", (long_(1), OrderingValue("IntWrapper", 5))))])
    s = MergeSpec(schema=schema, merge_mode=EVENT, ordering_fields=("ts", "seq"),
                  committed_instants=frozenset({"i1", "i2", "i3"}))
    out = merge_blocks(base, selected(log, dels), s)
    assert {x["id"]: x["_hoodie_commit_time"] for x in out.to_pylist()} == {"a": "i2", "c": "i1"}


@pytest.mark.parametrize("arrow_type, wrapper, value, kept", [
    (pa.decimal128(10, 2), "DecimalWrapper", Decimal("5.005"), False),   # 5.00 <= 5.005: deleted
    (pa.decimal128(10, 2), "DecimalWrapper", Decimal("4.999"), True),
    (pa.timestamp("ms", "UTC"), "TimestampMicrosWrapper", 5_000_999, False),
    (pa.timestamp("ms", "UTC"), "TimestampMicrosWrapper", 4_999_999, True),
    (pa.date32(), "DateWrapper", 4, True),
    (pa.string(), "StringWrapper", "4", True),
    (pa.float64(), "DoubleWrapper", 5.0, False),
    (pa.int64(), "StringWrapper", "9", False),  # not comparable: the delete wins, as a natural-order delete
])
def test_delete_ordering_values_are_compared_in_the_column_type(arrow_type: pa.DataType, wrapper: str,
                                                                  value: Any, kept: bool) -> None:
    schema = pa.schema([pa.field("_hoodie_record_key", pa.string()), pa.field("o", arrow_type)])
    five = {pa.types.is_decimal(arrow_type): Decimal("5.00"), pa.types.is_timestamp(arrow_type): 5000,
            pa.types.is_date32(arrow_type): 5, pa.types.is_string(arrow_type): "5",
            pa.types.is_floating(arrow_type): 5.0, pa.types.is_integer(arrow_type): 5}[True]
    base = pa.table({"_hoodie_record_key": ["a"], "o": pa.array([five], type=arrow_type
                                                                if not pa.types.is_timestamp(arrow_type)
                                                                else pa.int64()).cast(arrow_type)})
    s = MergeSpec(schema=schema, merge_mode=EVENT, ordering_fields=("o",), committed_instants=frozenset({"i2"}))
    out = merge_blocks(base, selected(encode_delete_block("i2", [("a", "", OrderingValue(wrapper, value))])), s)
    assert out.num_rows == (1 if kept else 0)


def test_schema_evolution_missing_columns_and_type_promotion() -> None:
    old_block = encode_avro_data_block("i2", _avro([("id", "string"), ("ts", "int")]), [
        {**{c: None for c in META_COLUMNS}, "_hoodie_record_key": "b", "_hoodie_commit_time": "i2", "id": "b",
         "ts": 7}])
    base = pa.table({"_hoodie_record_key": ["a"], "_hoodie_commit_time": ["i1"], "id": ["a"],
                     "ts": pa.array([1], pa.int32())})
    out = merge_blocks(base, selected(old_block), spec())
    assert out.schema == SCHEMA
    assert [(r["id"], r["ts"], r["name"]) for r in out.to_pylist()] == [("a", 1, None), ("b", 7, None)]
    bad = pa.table({"_hoodie_record_key": ["a"], "ts": ["not a number"]})
    with pytest.raises(UnsupportedTableError, match="column 'ts'"):
        merge_blocks(bad, [], spec())


def test_columns_projection_and_incremental_filter() -> None:
    base = base_of(rec("a", 5, "i1"), rec("b", 5, "i1"))
    s = spec(columns=("name",), incremental_instants=frozenset({"i2"}))
    assert s.work_schema.names == ["_hoodie_commit_time", "_hoodie_record_key", "ts", "name", "_hoodie_is_deleted"]
    out = merge_blocks(base, selected(avro("i2", rec("a", 6, "i2"))), s)
    assert out.column_names == ["name"] and out.to_pylist() == [{"name": "a@i2"}]


def test_merge_output_order_base_rows_then_log_rows() -> None:
    base = base_of(*[rec(f"k{i:03d}", i, "i1") for i in range(200)])
    out = merge_blocks(base, selected(avro("i2", rec("k150", 1000, "i2"), rec("new", 1, "i2")), delete("i3", "k007")),
                       spec())
    keys = out.column("id").to_pylist()
    assert keys == [f"k{i:03d}" for i in range(200) if i not in (7, 150)] + ["k150", "new"]
    assert out.slice(198, 1).column("ts").to_pylist() == [1000]


def test_log_record_without_key_is_corrupt() -> None:
    with pytest.raises(CorruptFileError, match="without _hoodie_record_key"):
        merge_blocks(None, selected(avro("i1", {**rec("a", 1), "_hoodie_record_key": None})), spec())


def test_changelog_blocks_are_refused() -> None:
    block = encode_avro_data_block("i1", _avro(DATA_FIELDS + [("_hoodie_operation", "string")]),
                                   [{**rec("a", 1), "_hoodie_operation": "D"}])
    with pytest.raises(UnsupportedTableError, match="_hoodie_operation"):
        merge_blocks(None, selected(block), spec())


# ---------------------------------------------------------------------------------------------- fixtures


def _read_slices(base: Path, as_of: str | None = None) -> pa.Table:
    table = HudiTable(base)
    s = merge_spec_for_table(table, as_of=as_of)
    parts = []
    for sl in table.file_slices(as_of=as_of):
        pdir = table.base_path / sl.partition_path if sl.partition_path else table.base_path
        parts.append(merge_file_slice(sl.base_file_path, [str(pdir / n) for n in sl.log_file_names], spec=s))
    return pa.concat_tables(parts)


@pytest.mark.shared
@pytest.mark.parametrize("zip_name", ["mor_parquet_v6_nonpartitioned.zip", "mor_avro_v9_txns_simple_meta.zip"])
def test_mor_fixture_latest_slices_read_what_hudi_rs_reads(fixture_table, expected_tables, shared_rows_digest,
                                                           zip_name: str) -> None:
    import hudi

    base = fixture_table(zip_name)
    ours = _read_slices(base)
    expected = expected_tables[zip_name]
    assert ours.num_rows == expected["snapshot_rows"]
    assert shared_rows_digest(ours) == expected["rows_digest_sha256_16"]
    theirs = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(base)).build().read())
    assert shared_rows_digest(theirs) == shared_rows_digest(ours)
    assert ours.column_names == [f.name for f in theirs.schema]


@pytest.mark.shared
def test_mor_fixture_time_travel_through_every_commit_matches_hudi_rs(fixture_table, shared_rows_digest) -> None:
    """Older slices of the v9 fixture still have their Avro log files and delete blocks: read the table as of
    every completion time (and between a request and its completion) and compare with hudi-rs."""
    import hudi

    base = fixture_table("mor_avro_v9_txns_simple_meta.zip")
    rs = hudi.HudiTableBuilder.from_base_uri(str(base)).build()
    table = HudiTable(base)
    points = [i.completion_time for i in table.timeline.instants if i.completion_time]
    points += [i.requested_time[:-1] + "9" for i in table.timeline.instants]  # requested, not yet completed
    merged_logs = 0
    for as_of in sorted(points):
        theirs = pa.Table.from_batches(rs.read(hudi.HudiReadOptions().with_as_of_timestamp(as_of)))
        ours = _read_slices(base, as_of)
        assert (as_of, ours.num_rows, shared_rows_digest(ours)) == (as_of, theirs.num_rows, shared_rows_digest(theirs))
        merged_logs += sum(len(s.log_file_names) for s in table.file_slices(as_of=as_of))
    assert merged_logs > 10


# ---------------------------------------------------------------------------------------------- hand-made tables

VERSIONS = [9, 8, 6]


def _table(tmp_path: Path, version: int, **kw: Any) -> MorTable:
    if version == 6:
        kw.setdefault("payload_class", DEFAULT_PAYLOAD if kw.pop("merge_mode", "EVENT_TIME_ORDERING")
                      == "EVENT_TIME_ORDERING" else LATEST_PAYLOAD)
    return make_mor_table(tmp_path / f"v{version}", version=version, **kw)


@pytest.mark.parametrize("version", VERSIONS)
def test_updates_and_deletes_match_hudi_rs(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version, partition_field="region",
               fields=(("id", "string"), ("ts", "long"), ("name", "string"), ("amount", "double"),
                       ("region", "string")))
    c1 = t.deltacommit(inserts={"region=us": [row(k, 1, region="us") for k in "abcdef"],
                                "region=eu": [row("x", 1, region="eu")]})
    us, eu = c1.file_ids
    t.deltacommit(logs={us: [Upserts([row("a", 2, name="a2", region="us"), row("g", 1, region="us")]),
                             Deletes(["b"])],
                        eu: [Upserts([row("x", 3, region="eu")], fmt="parquet")]})
    t.deltacommit(logs={us: [Upserts([row("c", 5, name="c5", region="us")], fmt="parquet"),
                             Deletes(["d", "e"], [OrderingValue("LongWrapper", 0), OrderingValue("LongWrapper", 7)]),
                             Upserts([row("a", 3, name="a3", region="us")])]})
    rows = assert_same_as_hudi_rs(t)
    # d: LongWrapper(0) is an ordering value (only Java's Integer 0 means "no ordering"), lower than d's 1
    assert [(r["id"], r["ts"], r["name"]) for r in rows] == [
        ("a", 3, "a3"), ("c", 5, "c5"), ("d", 1, "d"), ("f", 1, "f"), ("g", 1, "g"), ("x", 3, "x")]


@pytest.mark.parametrize("version", VERSIONS)
def test_event_time_older_update_arriving_later_loses(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    fid = t.deltacommit(inserts={"": [row("a", 10), row("b", 10)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 20, name="new")])]})
    t.deltacommit(logs={fid: [Upserts([row("a", 15, name="late"), row("b", 5, name="late")], fmt="parquet")]})
    rows = assert_same_as_hudi_rs(t)
    assert [(r["id"], r["name"]) for r in rows] == [("a", "new"), ("b", "b")]


@pytest.mark.parametrize("version", VERSIONS)
def test_commit_time_ordering_latest_write_wins(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version, merge_mode="COMMIT_TIME_ORDERING")
    fid = t.deltacommit(inserts={"": [row("a", 10), row("b", 10)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 1, name="lower but later")]), Deletes(["b"])]})
    rows = assert_same_as_hudi_rs(t)
    assert [(r["id"], r["name"]) for r in rows] == [("a", "lower but later")]


def test_commit_time_ordering_without_ordering_field(tmp_path: Path) -> None:
    t = make_mor_table(tmp_path / "t", merge_mode=None, ordering_fields=None)
    fid = t.deltacommit(inserts={"": [row("a", 10)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 1, name="upd")])]})
    assert [r["name"] for r in assert_same_as_hudi_rs(t)] == ["upd"]


def test_rollback_command_blocks_v6(tmp_path: Path) -> None:
    """Hudi 0.x rolls back a failed deltacommit by appending a rollback block to the logs it wrote."""
    t = _table(tmp_path, 6)
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 1)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 2, name="a2")])]})
    failed = t.deltacommit(logs={fid: [Upserts([row("b", 9, name="failed")]), Deletes(["a"])]}, complete=False)
    t.rollback(failed.instant)
    t.deltacommit(logs={fid: [Upserts([row("b", 4, name="b4")])]})
    rows = assert_same_as_hudi_rs(t)
    assert [(r["id"], r["name"]) for r in rows] == [("a", "a2"), ("b", "b4")]


@pytest.mark.parametrize("version", VERSIONS)
def test_rollback_block_voids_even_a_completed_target(tmp_path: Path, version: int) -> None:
    """The rule itself: every block of the target instant is void, in any log file of the slice."""
    t = _table(tmp_path, version)
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 1)]}).file_ids[0]
    target = t.deltacommit(logs={fid: [Upserts([row("a", 2, name="voided")])]})
    t.deltacommit(logs={fid: [Rollback(target.instant), Upserts([row("b", 2, name="b2")])]})
    rows = assert_same_as_hudi_rs(t)
    assert [(r["id"], r["name"]) for r in rows] == [("a", "a"), ("b", "b2")]


@pytest.mark.parametrize("version", VERSIONS)
def test_corrupt_block_in_the_middle_of_a_log_is_skipped(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 1)]}).file_ids[0]
    half = encode_avro_data_block("20250101000002000", t.block_schema_text(), [{"id": "zz"}])[:40]
    t.deltacommit(logs={fid: [Upserts([row("a", 2)]), Raw(MAGIC + b"\x00" * 7 + b"\x10garbage"), Raw(half),
                              Upserts([row("b", 3)], fmt="parquet")]})
    rows = assert_same_as_hudi_rs(t)
    assert [(r["id"], r["ts"]) for r in rows] == [("a", 2), ("b", 3)]


@pytest.mark.parametrize("version", VERSIONS)
def test_blocks_of_an_uncommitted_instant_are_ignored(tmp_path: Path, version: int) -> None:
    t = _table(tmp_path, version)
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 1)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 2)])]})
    t.deltacommit(logs={fid: [Upserts([row("b", 9)]), Deletes(["a"])]}, complete=False)
    rows = assert_same_as_hudi_rs(t)
    assert [(r["id"], r["ts"]) for r in rows] == [("a", 2), ("b", 1)]
    if version == 6:  # the pending blocks sit in the same log file as committed ones
        assert len(t.hudi_table().file_slices()[0].log_file_names) == 1


@pytest.mark.parametrize("version", [9, 8])
def test_time_travel_and_a_deltacommit_completing_after_the_as_of_instant(tmp_path: Path, version: int) -> None:
    """``as_of`` keeps instants *requested* at or before it (like the file-system view and hudi-rs): a
    deltacommit requested before and completed after the instant is part of the read."""
    t = _table(tmp_path, version)
    c1 = t.deltacommit(inserts={"": [row("a", 1)]})
    slow = t.deltacommit(logs={c1.file_ids[0]: [Upserts([row("a", 2, name="slow")])]}, complete=False)
    c3 = t.deltacommit(logs={c1.file_ids[0]: [Upserts([row("b", 1)])]})
    t.complete(slow.instant, completion=t.later(c3.instant, 5000))
    assert slow.instant < c3.completion < t.later(c3.instant, 5000)
    assert [(r["id"], r["name"]) for r in assert_same_as_hudi_rs(t, as_of=c3.completion)] == [("a", "slow"),
                                                                                            ("b", "b")]
    assert [(r["id"], r["name"]) for r in assert_same_as_hudi_rs(t, as_of=t.later(c1.instant, 100))] == [("a", "a")]
    assert [r["id"] for r in assert_same_as_hudi_rs(t, as_of=slow.instant)] == ["a"]


def test_incremental_reads_match_hudi_rs_on_sequential_commits(tmp_path: Path) -> None:
    import hudi

    t = _table(tmp_path, 9)
    c1 = t.deltacommit(inserts={"": [row("a", 1), row("z", 1)]})
    fid = c1.file_ids[0]
    c2 = t.deltacommit(logs={fid: [Upserts([row("a", 2, name="a2")])]})
    c3 = t.deltacommit(logs={fid: [Upserts([row("b", 1)]), Deletes(["z"])]})
    rs = hudi.HudiTableBuilder.from_base_uri(str(t.base)).build()
    for start, end in [(c1.completion, c2.completion), (c1.completion, c3.completion),
                       (c2.completion, c3.completion), ("0", c1.completion)]:
        ours = data_rows(t.read_ours(instant_range=InstantRange(start, end)), t.data_columns)
        opts = hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental)
        batches = rs.read(opts.with_start_timestamp(start).with_end_timestamp(end))
        theirs = data_rows(pa.Table.from_batches(batches), t.data_columns) if batches else []
        assert ours == theirs, (start, end)
    rows = data_rows(t.read_ours(instant_range=InstantRange(c1.completion, c3.completion)), t.data_columns)
    assert [(r["id"], r["name"]) for r in rows] == [("a", "a2"), ("b", "b")]


def test_incremental_range_is_on_completion_times_on_v9(tmp_path: Path) -> None:
    """Hudi 1.x selects incremental instants by completion time: a deltacommit that started before the range
    but finished inside it is part of it, one that started inside and finished after is not. (hudi-rs 0.5 also
    filters the rows by ``start < _hoodie_commit_time``, a requested time, and so drops c1's rows from the
    range (c1 requested, c3 completed]; we keep the rows of every selected instant, as Hudi does.)"""
    t = _table(tmp_path, 9)
    c1 = t.deltacommit(inserts={"": [row("a", 1), row("z", 1)]})
    fid = c1.file_ids[0]
    slow = t.deltacommit(logs={fid: [Upserts([row("a", 2, name="slow")])]}, complete=False)
    c3 = t.deltacommit(logs={fid: [Upserts([row("b", 1)]), Deletes(["z"])]})
    t.complete(slow.instant, completion=t.later(c3.completion, 1000))

    def names(start: str | None, end: str | None) -> list[tuple[str, str]]:
        rows = data_rows(t.read_ours(instant_range=InstantRange(start, end)), t.data_columns)
        return [(r["id"], r["name"]) for r in rows]

    assert names(c1.completion, c3.completion) == [("b", "b")]
    assert names(c1.instant, c3.completion) == [("a", "a"), ("b", "b")]
    assert names(c3.completion, None) == [("a", "slow")]
    assert names(None, c1.completion) == [("a", "a"), ("z", "z")]


def test_is_deleted_rows_are_dropped(tmp_path: Path) -> None:
    t = make_mor_table(tmp_path / "t", fields=(("id", "string"), ("ts", "long"), ("name", "string"),
                                              ("_hoodie_is_deleted", "boolean")))
    fid = t.deltacommit(inserts={"": [row("a", 5), row("b", 5)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 6, _hoodie_is_deleted=True), row("b", 4, _hoodie_is_deleted=True)])]})
    assert [r["id"] for r in assert_same_as_hudi_rs(t)] == ["b"]


def test_natural_delete_then_lower_reinsert_matches_hudi_rs(tmp_path: Path) -> None:
    t = make_mor_table(tmp_path / "t")
    fid = t.deltacommit(inserts={"": [row("a", 10), row("b", 10)]}).file_ids[0]
    t.deltacommit(logs={fid: [Deletes(["a", "b"])]})
    t.deltacommit(logs={fid: [Upserts([row("a", 3, name="re"), row("b", 30, name="re")])]})
    rows = assert_same_as_hudi_rs(t)
    assert [(r["id"], r["ts"]) for r in rows] == [("a", 10), ("b", 30)]


def test_several_ordering_fields_on_a_table(tmp_path: Path) -> None:
    """hudi-rs refuses tables with several ordering fields; Hudi compares them field by field."""
    t = make_mor_table(tmp_path / "t", ordering_fields="ts,amount")
    fid = t.deltacommit(inserts={"": [row("a", 10), row("b", 10)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 10, amount=11.0, name="more"),
                                       row("b", 10, amount=9.0, name="less")])]})
    rows = data_rows(t.read_ours(), t.data_columns)
    assert [(r["id"], r["name"]) for r in rows] == [("a", "more"), ("b", "b")]


def test_projection_through_merge_spec_for_table(tmp_path: Path) -> None:
    t = make_mor_table(tmp_path / "t")
    fid = t.deltacommit(inserts={"": [row("a", 1)]}).file_ids[0]
    t.deltacommit(logs={fid: [Upserts([row("a", 2, name="a2")])]})
    assert t.read_ours(columns=["name"]).to_pylist() == [{"name": "a2"}]


def test_log_requested_before_compaction_completed_after_is_merged(tmp_path: Path) -> None:
    """Hudi 1.x (and hudi-rs) attach a log file to the slice whose base instant is at or before the log's
    *completion* time: a deltacommit that started before a compaction and finished after it belongs to the
    new slice."""
    t = make_mor_table(tmp_path / "t")
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 1)]}).file_ids[0]
    late = t.deltacommit(logs={fid: [Upserts([row("a", 2, name="late")])]}, complete=False)
    comp = t.compact(fid, [row("a", 1), row("b", 1)])
    t.complete(late.instant, completion=t.later(comp.completion, 1000))
    table = t.hudi_table()
    (sl,) = table.file_slices()
    out = merge_file_slice(sl.base_file_path, [str(t.base / p) for p in late.log_paths],
                           spec=merge_spec_for_table(table))
    expected = data_rows(t.read_hudi_rs(), t.data_columns)
    assert data_rows(out, t.data_columns) == expected and expected[0]["name"] == "late"


def test_file_system_view_attaches_logs_by_completion_time(tmp_path: Path) -> None:
    t = make_mor_table(tmp_path / "t")
    fid = t.deltacommit(inserts={"": [row("a", 1)]}).file_ids[0]
    late = t.deltacommit(logs={fid: [Upserts([row("a", 2, name="late")])]}, complete=False)
    comp = t.compact(fid, [row("a", 1)])
    t.complete(late.instant, completion=t.later(comp.completion, 1000))
    assert t.hudi_table().file_slices()[0].log_file_names == tuple(p.rsplit("/", 1)[-1] for p in late.log_paths)


# ---------------------------------------------------------------------------------------------- property test

KEYS = ["k0", "k1", "k2", "k3"]


def _ord_key(v: int | None) -> tuple:
    return (0,) if v is None else (1, v)


def model_merge(base: dict[str, dict], blocks: list[tuple[str, str, list]], mode: MergeMode,
                committed: set[str], rollback_targets: set[str]) -> dict[str, tuple]:
    """Hudi's rules, record by record: filter blocks, group by instant (first appearance), fold the log per key
    (a natural-order delete absorbs later deletes; the next record restarts the fold), then merge with the base
    record."""
    kept = [b for b in blocks if b[1] in committed and b[1] not in rollback_targets]
    order: list[str] = []
    for _, inst, _ in kept:
        if inst not in order:
            order.append(inst)
    applied = [b for inst in order for b in kept if b[1] == inst]
    state: dict[str, tuple] = {}  # key -> ("data", row) | ("del", ordering or None for natural order)
    for kind, _inst, items in applied:
        for item in items:
            if kind == "data":
                key = item["id"]
                cur = state.get(key)
                if mode is not COMMIT and item.get("_hoodie_is_deleted") and item["ts"] is None:
                    # _hoodie_is_deleted without an ordering value: a natural-order delete (Hudi's default
                    # ordering value; session 20, hudi-rs agrees)
                    if not (cur is not None and cur[0] == "del" and cur[1] is None):
                        state[key] = ("del", None)
                    continue
                if mode is COMMIT or cur is None or (cur[0] == "del" and cur[1] is None):
                    state[key] = ("data", item)
                else:
                    cur_ord = cur[1]["ts"] if cur[0] == "data" else cur[1]
                    if _ord_key(item["ts"]) >= _ord_key(cur_ord):
                        state[key] = ("data", item)
            else:
                key, ordering = item
                cur = state.get(key)
                if mode is not COMMIT and cur is not None and cur[0] == "del" and cur[1] is None:
                    continue  # a natural-order delete absorbs the deletes after it
                if mode is COMMIT or ordering is None or cur is None:
                    state[key] = ("del", ordering)
                else:
                    cur_ord = cur[1]["ts"] if cur[0] == "data" else cur[1]
                    if not _ord_key(cur_ord) > _ord_key(ordering):
                        state[key] = ("del", ordering)
    out: dict[str, dict] = {}
    for key in set(base) | set(state):
        b, s = base.get(key), state.get(key)
        if s is None:
            winner = b
        elif s[0] == "del" and (mode is COMMIT or s[1] is None):
            winner = None
        elif b is None or mode is COMMIT:
            winner = s[1] if s[0] == "data" else None
        elif s[0] == "data":
            winner = s[1] if _ord_key(s[1]["ts"]) >= _ord_key(b["ts"]) else b
        else:
            winner = b if _ord_key(b["ts"]) > _ord_key(s[1]) else None
        if winner is not None and not (winner.get("_hoodie_is_deleted") and s is not None):
            out[key] = winner
    return {k: (r["ts"], r["name"]) for k, r in out.items()}


_ts = st.one_of(st.none(), st.integers(0, 4))
_data_item = st.builds(lambda k, ts, d: {"id": k, "ts": ts, "deleted": d}, st.sampled_from(KEYS), _ts,
                       st.sampled_from([None, False, True]))
_delete_item = st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.integers(0, 4)))
_block = st.one_of(
    st.tuples(st.sampled_from(["avro", "parquet"]), st.sampled_from(["i1", "i2", "i3", "i4"]),
              st.lists(_data_item, min_size=1, max_size=4)),
    st.tuples(st.just("delete"), st.sampled_from(["i1", "i2", "i3", "i4"]), st.lists(_delete_item, min_size=1,
                                                                                    max_size=3)),
)


@settings(max_examples=300, deadline=None)
@given(base_ts=st.fixed_dictionaries({k: _ts for k in KEYS}), base_keys=st.sets(st.sampled_from(KEYS)),
       blocks=st.lists(_block, max_size=6), mode=st.sampled_from(list(MergeMode)),
       uncommitted=st.sets(st.sampled_from(["i2", "i3", "i4"]), max_size=1),
       rolled_back=st.sets(st.sampled_from(["i1", "i2", "i3", "i4"]), max_size=1))
def test_merge_matches_a_plain_python_model(base_ts: dict, base_keys: set, blocks: list, mode: MergeMode,
                                            uncommitted: set, rolled_back: set) -> None:
    base_rows = {k: {**rec(k, base_ts[k], "i0", name=f"{k}@base"), "_hoodie_is_deleted": None}
                 for k in sorted(base_keys)}
    raws: list[bytes] = []
    model_blocks: list[tuple[str, str, list]] = []
    for n, (kind, inst, items) in enumerate(blocks):
        if kind == "delete":
            ords = [(k, None if v is None else long_(v)) for k, v in items]
            raws.append(encode_delete_block(inst, [(k, "", NATURAL_ORDER if o is None else o) for k, o in ords]))
            model_blocks.append(("delete", inst, [(k, v) for k, v in items]))
        else:
            rows = [rec(x["id"], x["ts"], inst, name=f"{x['id']}@{n}.{j}", deleted=x["deleted"])
                    for j, x in enumerate(items)]
            raws.append(avro(inst, *rows) if kind == "avro" else parquet(inst, *rows))
            model_blocks.append(("data", inst, rows))
    raws += [encode_rollback_block("i9", t) for t in rolled_back]
    committed = {"i0", "i1", "i2", "i3", "i4"} - uncommitted
    s = spec(mode, instants=sorted(committed), uncommitted_instants=frozenset(uncommitted))
    base = base_of(*base_rows.values()) if base_rows else None
    ours = merged(base, raws, s)
    assert ours == model_merge(base_rows, model_blocks, mode, committed, rolled_back)


def test_model_agrees_on_a_hand_checked_case() -> None:
    base = {"a": {**rec("a", 10, "i0", name="base")}}
    blocks = [("delete", "i1", [("a", None)]), ("data", "i2", [rec("a", 3, "i2", name="re")])]
    assert model_merge(base, blocks, EVENT, {"i0", "i1", "i2"}, set()) == {"a": (10, "base")}
    assert model_merge(base, blocks, COMMIT, {"i0", "i1", "i2"}, set()) == {"a": (3, "re")}


_op = st.one_of(
    st.tuples(st.sampled_from(["avro", "parquet"]),
              st.lists(st.tuples(st.sampled_from(KEYS), st.integers(0, 3), st.booleans()), min_size=1, max_size=3)),
    st.tuples(st.just("delete"), st.lists(st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.integers(0, 3))),
                                          min_size=1, max_size=2)),
)


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(_op, min_size=1, max_size=4), version=st.sampled_from([9, 6]),
       mode=st.sampled_from(["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"]))
def test_random_tables_read_like_hudi_rs(tmp_path_factory: pytest.TempPathFactory, ops: list, version: int,
                                         mode: str) -> None:
    fields = (("id", "string"), ("ts", "long"), ("name", "string"), ("_hoodie_is_deleted", "boolean"))
    t = _table(tmp_path_factory.mktemp("rand"), version, merge_mode=mode, fields=fields)
    fid = t.deltacommit(inserts={"": [row(k, 1) for k in KEYS[:3]]}).file_ids[0]
    for n, (kind, items) in enumerate(ops):
        if kind == "delete":
            block: Upserts | Deletes = Deletes([k for k, _ in items], [None if v is None else long_(v)
                                                                     for _, v in items])
        else:
            block = Upserts([row(k, ts, name=f"{k}{n}", _hoodie_is_deleted=d) for k, ts, d in items], fmt=kind)
        t.deltacommit(logs={fid: [block]})
    assert_same_as_hudi_rs(t)


@settings(max_examples=200, deadline=None)
@given(base=st.lists(st.tuples(st.sampled_from(KEYS + ["k9"]), _ts, st.sampled_from([None, False, True])),
                     max_size=10),
       blocks=st.lists(_block, max_size=5), mode=st.sampled_from(list(MergeMode)), chunk=st.integers(1, 4),
       project=st.booleans(), incremental=st.booleans())
def test_merging_a_base_file_by_chunks_gives_the_rows_of_one_merge(base: list, blocks: list, mode: MergeMode,
                                                                  chunk: int, project: bool,
                                                                  incremental: bool) -> None:
    """Chunking invariance (compactions and reads merge a chunk of base rows at a time): keys stored twice,
    across chunks too (the first copy claims the log records), deletes, ``_hoodie_is_deleted`` and natural
    deletes, projections and incremental filters give the same rows as one merge of the whole file."""
    rows = [{**rec(k, ts, "i0", name=f"{k}@{n}"), "_hoodie_is_deleted": d} for n, (k, ts, d) in enumerate(base)]
    raws = []
    for n, (kind, inst, items) in enumerate(blocks):
        if kind == "delete":
            raws.append(encode_delete_block(inst, [(k, "", NATURAL_ORDER if v is None else long_(v))
                                                   for k, v in items]))
        else:
            recs = [rec(x["id"], x["ts"], inst, name=f"{x['id']}@{n}.{j}", deleted=x["deleted"])
                    for j, x in enumerate(items)]
            raws.append(avro(inst, *recs) if kind == "avro" else parquet(inst, *recs))
    extra: dict[str, Any] = {}
    if project:
        extra["columns"] = ("id", "name")
    if incremental:
        extra["incremental_instants"] = frozenset({"i0", "i2", "i3"})
    s = spec(mode, **extra)
    sel = select_blocks([("f.log", list(iter_blocks(b"".join(raws))))], s)
    table = base_of(*rows) if rows else None
    whole = merge_blocks(table, sel.blocks, s)
    chunks = [table.slice(i, chunk) for i in range(0, table.num_rows, chunk)] if table is not None else []
    parts = list(iter_merge_blocks(chunks, sel.blocks, s))
    assert parts and all(p.schema == s.output_schema for p in parts)
    assert sorted(map(str, pa.concat_tables(parts).to_pylist())) == sorted(map(str, whole.to_pylist()))


def test_a_slice_is_merged_a_chunk_at_a_time_from_its_file(tmp_path: Path) -> None:
    """The file reader behind compactions and reads: several chunks, same rows as the whole-file merge."""
    path = tmp_path / "base.parquet"
    pq.write_table(base_of(*[rec(f"k{i:03d}", i, "i1") for i in range(50)], rec("k007", 99, "i1", name="dup")),
                   path, row_group_size=8)
    log = tmp_path / ".f_i2.log.1_0-0-0"
    log.write_bytes(avro("i2", rec("k007", 100, "i2"), rec("new", 1, "i2")) + delete("i2", "k040"))
    s = spec()
    parts = list(iter_merge_file_slice(str(path), [str(log)], spec=s, chunk_rows=7))
    assert len(parts) > 5
    got = sorted((r["id"], r["ts"]) for p in parts for r in p.to_pylist())
    assert got == sorted((r["id"], r["ts"]) for r in merge_file_slice(str(path), [str(log)], spec=s).to_pylist())
    assert ("k007", 100) in got and ("k007", 99) in got and ("new", 1) in got and ("k040", 40) not in got
