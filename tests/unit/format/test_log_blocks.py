"""Content of data-table log blocks: Avro / parquet data, delete lists, rollback commands, refusals."""

from __future__ import annotations

import datetime as dt
import glob
import json
import struct
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.errors import CorruptFileError, UnsupportedTableError
from hudi_layout.format.log_blocks import (
    NATURAL_ORDER,
    OrderingValue,
    arrow_schema_for_avro,
    decode_avro_data_block,
    decode_delete_block,
    decode_parquet_data_block,
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
    encode_rollback_block,
    rollback_target,
)
from hudi_layout.format.log_format import BlockType, HeaderKey, LogBlock, encode_block, iter_blocks, read_log_file

NESTED_SCHEMA = {
    "type": "record", "name": "r", "namespace": "hoodie.t",
    "fields": [
        {"name": "id", "type": ["null", "string"]},
        {"name": "n", "type": ["null", "long"]},
        {"name": "i", "type": "int"},
        {"name": "f", "type": ["null", "float"]},
        {"name": "b", "type": ["null", "boolean"]},
        {"name": "bin", "type": ["null", "bytes"]},
        {"name": "dec", "type": ["null", {"type": "fixed", "name": "fixed", "size": 5, "logicalType": "decimal",
                                          "precision": 10, "scale": 2}]},
        {"name": "bdec", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 40,
                                           "scale": 3}]},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "lts", "type": ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]},
        {"name": "tm", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
        {"name": "color", "type": ["null", {"type": "enum", "name": "Color", "symbols": ["RED", "BLUE"]}]},
        {"name": "s", "type": ["null", {"type": "record", "name": "S", "fields": [
            {"name": "x", "type": ["null", "double"]},
            {"name": "inner", "type": ["null", {"type": "record", "name": "Inner",
                                                "fields": [{"name": "y", "type": ["null", "int"]}]}]}]}]},
        {"name": "s2", "type": ["null", "S"]},
        {"name": "arr", "type": ["null", {"type": "array", "items": ["null", "hoodie.t.Inner"]}]},
        {"name": "m", "type": ["null", {"type": "map", "values": ["null", "long"]}]},
    ],
}
NESTED_TEXT = json.dumps(NESTED_SCHEMA)
UTC = dt.timezone.utc


def _record(k: int) -> dict:
    return {
        "id": f"k{k}", "n": k * 10**12, "i": -k, "f": 1.5, "b": k % 2 == 0, "bin": bytes([k, 0, 255]),
        "dec": Decimal("123.45") * k, "bdec": Decimal("1234567890123456789012345678901234.567"),
        "day": dt.date(2024, 1, 1) + dt.timedelta(days=k), "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678901, UTC),
        "lts": dt.datetime(2024, 1, 2, 3, 4, 5), "tm": dt.time(1, 2, 3, 4), "color": "BLUE",
        "s": {"x": 2.5, "inner": {"y": k}}, "s2": None, "arr": [{"y": 1}, None], "m": {"a": 1, "b": None},
    }


def _one_block(data: bytes) -> LogBlock:
    blocks = list(iter_blocks(data))
    assert len(blocks) == 1
    return blocks[0]


def test_arrow_schema_for_avro_nested_logical_and_named_types() -> None:
    schema = arrow_schema_for_avro(NESTED_TEXT)
    t = {f.name: f.type for f in schema}
    assert t["id"] == pa.string() and t["n"] == pa.int64() and t["i"] == pa.int32() and t["f"] == pa.float32()
    assert t["dec"] == pa.decimal128(10, 2) and t["bdec"] == pa.decimal256(40, 3)
    assert t["day"] == pa.date32() and t["ts"] == pa.timestamp("us", "UTC") and t["lts"] == pa.timestamp("us")
    assert t["tm"] == pa.time64("us") and t["color"] == pa.string()
    inner = pa.struct([("y", pa.int32())])
    assert t["s"] == pa.struct([("x", pa.float64()), ("inner", inner)]) and t["s2"] == t["s"]
    assert t["arr"] == pa.list_(pa.field("element", inner)) and t["m"] == pa.map_(pa.string(), pa.int64())
    assert all(f.nullable for f in schema)


def test_arrow_schema_refuses_real_unions_and_unknown_names() -> None:
    bad = {"type": "record", "name": "r", "fields": [{"name": "u", "type": ["null", "int", "string"]}]}
    with pytest.raises(UnsupportedTableError, match="more than one non-null branch"):
        arrow_schema_for_avro(bad)
    with pytest.raises(CorruptFileError, match="unknown type"):
        arrow_schema_for_avro({"type": "record", "name": "r", "fields": [{"name": "u", "type": "Nope"}]})


