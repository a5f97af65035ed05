"""Schema evolution on write: which changes a write may make to the table schema, and reading old files with
the new schema (docs/schema-evolution.md).

Hudi accepts, out of the box, a write whose schema Avro can *resolve* the table schema against: new columns
(nullable, appended) and the Avro primitive promotions int -> long / float / double, long -> float / double,
float -> double, string <-> bytes (hudi ``AvroSchemaCompatibility``). We accept the subset that every reader
of the table handles for files written before the change:

* **new columns** -- appended to the table schema as nullable (files written before have none: null);
* **int -> long, int -> double, float -> double, string -> binary** -- Spark's parquet reader (vectorised and
  row based) reads old files with the widened type; pyarrow casts them (:func:`conform_batch`);
* int8 / int16 / int32 are all Avro ``int`` and are written as the table's type.

Refused, each with one error naming the column: dropping a column (the data lacks it), narrowing (data of a
narrower type than the table, e.g. int into a long column: Hudi's default, without
``hoodie.datasource.write.reconcile.schema``, refuses it too), any other type change, and the promotions Spark
cannot read back from old files (int -> float, long -> float, long -> double: Spark 4's parquet reader fails on
them, and they lose precision), and binary -> string: the bytes stored before need not be UTF-8, and a string
that is not (Spark reads such bytes as they are) breaks every reader that decodes text, our statistics and
merges included. A table another writer evolved binary -> string is still read, as Spark reads it: the stored
bytes become the string's bytes, unchecked (:func:`widen_array`). Logical types (date, timestamp, decimal) must
keep their exact type.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from hudi_layout.errors import SchemaMismatchError
from hudi_layout.format.schema_conversion import avro_primitive


def _kind(t: pa.DataType) -> str | None:
    """The Avro primitive a plain Arrow type maps to (``None`` for logical and other types)."""
    return avro_primitive(t)


#: (old kind, new kind) pairs every reader reads old files of with the new type
WIDENINGS = frozenset({("int", "long"), ("int", "double"), ("float", "double"), ("string", "bytes")})
#: Avro promotions Hudi accepts that we refuse (Spark's parquet reader cannot read old files with them)
UNREADABLE_PROMOTIONS = frozenset({("int", "float"), ("long", "float"), ("long", "double")})


def is_widening(old: pa.DataType, new: pa.DataType) -> bool:
    """Is ``old`` -> ``new`` one of the accepted :data:`WIDENINGS` (so data of ``old`` fits a ``new`` column)?"""
    return (_kind(old), _kind(new)) in WIDENINGS


def same_type(a: pa.DataType, b: pa.DataType) -> bool:
    """Equal as the table schema sees them (Avro ``int`` covers int8/16/32; large variants are the same)."""
    ka, kb = _kind(a), _kind(b)
    if ka is not None or kb is not None:
        return ka == kb
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
        return (a.tz is None) == (b.tz is None)
    return a == b


@dataclass(frozen=True)
class SchemaChange:
    """What a write does to the table schema (:func:`evolve_schema`)."""

    #: the table schema after the write (table columns in table order, then the new columns)
    schema: pa.Schema
    added: tuple[str, ...] = ()
    #: column -> (type in the table, type after the write)
    widened: dict[str, tuple[pa.DataType, pa.DataType]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.widened)


def evolve_schema(table: pa.Schema, data: pa.Schema, *, table_name: str = "",
                  merging: bool = False) -> SchemaChange:
    """The table schema after writing rows of schema ``data`` into a table of schema ``table``; raises
    :class:`SchemaMismatchError` naming the first column whose change is not supported.

    ``merging``: ``data`` is the schema a finished write settled on, merged into a table schema another writer
    evolved meanwhile: columns it lacks and types narrower than the table's are kept as the table has them
    (its files read back with the table's schema like any older file)."""
    where = f"table {table_name!r}" if table_name else "the table"
    hint = ("new nullable columns and the widenings int->long, int->double, float->double, string->binary "
            "are accepted; select or cast the data to the table's columns otherwise")
    by_name = {f.name: f for f in data}
    fields: list[pa.Field] = []
    widened: dict[str, tuple[pa.DataType, pa.DataType]] = {}
    for f in table:
        got = by_name.get(f.name)
        if got is None and merging:
            fields.append(f)
            continue
        if got is None:
            raise SchemaMismatchError(
                f"column {f.name!r} of {where} is missing from the data (dropping a column is not supported)",
                hint=hint)
        if same_type(f.type, got.type):
            fields.append(f)
            continue
        old, new = _kind(f.type), _kind(got.type)
        if (old, new) in WIDENINGS:
            widened[f.name] = (f.type, got.type)
            fields.append(pa.field(f.name, got.type, nullable=f.nullable or got.nullable))
        elif merging and ((new, old) in WIDENINGS or (new, old) in UNREADABLE_PROMOTIONS):
            fields.append(f)  # the other writer widened it: this write's files read back widened
        elif (old, new) == ("bytes", "string"):
            raise SchemaMismatchError(
                f"column {f.name!r} cannot change from {f.type} to {got.type} in {where}: the bytes stored before "
                "need not be UTF-8 text, which string readers and statistics require",
                hint=f"cast {f.name!r} to binary in the data (the table keeps it binary), or rewrite the table "
                     "with the column as string (mode='overwrite')")
        elif (new, old) in WIDENINGS or (new, old) in UNREADABLE_PROMOTIONS:
            raise SchemaMismatchError(
                f"column {f.name!r} is {got.type} in the data but {f.type} in {where}: narrowing a column is not "
                "supported", hint=f"cast {f.name!r} to {f.type} in the data")
        elif (old, new) in UNREADABLE_PROMOTIONS:
            raise SchemaMismatchError(
                f"column {f.name!r} cannot change from {f.type} to {got.type} in {where}: Spark's parquet reader "
                "cannot read the files written before with the new type (and the change loses precision)",
                hint=hint)
        else:
            raise SchemaMismatchError(
                f"column {f.name!r} cannot change from {f.type} (in {where}) to {got.type} (in the data)",
                hint=hint)
    known = {f.name for f in table}
    added = [f for f in data if f.name not in known]
    fields += [pa.field(f.name, f.type, nullable=True) for f in added]
    return SchemaChange(pa.schema(fields), tuple(f.name for f in added), widened)


def conform_batch(batch: pa.RecordBatch | pa.Table, schema: pa.Schema) -> pa.RecordBatch | pa.Table:
    """``batch`` with exactly the columns of ``schema``, in its order and types: a column the batch lacks (a
    file written before the column was added) is all null; other columns are cast (the widenings above)."""
    n = batch.num_rows
    names = set(batch.schema.names)
    arrays = []
    for f in schema:
        if f.name not in names:
            arrays.append(pa.nulls(n, f.type))
            continue
        col = batch.column(f.name)
        arrays.append(col if col.type == f.type else widen_array(col, f.type))
    if isinstance(batch, pa.Table):
        return pa.Table.from_arrays(arrays, schema=schema)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def widen_array(values: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """``values`` (a column of a file written before a widening) in the table's ``target`` type. Binary read as
    string keeps its bytes unchecked, as Spark's parquet reader does (a table another writer evolved binary ->
    string; our writes refuse that change): pyarrow's cast would fail on bytes that are not UTF-8."""
    t = values.type
    reinterpret = ((pa.types.is_binary(t) and pa.types.is_string(target))
                   or (pa.types.is_large_binary(t) and pa.types.is_large_string(target)))
    if not reinterpret:
        return values.cast(target)
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([_as_text(c, target) for c in values.chunks], type=target)
    return _as_text(values, target)


def _as_text(values: pa.Array, target: pa.DataType) -> pa.Array:
    return pa.Array.from_buffers(target, len(values), values.buffers(), null_count=values.null_count,
                                 offset=values.offset)
