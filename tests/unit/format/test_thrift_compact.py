"""Thrift compact protocol (hudi_layout.format.thrift_compact): real parquet footers read and written back byte
for byte, whole or with fields kept raw; hand-built structs with every wire form; malformed bytes refused."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.format import thrift_compact as tc
from hudi_layout.format.parquet_splice import read_footer


def _footer_bytes(table: pa.Table, **options) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **options)
    data = sink.getvalue()
    n = int.from_bytes(data[-8:-4], "little")
    return data[len(data) - 8 - n:len(data) - 8]


def _tables() -> list[tuple[pa.Table, dict]]:
    flat = pa.table({"i": pa.array([1, None, -5], pa.int64()), "s": pa.array(["a", "é", None]),
                     "d": pa.array([0.5, float("nan"), None]), "b": pa.array([True, False, None]),
                     "t": pa.array([1, 2, 3], pa.timestamp("us", "UTC")),
                     "m": pa.array([1, 2, 3], pa.decimal128(12, 2))})
    nested = pa.table({"st": pa.array([{"x": 1, "y": "a"}, None]), "l": pa.array([[1, 2], []]),
                       "mp": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32()))})
    wide = pa.table({f"c{i}": pa.array([i]) for i in range(40)})  # lists of 15+ elements, long field runs
    return [(flat, {}), (flat, {"write_page_index": True, "compression": "zstd"}),
            (flat, {"use_dictionary": False, "write_statistics": False}), (nested, {}), (wide, {}),
            (flat, {"row_group_size": 1})]


@pytest.mark.parametrize("case", range(6))
def test_real_footers_round_trip_byte_for_byte(case: int) -> None:
    table, options = _tables()[case]
    raw = _footer_bytes(table, **options)
    whole, end = tc.read_struct(raw)
    assert end == len(raw) and tc.write_struct(whole) == raw
    # a shape decodes the row groups only; every other field stays raw and is written back as it was
    shaped, end = tc.read_struct(raw, shape={4: {1: {3: {9: None}}}})
    assert end == len(raw) and tc.write_struct(shaped) == raw
    assert any(isinstance(v, tc.Raw) for _f, _t, v in shaped.fields)


def test_a_decoded_raw_field_equals_the_whole_decoding() -> None:
    raw = _footer_bytes(_tables()[0][0])
    whole, _ = tc.read_struct(raw)
    shaped, _ = tc.read_struct(raw, shape={})
    for (fid, t, v), (fid2, t2, v2) in zip(whole.fields, shaped.fields):
        assert (fid, t) == (fid2, t2) and tc.decode_raw(t2, v2) == v


_values = st.deferred(lambda: st.one_of(
    st.tuples(st.just(tc.I64), st.integers(-2**63, 2**63 - 1)),
    st.tuples(st.just(tc.I32), st.integers(-2**31, 2**31 - 1)),
    st.tuples(st.just(tc.I16), st.integers(-2**15, 2**15 - 1)),
    st.tuples(st.just(tc.BINARY), st.binary(max_size=40)),
    st.tuples(st.just(tc.BYTE), st.integers(0, 255)),
    st.tuples(st.just(tc.DOUBLE), st.binary(min_size=8, max_size=8)),
    st.booleans().map(lambda b: (tc.BOOL_TRUE if b else tc.BOOL_FALSE, b)),  # a bool's type is its value
    st.tuples(st.just(tc.LIST), st.lists(st.integers(-1000, 1000), max_size=20).map(
        lambda xs: tc.ThriftList(tc.I32, xs))),
    st.tuples(st.just(tc.LIST), st.lists(st.sampled_from([1, 2]), max_size=20).map(
        lambda xs: tc.ThriftList(tc.BOOL_TRUE, xs))),
    st.tuples(st.just(tc.MAP), st.lists(st.tuples(st.binary(max_size=5), st.integers(-9, 9)), max_size=4).map(
        lambda kv: tc.ThriftMap(tc.BINARY, tc.I64, kv) if kv else tc.ThriftMap(0, 0, []))),
    st.tuples(st.just(tc.STRUCT), _structs),
))
_structs = st.deferred(lambda: st.lists(
    st.tuples(st.integers(1, 300), _values), max_size=6, unique_by=lambda f: f[0]).map(
    lambda fs: tc.ThriftStruct([[fid, t, v] for fid, (t, v) in sorted(fs, key=lambda f: f[0])])))


@settings(max_examples=200, deadline=None)
@given(_structs)
def test_hand_built_structs_survive_a_write_and_a_read(s: tc.ThriftStruct) -> None:
    data = tc.write_struct(s)
    back, end = tc.read_struct(data)
    assert end == len(data) and back == s
    skipped = tc._skip(data, 0, tc.STRUCT, 0)
    assert skipped == len(data)
    assert tc.write_struct(tc.read_struct(data, shape={})[0]) == data


@pytest.mark.parametrize("cut", [1, 5, 40, 200])
def test_truncated_footers_are_refused(cut: int) -> None:
    raw = _footer_bytes(_tables()[0][0])
    with pytest.raises(tc.ThriftDecodeError):
        tc.read_struct(raw[:-cut])
    with pytest.raises(tc.ThriftDecodeError):
        tc.read_struct(raw[:-cut], shape={})


def test_bytes_that_are_not_parquet_are_refused() -> None:
    with pytest.raises(tc.ThriftDecodeError):
        read_footer(b"PAR1" + b"\x00" * 20)
    with pytest.raises(tc.ThriftDecodeError):
        read_footer(b"not parquet at all")