def test_avro_data_block_round_trip_with_every_type() -> None:
    records = [_record(k) for k in range(1, 4)]
    block = _one_block(encode_avro_data_block("20250101000000000", NESTED_TEXT, records))
    assert block.type is BlockType.AVRO_DATA and block.instant_time == "20250101000000000"
    table = decode_avro_data_block(block, where="x.log")
    assert table.schema == arrow_schema_for_avro(NESTED_TEXT)
    got = table.to_pylist()
    assert [r["id"] for r in got] == ["k1", "k2", "k3"]
    assert got[1]["dec"] == Decimal("246.90") and got[0]["m"] == [("a", 1), ("b", None)]
    assert got[2]["ts"] == records[2]["ts"] and got[0]["arr"] == [{"y": 1}, None]


def test_parquet_data_block_round_trip_and_projection() -> None:
    table = pa.table({"id": ["a", "b"], "x": [1, 2], "y": [0.5, None]})
    block = _one_block(encode_parquet_data_block("20250101000000000", "{}", table))
    assert block.type is BlockType.PARQUET_DATA and block.content[:4] == b"PAR1"
    assert decode_parquet_data_block(block).equals(table)
    assert decode_parquet_data_block(block, columns=["y", "nope", "id"]).column_names == ["y", "id"]


def test_avro_data_block_other_content_versions_are_refused() -> None:
    block = _one_block(encode_avro_data_block("1", NESTED_TEXT, []))
    old = LogBlock(block.type, block.header, struct.pack(">ii", 2, 0), block.footer, 0)
    with pytest.raises(UnsupportedTableError, match="content version 2"):
        decode_avro_data_block(old, where="f.log")


def test_avro_data_block_damage_is_a_clear_error() -> None:
    block = _one_block(encode_avro_data_block("1", NESTED_TEXT, [_record(1)]))
    cut = LogBlock(block.type, block.header, block.content[:-20], block.footer, 0)
    with pytest.raises(CorruptFileError, match="f.log"):
        decode_avro_data_block(cut, where="f.log")
    no_schema = LogBlock(block.type, {HeaderKey.INSTANT_TIME: "1"}, block.content, block.footer, 0)
    with pytest.raises(CorruptFileError, match="no SCHEMA header"):
        decode_avro_data_block(no_schema, where="f.log")


def test_delete_block_of_the_v9_fixture_decodes_as_natural_order() -> None:
    # the content Hudi 1.x wrote for `DELETE ... WHERE txn_id = 'TXN-005'` (fixture mor_avro_v9_txns_simple_meta)
    content = bytes.fromhex("000000030000001802020e54584e2d3030350212726567696f6e3d6575040000")
    batch = decode_delete_block(LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: "1"}, content), where="x")
    assert batch.record_keys == ("TXN-005",) and batch.partition_paths == ("region=eu",)
    assert batch.ordering_values == (NATURAL_ORDER,) and batch.ordering_values[0].is_natural


def test_empty_delete_list_decodes() -> None:
    content = bytes.fromhex("000000030000000100")
    assert len(decode_delete_block(LogBlock(BlockType.DELETE, {}, content))) == 0


WRAPPER_VALUES = [
    OrderingValue("BooleanWrapper", True), OrderingValue("IntWrapper", -7), OrderingValue("LongWrapper", 2**40),
    OrderingValue("FloatWrapper", 1.5), OrderingValue("DoubleWrapper", -2.25), OrderingValue("BytesWrapper", b"\x00z"),
    OrderingValue("StringWrapper", "évent"), OrderingValue("DateWrapper", 19000),
    OrderingValue("DecimalWrapper", Decimal("12.5")), OrderingValue("TimeMicrosWrapper", 3_600_000_001),
    OrderingValue("TimestampMicrosWrapper", 1_700_000_000_000_001),
    OrderingValue("ArrayWrapper", (OrderingValue("LongWrapper", 5), None, OrderingValue("StringWrapper", "b"))),
    None,
]


def test_delete_block_round_trip_with_every_wrapper() -> None:
    deletes = [(f"k{i}", "p", v) for i, v in enumerate(WRAPPER_VALUES)]
    block = _one_block(encode_delete_block("20250101000000000", deletes, schema_text="{}"))
    batch = decode_delete_block(block)
    assert batch.record_keys == tuple(k for k, _, _ in deletes)
    decoded = list(batch.ordering_values)
    assert decoded[8] == OrderingValue("DecimalWrapper", Decimal("12.500000000000000"))
    decoded[8] = WRAPPER_VALUES[8]
    assert decoded == WRAPPER_VALUES
    assert not any(v.is_natural for v in decoded if v is not None)
    assert WRAPPER_VALUES[11].parts == WRAPPER_VALUES[11].value and WRAPPER_VALUES[1].parts == (WRAPPER_VALUES[1],)


def test_delete_block_union_order_is_hudis() -> None:
    """The branch index on the wire: 3 = LongWrapper, 7 = StringWrapper (zigzag 6 and 14)."""
    block = _one_block(encode_delete_block("1", [("k", "p", OrderingValue("LongWrapper", 1))]))
    assert block.content[8:].endswith(b"\x06\x02\x00")
    block = _one_block(encode_delete_block("1", [("k", "p", OrderingValue("StringWrapper", "a"))]))
    assert block.content[8:].endswith(b"\x0e\x02a\x00")


