"""Arrow schema <-> the Avro schema JSON Hudi stores (``hoodie.table.create.schema``, commit ``schema``).

Hudi's Spark writer converts a Spark struct to Avro with record name ``<table>_record`` and namespace
``hoodie.<table>``; every nullable field becomes ``["null", <type>]`` with ``default: null``. We follow
that so Java Hudi, hudi-rs and our own readers agree on the table schema. Only flat schemas of the
types below are supported for writing; anything else raises :class:`InvalidArgumentError` naming the
column.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError

#: an Avro name (the Avro specification, "Names"): what a Hudi column may be called
AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def avro_primitive(t: pa.DataType) -> str | None:
    """The Avro primitive a plain Arrow type maps to (``None`` for booleans, logical and nested types)."""
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    return None


def _avro_type(field: pa.Field, record_name: str) -> Any:
    t = field.type
    if pa.types.is_boolean(t):
        return "boolean"
    primitive = avro_primitive(t)
    if primitive is not None:
        return primitive
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t):
        logical = "timestamp-micros" if t.tz is not None else "local-timestamp-micros"
        return {"type": "long", "logicalType": logical}
    if pa.types.is_decimal(t):
        size = _decimal_fixed_size(t.precision)
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{record_name}.{field.name}",
            "size": size,
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    raise InvalidArgumentError(
        f"column {field.name!r} has type {t}, which hudi_layout cannot write "
        "(supported: boolean, integers, float, double, decimal, string, binary, date, timestamp)"
    )


def _decimal_fixed_size(precision: int) -> int:
    """Smallest byte count whose two's-complement range holds ``precision`` decimal digits."""
    size = 1
    while 2 ** (8 * size - 1) - 1 < 10**precision - 1:
        size += 1
    return size


#: name prefixes of the columns hudi_layout's write jobs add to a write's rows while they work on them
RESERVED_COLUMN_PREFIXES = ("_hl_", "_hoodie_partition_value_")


def require_keepable_column_names(names: Iterable[str]) -> None:
    """Refuse column names a table could not keep: two that differ only in case (Spark resolves names
    case-insensitively by default: no read of the table would work; session 19, through the data source) and
    names of hudi_layout's working columns (:data:`RESERVED_COLUMN_PREFIXES`; Spark's AMBIGUOUS_REFERENCE)."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            raise InvalidArgumentError(
                f"columns {other!r} and {name!r} differ only in case; Spark (case-insensitive by default) could "
                "not read the table back", hint="rename or drop one of them before writing")
        if name.startswith(RESERVED_COLUMN_PREFIXES):
            raise InvalidArgumentError(
                f"column {name!r} starts with {' or '.join(repr(x) for x in RESERVED_COLUMN_PREFIXES)}, the "
                "prefixes of hudi_layout's working columns",
                hint=f"rename it before writing, e.g. df.withColumnRenamed({name!r}, {name.lstrip('_')!r})")


def _avro_safe(name: str) -> str:
    """``name`` with every character an Avro name cannot hold made ``_`` (and ``_`` before a leading digit)."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return safe if safe and not safe[0].isdigit() else f"_{safe}"


def hudi_avro_name(table_name: str) -> str:
    """The table name as Hudi puts it into Avro names (``HoodieAvroUtils.sanitizeName``): an invalid first
    character and every character other than letters, digits and ``_`` become ``__`` (a table ``my-table`` has
    record ``my__table_record`` in namespace ``hoodie.my__table``; Java's Avro parser refuses the raw name)."""
    if not table_name:
        return table_name
    name = table_name if re.match(r"[A-Za-z_]", table_name[0]) else "__" + table_name[1:]
    return re.sub(r"[^A-Za-z0-9_]", "__", name)


