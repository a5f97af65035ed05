from __future__ import annotations

import datetime as dt
import decimal
import io
import json

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.metadata import records as R
from hudi_layout.metadata import stats_values as SV
from hudi_layout.metadata.mdt_reader import MetadataTableReader
from hudi_layout.metadata.schema import metadata_record_schema, metadata_record_schema_str


def _strip(o):
    if isinstance(o, dict):
        return {k: _strip(v) for k, v in o.items() if k != "doc"}
    if isinstance(o, list):
        return [_strip(x) for x in o]
    return o


def _fastavro(value: bytes, schema_text: str) -> R.MetadataRecord:
    d = fastavro.schemaless_reader(io.BytesIO(value), fastavro.parse_schema(json.loads(schema_text)), None,
                                   return_record_name=True, return_record_name_override=True)
    return R._from_fastavro("k", d)


@pytest.mark.parametrize("zip_name", ["cow_v9_txns_simple_meta.zip", "mor_avro_v9_txns_simple_meta.zip"])
def test_schema_and_codec_against_fixture(fixture_table, zip_name: str) -> None:
    reader = MetadataTableReader(fixture_table(zip_name))
    seen = 0
    for part in ("files", "column_stats"):
        for sources in reader._group_sources(part):
            for src in sources:
                # our schema == the writer schema Hudi embedded (docs aside)
                assert _strip(json.loads(src.schema)) == _strip(metadata_record_schema(9))
                assert R.schema_form(src.schema) == 9
                for k, v in src.reader.items():
                    fast = R.decode_record(k.decode(), v, src.schema)
                    ref = _fastavro(v, src.schema)
                    assert fast.files == ref.files and fast.column_stats == ref.column_stats
                    if v[:5] == bytes(5):  # log-block records carry no meta fields: byte-exact re-encode
                        assert R.encode_record(fast, 9) == v
                    seen += 1
    assert seen > 50


def test_v8_form_has_no_value_type() -> None:
    names = [f["name"] for f in metadata_record_schema(8)["fields"][9]["type"][1]["fields"]]
    assert "valueType" not in names and "isTightBound" in names
    assert R.schema_form(metadata_record_schema_str(8)) == 8
    rec = R.column_stats_record("p", "f.parquet", "c", 1, 5, 0, 3, arrow_type=pa.int64(), index_version=1)
    assert _fastavro(R.encode_record(rec, 8), metadata_record_schema_str(8)).column_stats == rec.column_stats


def test_builders_round_trip_through_fastavro() -> None:
    schema = metadata_record_schema_str(9)
    recs = [R.files_partition_record("region=us", {"a.parquet": 10}, deleted=["b.parquet"]),
            R.all_partitions_record(["", "x"]),
            R.column_stats_record("", "f.parquet", "amt", decimal.Decimal("-1.05"), decimal.Decimal("89.99"), 1, 4,
                                  10, 20, pa.decimal128(15, 2)),
            R.column_stats_tombstone("p", "f.parquet", "c")]
    for rec in recs:
        raw = R.encode_record(rec, 9)
        assert R.decode_record(rec.key, raw, schema).files == rec.files
        assert _fastavro(raw, schema).column_stats == rec.column_stats
    assert recs[1].files is not None and "." in recs[1].files
    assert recs[2].column_stats.max == SV.StatValue("BytesWrapper", b"#'")  # 8999 -> 89.99 (§5.5 example)
    assert recs[2].column_stats.value_type == SV.TypeInfo(10, "15,2")


def test_unsupported_type_gives_no_record() -> None:
    assert R.column_stats_record("p", "f", "c", None, None, 0, 1, arrow_type=pa.list_(pa.int32())) is None


