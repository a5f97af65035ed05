"""Schema evolution on write: what a write may change, the one error for everything else, and old files read
with the new schema."""

from __future__ import annotations

import pyarrow as pa
import pytest

from hudi_layout.errors import SchemaMismatchError
from hudi_layout.format.schema_evolution import conform_batch, evolve_schema, widen_array

TABLE = pa.schema([pa.field("id", pa.string(), nullable=False), ("i", pa.int32()), ("l", pa.int64()),
                   ("f", pa.float32()), ("s", pa.string()), ("d", pa.date32()), ("m", pa.decimal128(10, 2))])


def with_(**changes: pa.DataType | None) -> pa.Schema:
    fields = []
    for f in TABLE:
        if f.name in changes:
            if changes[f.name] is not None:
                fields.append(pa.field(f.name, changes[f.name]))
        else:
            fields.append(f)
    return pa.schema(fields)


def test_unchanged_and_int_widths() -> None:
    change = evolve_schema(TABLE, TABLE)
    assert not change.changed and change.schema == TABLE
    # int8 / int16 are Avro int: the table keeps int32 (the writer casts)
    assert evolve_schema(TABLE, with_(i=pa.int16())).schema == TABLE


def test_new_columns_are_appended_nullable_in_data_order() -> None:
    data = pa.schema([pa.field("zz", pa.int64(), nullable=False), *reversed(list(TABLE)), ("aa", pa.string())])
    change = evolve_schema(TABLE, data)
    assert change.added == ("zz", "aa")
    assert change.schema.names == [*TABLE.names, "zz", "aa"]
    assert change.schema.field("zz").nullable


@pytest.mark.parametrize(("column", "new"), [("i", pa.int64()), ("i", pa.float64()), ("f", pa.float64()),
                                              ("s", pa.binary())])
def test_accepted_widenings(column: str, new: pa.DataType) -> None:
    change = evolve_schema(TABLE, with_(**{column: new}))
    assert change.widened == {column: (TABLE.field(column).type, new)}
    assert change.schema.field(column).type == new


@pytest.mark.parametrize(("column", "new", "why"), [
    ("l", None, "missing from the data"),                     # dropped
    ("l", pa.int32(), "narrowing"),                            # long -> int
    ("f", pa.int32(), "narrowing"),
    ("l", pa.float64(), "cannot read"),                        # Avro promotes it; Spark cannot read old files
    ("i", pa.float32(), "cannot read"),
    ("s", pa.int64(), "cannot change"),                        # unrelated
    ("d", pa.timestamp("us", tz="UTC"), "cannot change"),      # logical types keep their type
    ("m", pa.decimal128(12, 2), "cannot change"),
])
def test_incompatible_changes_name_the_column(column: str, new: pa.DataType | None, why: str) -> None:
    with pytest.raises(SchemaMismatchError) as e:
        evolve_schema(TABLE, with_(**{column: new}), table_name="t")
    assert repr(column) in str(e.value) and why in str(e.value)
    assert e.value.hint


def test_merging_keeps_what_another_writer_added_or_widened() -> None:
    current = pa.schema([*TABLE, ("other", pa.string())]).set(TABLE.get_field_index("i"),
                                                              pa.field("i", pa.int64()))
    mine = pa.schema([*TABLE, ("mine", pa.int64())])
    merged = evolve_schema(current, mine, merging=True).schema
    assert merged.names == [*TABLE.names, "other", "mine"]
    assert merged.field("i").type == pa.int64()


def test_conform_batch_fills_missing_columns_and_casts() -> None:
    old = pa.record_batch({"i": pa.array([1, None], pa.int32()), "f": pa.array([0.5, 1.5], pa.float32()),
                           "extra": pa.array([1, 2])})
    target = pa.schema([("i", pa.int64()), ("f", pa.float64()), ("new", pa.string())])
    got = conform_batch(old, target)
    assert got.schema == target
    assert got.to_pydict() == {"i": [1, None], "f": [0.5, 1.5], "new": [None, None]}
    assert conform_batch(pa.Table.from_batches([old]), target).to_pydict() == got.to_pydict()


def test_binary_to_string_is_refused_and_read_as_spark_reads_it() -> None:
    """Our writes refuse binary -> string (stored bytes need not be UTF-8); a table another writer evolved so
    is read as Spark's parquet reader reads it: the bytes become the string's bytes, unchecked."""
    binary_table = TABLE.set(TABLE.get_field_index("s"), pa.field("s", pa.binary()))
    with pytest.raises(SchemaMismatchError, match="need not be UTF-8") as e:
        evolve_schema(binary_table, TABLE, table_name="t")
    assert "'s'" in str(e.value) and e.value.hint
    # string data written while another writer widened string -> binary: the table keeps binary
    assert evolve_schema(binary_table, TABLE, merging=True).schema.field("s").type == pa.binary()
    old_file = pa.table({"s": pa.array([b"\xff\x00", None, b"ok"], pa.binary())})
    got = conform_batch(old_file, pa.schema([("s", pa.string())])).column("s")
    assert got.type == pa.string() and got.null_count == 1
    assert pa.Array.from_buffers(pa.binary(), 3, got.chunk(0).buffers()).to_pylist() == [b"\xff\x00", None, b"ok"]
    sliced = widen_array(pa.array([b"a", b"\xfe", b"bc"], pa.binary()).slice(1), pa.string())
    assert pa.Array.from_buffers(pa.binary(), 2, sliced.buffers(), offset=sliced.offset).to_pylist() == [b"\xfe",
                                                                                                       b"bc"]