def arrow_to_avro_schema(schema: pa.Schema, table_name: str) -> dict[str, Any]:
    """The Avro record schema (as a dict) Hudi would store for ``schema`` (data columns only)."""
    name = hudi_avro_name(table_name)
    record_name = f"{name}_record"
    namespace = f"hoodie.{name}"
    fields = []
    require_keepable_column_names(schema.names)
    for f in schema:
        if not AVRO_NAME.fullmatch(f.name):
            raise InvalidArgumentError(
                f"column {f.name!r} cannot be a Hudi column: Hudi stores the table schema as Avro, whose field names "
                "are letters, digits and '_' and do not start with a digit",
                hint=f"rename it before writing, e.g. df.withColumnRenamed({f.name!r}, {_avro_safe(f.name)!r})")
        avro_t = _avro_type(f, f"{namespace}.{record_name}")
        if f.nullable:
            fields.append({"name": f.name, "type": ["null", avro_t], "default": None})
        else:
            fields.append({"name": f.name, "type": avro_t})
    return {"type": "record", "name": record_name, "namespace": namespace, "fields": fields}


def arrow_to_avro_schema_json(schema: pa.Schema, table_name: str) -> str:
    return json.dumps(arrow_to_avro_schema(schema, table_name), separators=(",", ":"))


def _arrow_type(avro_t: Any) -> pa.DataType:
    if isinstance(avro_t, list):
        non_null = [x for x in avro_t if x != "null"]
        if len(non_null) != 1:
            raise InvalidArgumentError(f"unsupported Avro union {avro_t}")
        return _arrow_type(non_null[0])
    if isinstance(avro_t, dict):
        logical = avro_t.get("logicalType")
        if logical == "date":
            return pa.date32()
        if logical in ("timestamp-micros", "timestamp-millis"):
            return pa.timestamp("us", tz="UTC")
        if logical in ("local-timestamp-micros", "local-timestamp-millis"):
            return pa.timestamp("us")
        if logical == "decimal":
            return pa.decimal128(int(avro_t["precision"]), int(avro_t.get("scale", 0)))
        base = avro_t.get("type")
        if base in ("record", "array", "map", "enum"):
            if base == "enum":
                return pa.string()
            raise InvalidArgumentError(f"nested Avro type {base} is not supported")
        if base == "fixed":
            return pa.binary(int(avro_t["size"]))
        return _arrow_type(base)
    mapping = {
        "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
        "double": pa.float64(), "string": pa.string(), "bytes": pa.binary(), "null": pa.null(),
    }
    if avro_t not in mapping:
        raise InvalidArgumentError(f"unsupported Avro type {avro_t!r}")
    return mapping[avro_t]


def avro_to_arrow_schema(avro_schema: str | dict[str, Any]) -> pa.Schema:
    """Arrow schema of a flat Avro record schema, as the write paths need it (a field of a nested type is
    refused naming it; :func:`readable_arrow_schema` takes those)."""
    parsed = json.loads(avro_schema) if isinstance(avro_schema, str) else avro_schema
    fields = []
    for f in parsed["fields"]:
        nullable = isinstance(f["type"], list) and "null" in f["type"]
        try:
            arrow_t = _arrow_type(f["type"])
        except InvalidArgumentError as e:
            raise InvalidArgumentError(
                f"column {f['name']!r}: {e}; hudi_layout writes and compacts tables of flat columns only",
                hint="reads, explain, index, clean and clustering take such tables; write to it with Hudi, or "
                     "rewrite it without struct / array / map columns") from None
        fields.append(pa.field(f["name"], arrow_t, nullable=nullable))
    return pa.schema(fields)


def readable_arrow_schema(avro_schema: str) -> pa.Schema:
    """Arrow schema of a table's Avro schema for the paths that only read it (scan planning, indexing,
    cleaning): the flat conversion of the write paths, else, for a schema with struct / array / map fields,
    the log-block reader's conversion (the same types for flat fields; every field nullable)."""
    try:
        return avro_to_arrow_schema(avro_schema)
    except InvalidArgumentError:
        from hudi_layout.format.log_blocks import arrow_schema_for_avro

        return arrow_schema_for_avro(avro_schema, where="table schema")


def comparable_type(t: pa.DataType) -> str:
    """A coarse type name used to check that appended data matches the table schema."""
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_large_string(t):
        return "string"
    if pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_timestamp(t):
        return f"timestamp[{'tz' if t.tz else 'ntz'}]"
    return str(t)