TYPES = [
    (pa.int32(), st.integers(-2**31, 2**31 - 1)),
    (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    (pa.float64(), st.floats(allow_nan=False)),
    (pa.string(), st.text()),
    (pa.binary(), st.binary()),
    (pa.bool_(), st.booleans()),
    (pa.date32(), st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))),
    (pa.decimal128(20, 4), st.decimals(min_value=-10**15, max_value=10**15, places=4, allow_nan=False,
                                       allow_infinity=False)),
    (pa.timestamp("us", tz="UTC"), st.integers(-2**62, 2**62)),
    # 38 digits: Python's default decimal context (28 digits) rounded them until session 30 (a probe)
    (pa.decimal128(38, 18), st.decimals(min_value=-10**20 + 1, max_value=10**20 - 1, places=18, allow_nan=False,
                                        allow_infinity=False)),
]


@pytest.mark.parametrize("typ,strategy", TYPES, ids=[str(t) for t, _ in TYPES])
@pytest.mark.parametrize("version", [1, 2])
def test_stat_value_round_trip(typ, strategy, version) -> None:
    if version == 1 and not SV.v1_holds_exactly(typ):  # decimal(30, 15) would round it: no V1 record at all
        assert R.column_stats_record("p", "f", "c", decimal.Decimal(1), decimal.Decimal(2), 0, 2,
                                     arrow_type=typ, index_version=1) is None
        return

    @settings(deadline=None, max_examples=60)
    @pytest.mark.property
    @given(strategy)
    def check(value) -> None:
        info = SV.value_type_for_arrow(typ)
        wrapped = SV.encode(value, info, version)
        rec = R.MetadataRecord("k", 3, column_stats=R.ColumnStat("f", "c", wrapped, wrapped, 1, 0,
                                                                  value_type=info if version == 2 else None))
        form = 9 if version == 2 else 8
        back = R.decode_record("k", R.encode_record(rec, form), metadata_record_schema_str(form)).column_stats
        got = SV.decode(back.min.wrapper, back.min.value, back.value_type)
        if typ == pa.float64() or pa.types.is_timestamp(typ):
            assert got == value
        elif pa.types.is_decimal(typ):
            assert got == value
        else:
            assert pa.array([got], SV.arrow_type_of(back.value_type, back.min.wrapper)).cast(typ)[0].as_py() == \
                pa.array([value], typ)[0].as_py()

    check()


def test_v9_encodings_follow_spec() -> None:
    enc = SV.encode_v2
    assert enc(dt.date(1970, 1, 11), SV.TypeInfo(12)) == SV.StatValue("IntWrapper", 10)
    assert enc(dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.timezone.utc), SV.TypeInfo(16)) == \
        SV.StatValue("LongWrapper", 1_000_000)
    assert SV.value_type_for_arrow(pa.timestamp("us")) == SV.TypeInfo(19)
    assert SV.value_type_for_arrow(pa.timestamp("us", tz="UTC")) == SV.TypeInfo(16)
    assert SV.encode_v1(dt.date(1970, 1, 2), SV.TypeInfo(12)) == SV.StatValue("DateWrapper", 1)
    assert SV.encode_v1(decimal.Decimal("1.5"), SV.TypeInfo(10, "5,1")).wrapper == "DecimalWrapper"
    assert SV.unscaled_to_bytes(8999) == b"#'" and SV.unscaled_to_bytes(-1) == b"\xff"
    assert SV.unscaled_to_bytes(128) == b"\x00\x80" and SV.unscaled_to_bytes(0) == b"\x00"


@pytest.mark.parametrize(("value", "typ"), [(b"x", pa.string()), ("x", pa.binary()), (2.5, pa.int64()),
                                            (2.5, pa.int32())])
@pytest.mark.parametrize("version", [1, 2])
def test_a_statistic_of_another_type_fails_instead_of_being_converted(value, typ, version: int) -> None:
    """str(b"x") is "b'x'" and int(2.5) is 2: a bound converted that way would let readers skip files that hold
    matching rows, so a statistic whose Python type does not fit the column's fails the commit."""
    info = SV.value_type_for_arrow(typ)
    assert info is not None
    with pytest.raises(TypeError, match="does not fit the column's type"):
        SV.encode(value, info, version)