@pytest.mark.parametrize("version", [1, 2])
def test_kryo_delete_blocks_are_refused_naming_the_file(version: int) -> None:
    block = LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: "1"}, struct.pack(">ii", version, 3) + b"abc")
    with pytest.raises(UnsupportedTableError, match=rf"part\.log: DELETE block .* content version {version}"):
        decode_delete_block(block, where="part.log")


def test_delete_block_with_trailing_or_missing_bytes_is_corrupt() -> None:
    block = _one_block(encode_delete_block("1", [("k", "p", None)]))
    longer = LogBlock(block.type, block.header, struct.pack(">ii", 3, len(block.content) - 8 + 1)
                      + block.content[8:] + b"\x00")
    with pytest.raises(CorruptFileError, match="bytes left"):
        decode_delete_block(longer)
    with pytest.raises(CorruptFileError, match="runs past"):
        decode_delete_block(LogBlock(block.type, block.header, struct.pack(">ii", 3, 99) + b"\x00"))


def test_rollback_block() -> None:
    block = _one_block(encode_rollback_block("20250102000000000", "20250101000000000"))
    assert block.type is BlockType.COMMAND and block.is_rollback
    assert rollback_target(block) == "20250101000000000"
    other = LogBlock(BlockType.COMMAND, {HeaderKey.COMMAND_BLOCK_TYPE: "7"}, b"")
    with pytest.raises(UnsupportedTableError, match="unknown command"):
        rollback_target(other, where="f.log")
    with pytest.raises(CorruptFileError, match="TARGET_INSTANT_TIME"):
        rollback_target(LogBlock(BlockType.COMMAND, {HeaderKey.COMMAND_BLOCK_TYPE: "0"}, b""))


def test_extra_header_entries_are_written() -> None:
    data = encode_avro_data_block("1", NESTED_TEXT, [], extra_header={HeaderKey.BLOCK_IDENTIFIER: "0,1"})
    assert _one_block(data).header[HeaderKey.BLOCK_IDENTIFIER] == "0,1"
    framed = encode_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "1"}, b"")
    assert _one_block(framed).content == b""


@pytest.mark.shared
@pytest.mark.parametrize("zip_name", ["mor_parquet_v6_nonpartitioned.zip", "mor_avro_v9_txns_simple_meta.zip"])
def test_every_block_of_the_mor_fixtures_decodes(fixture_table, zip_name: str) -> None:
    base: Path = fixture_table(zip_name)
    logs = [p for p in glob.glob(str(base / "**" / ".*.log.*"), recursive=True) if "/.hoodie/" not in p]
    assert logs
    kinds: set[BlockType] = set()
    for path in logs:
        for block in read_log_file(path):
            kinds.add(block.type)
            if block.type is BlockType.AVRO_DATA:
                table = decode_avro_data_block(block, where=path)
                assert table.num_rows and table.column("_hoodie_commit_time")[0].as_py() == block.instant_time
            elif block.type is BlockType.PARQUET_DATA:
                assert decode_parquet_data_block(block, where=path).num_rows
            elif block.type is BlockType.DELETE:
                assert all(v is not None for v in decode_delete_block(block, where=path).ordering_values)
    assert BlockType.CORRUPTED not in kinds
    assert kinds == ({BlockType.PARQUET_DATA} if "v6" in zip_name else {BlockType.AVRO_DATA, BlockType.DELETE})


_scalar_wrappers = st.one_of(
    st.booleans().map(lambda v: OrderingValue("BooleanWrapper", v)),
    st.integers(-2**31, 2**31 - 1).map(lambda v: OrderingValue("IntWrapper", v)),
    st.integers(-2**63, 2**63 - 1).map(lambda v: OrderingValue("LongWrapper", v)),
    st.floats(allow_nan=False, width=64).map(lambda v: OrderingValue("DoubleWrapper", v)),
    st.text().map(lambda v: OrderingValue("StringWrapper", v)),
    st.binary().map(lambda v: OrderingValue("BytesWrapper", v)),
    st.integers(-10**6, 10**6).map(lambda v: OrderingValue("DateWrapper", v)),
)
_wrappers = st.one_of(st.none(), _scalar_wrappers,
                      st.lists(st.one_of(st.none(), _scalar_wrappers), max_size=3)
                      .map(lambda vs: OrderingValue("ArrayWrapper", tuple(vs))))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(), st.one_of(st.none(), st.text()), _wrappers), max_size=8))
def test_delete_block_round_trip_property(deletes: list) -> None:
    batch = decode_delete_block(_one_block(encode_delete_block("1", deletes)))
    assert list(zip(batch.record_keys, batch.partition_paths, batch.ordering_values)) == deletes
