"""Thrift's compact protocol, generically: read a struct into field lists and write it back byte for byte.

Parquet's footer (``FileMetaData``) and page headers are Thrift structs in the compact protocol
(docs/parquet-splice.md has the parts we rely on). We never need generated classes: a struct is a list of
``[field id, compact type, value]`` in wire order, so a footer read and written again without changes gives
the same bytes, and a writer can change a few fields (offsets) and keep everything it does not know about
(newer statistics, size statistics, encodings) exactly as the original writer wrote it.

Wire format: a field header is one byte ``(id delta << 4) | type`` (delta 1..15 from the previous field id),
or ``type`` followed by the zigzag varint id; booleans live in the header's type (1 true, 2 false); integers
are zigzag varints (i8 is a plain byte); doubles are 8 bytes little-endian; binary is a varint length and
bytes; a list or set header is ``(size << 4) | element type``, or ``0xF0 | element type`` and a varint size
when the size is 15 or more; a map is a varint size, then (when not empty) one byte of key and value types;
stop is a zero byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hudi_layout.format.varint import read_uvarint

STOP = 0
BOOL_TRUE = 1
BOOL_FALSE = 2
BYTE = 3
I16 = 4
I32 = 5
I64 = 6
DOUBLE = 7
BINARY = 8
LIST = 9
SET = 10
MAP = 11
STRUCT = 12
UUID = 13


class ThriftDecodeError(ValueError):
    """Bytes that are not a well-formed compact-protocol struct."""


@dataclass
class ThriftList:
    """A list or set: its compact element type and its values (booleans kept as their wire byte)."""

    element_type: int
    values: list[Any]
    kind: int = LIST


@dataclass
class ThriftMap:
    key_type: int
    value_type: int
    items: list[tuple[Any, Any]]


@dataclass(frozen=True)
class Raw:
    """A field value kept as its wire bytes (not decoded): written back as it was read."""

    data: bytes


#: which fields of a struct to decode: field id -> the shape of its value (for a struct, or a list of structs;
#: None decodes the value whole); fields not named are kept :class:`Raw`. Skipping is cheaper than decoding,
#: and writing a raw field back is a copy.
Shape = dict[int, "Shape | None"]


@dataclass
class ThriftStruct:
    """A struct as read: ``[field id, compact type, value]`` in wire order."""

    fields: list[list[Any]] = field(default_factory=list)

    def get(self, field_id: int, default: Any = None) -> Any:
        for f in self.fields:
            if f[0] == field_id:
                return f[2]
        return default

    def has(self, field_id: int) -> bool:
        return any(f[0] == field_id for f in self.fields)

    def field_ids(self) -> set[int]:
        return {f[0] for f in self.fields}

    def set(self, field_id: int, value: Any, compact_type: int | None = None) -> None:
        """Replace a field's value (keeping its type), or add it in field-id order with ``compact_type``."""
        for f in self.fields:
            if f[0] == field_id:
                f[2] = value
                return
        if compact_type is None:
            raise KeyError(f"field {field_id} is absent and no type was given")
        at = next((i for i, f in enumerate(self.fields) if f[0] > field_id), len(self.fields))
        self.fields.insert(at, [field_id, compact_type, value])

    def remove(self, field_id: int) -> None:
        self.fields = [f for f in self.fields if f[0] != field_id]


# -- reading ----------------------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise ThriftDecodeError("truncated struct")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        out, self.pos = _varint_at(self.buf, self.pos)
        if self.pos > self.end:
            raise ThriftDecodeError("truncated varint")
        return out

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise ThriftDecodeError("truncated binary")
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def skip(self, t: int, depth: int) -> None:
        """Move past a value of type ``t`` without decoding it."""
        try:
            self.pos = _skip(self.buf, self.pos, t, depth)
        except IndexError:
            raise ThriftDecodeError("truncated value") from None
        if self.pos > self.end:
            raise ThriftDecodeError("truncated value")

    def shaped(self, t: int, shape: Shape, depth: int) -> Any:
        """A value decoded as ``shape`` says: a struct, or a list of structs."""
        if t == STRUCT:
            return self.struct(depth + 1, shape)
        if t in (LIST, SET):
            head = self.byte()
            size, et = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if et != STRUCT:
                raise ThriftDecodeError("a shape applies to structs or lists of structs")
            return ThriftList(et, [self.struct(depth + 1, shape) for _ in range(size)], t)
        raise ThriftDecodeError("a shape applies to structs or lists of structs")

    def value(self, t: int, depth: int) -> Any:
        if t in (I16, I32, I64):
            return self.zigzag()
        if t == BINARY:
            return self.take(self.varint())
        if t == STRUCT:
            return self.struct(depth + 1)
        if t in (LIST, SET):
            head = self.byte()
            size, et = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if et in (BOOL_TRUE, BOOL_FALSE):
                return ThriftList(et, [self.byte() for _ in range(size)], t)
            return ThriftList(et, [self.value(et, depth) for _ in range(size)], t)
        if t == BYTE:
            return self.byte()
        if t == DOUBLE:
            return self.take(8)  # kept as bytes: written back exactly (NaN payloads included)
        if t == MAP:
            size = self.varint()
            if size == 0:
                return ThriftMap(0, 0, [])
            kv = self.byte()
            kt, vt = kv >> 4, kv & 0x0F
            return ThriftMap(kt, vt, [(self.value(kt, depth), self.value(vt, depth)) for _ in range(size)])
        if t == UUID:
            return self.take(16)
        raise ThriftDecodeError(f"unknown compact type {t}")

    def struct(self, depth: int = 0, shape: Shape | None = None) -> ThriftStruct:
        if depth > 64:
            raise ThriftDecodeError("structs nested too deeply")
        fields: list[list[Any]] = []
        last = 0
        while True:
            head = self.byte()
            if head == STOP:
                return ThriftStruct(fields)
            t = head & 0x0F
            delta = head >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            if t == BOOL_TRUE or t == BOOL_FALSE:
                fields.append([fid, t, t == BOOL_TRUE])
            elif shape is not None and fid not in shape:
                start = self.pos
                self.skip(t, depth)
                fields.append([fid, t, Raw(bytes(self.buf[start:self.pos]))])
            elif t == I32 or t == I64 or t == I16:
                n = self.varint()
                fields.append([fid, t, (n >> 1) ^ -(n & 1)])
            else:
                sub = None if shape is None else shape[fid]
                fields.append([fid, t, self.value(t, depth) if sub is None else self.shaped(t, sub, depth)])


def _varint_at(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    return read_uvarint(buf, pos, what="thrift varint", error=ThriftDecodeError)


def _skip(buf: bytes | memoryview, pos: int, t: int, depth: int) -> int:
    """The position after a value of type ``t`` at ``pos`` (hot: a footer skips hundreds of values, so integers
    and field headers are stepped over inline; lengths go through :func:`_varint_at`). Raises IndexError, or
    ThriftDecodeError for a truncated length, past the buffer's end."""
    if t == I32 or t == I64 or t == I16:
        while buf[pos] & 0x80:
            pos += 1
        return pos + 1
    if t == BINARY:
        n, pos = _varint_at(buf, pos)
        return pos + n
    if t == STRUCT:
        if depth > 64:
            raise ThriftDecodeError("structs nested too deeply")
        while True:
            head = buf[pos]
            pos += 1
            if head == STOP:
                return pos
            ft = head & 0x0F
            if not head >> 4:  # long-form field id
                while buf[pos] & 0x80:
                    pos += 1
                pos += 1
            if ft == I32 or ft == I64 or ft == I16:
                while buf[pos] & 0x80:
                    pos += 1
                pos += 1
            elif ft != BOOL_TRUE and ft != BOOL_FALSE:
                pos = _skip(buf, pos, ft, depth + 1)
    if t == LIST or t == SET:
        head = buf[pos]
        pos += 1
        size, et = head >> 4, head & 0x0F
        if size == 15:
            size, pos = _varint_at(buf, pos)
        if et == BOOL_TRUE or et == BOOL_FALSE or et == BYTE:
            return pos + size
        for _ in range(size):
            pos = _skip(buf, pos, et, depth)
        return pos
    if t == BYTE:
        return pos + 1
    if t == DOUBLE:
        return pos + 8
    if t == UUID:
        return pos + 16
    if t == MAP:
        size, pos = _varint_at(buf, pos)
        if size:
            kv = buf[pos]
            pos += 1
            for _ in range(size):
                pos = _skip(buf, pos, kv >> 4, depth)
                pos = _skip(buf, pos, kv & 0x0F, depth)
        return pos
    raise ThriftDecodeError(f"unknown compact type {t}")


def read_struct(buf: bytes | memoryview, pos: int = 0, end: int | None = None,
                shape: Shape | None = None) -> tuple[ThriftStruct, int]:
    """The struct at ``buf[pos:]`` and the position after it; ``shape``: which fields to decode (the rest are
    kept :class:`Raw`), None: all of them."""
    r = _Reader(buf, pos, end)
    try:
        s = r.struct(0, shape)
    except IndexError as e:  # pragma: no cover - _Reader checks bounds itself
        raise ThriftDecodeError("truncated struct") from e
    return s, r.pos


def decode_raw(t: int, value: Any) -> Any:
    """A field value of type ``t`` decoded whole (a :class:`Raw` one is decoded now; others pass through)."""
    if not isinstance(value, Raw):
        return value
    r = _Reader(value.data)
    out = r.value(t, 0)
    if r.pos != len(value.data):
        raise ThriftDecodeError("raw value longer than its type")
    return out


# -- writing ----------------------------------------------------------------------------------------------


def _varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) ^ (n >> 63) if n < 0 else n << 1)


def _write_value(out: bytearray, t: int, v: Any) -> None:
    if isinstance(v, Raw):
        out += v.data
    elif t in (I16, I32, I64):
        _zigzag(out, v)
    elif t == BINARY:
        _varint(out, len(v))
        out += v
    elif t == STRUCT:
        _write_struct(out, v)
    elif t in (LIST, SET):
        et, values = v.element_type, v.values
        if len(values) < 15:
            out.append((len(values) << 4) | et)
        else:
            out.append(0xF0 | et)
            _varint(out, len(values))
        if et in (BOOL_TRUE, BOOL_FALSE):
            out += bytes(values)
        else:
            for x in values:
                _write_value(out, et, x)
    elif t == BYTE:
        out.append(v & 0xFF)
    elif t in (DOUBLE, UUID):
        out += v
    elif t == MAP:
        _varint(out, len(v.items))
        if v.items:
            out.append((v.key_type << 4) | v.value_type)
            for k, x in v.items:
                _write_value(out, v.key_type, k)
                _write_value(out, v.value_type, x)
    else:
        raise ValueError(f"unknown compact type {t}")


def _write_struct(out: bytearray, s: ThriftStruct) -> None:
    last = 0
    for fid, t, v in s.fields:
        if t == BOOL_TRUE or t == BOOL_FALSE:
            t = BOOL_TRUE if v else BOOL_FALSE
        delta = fid - last
        if 0 < delta <= 15:
            out.append((delta << 4) | t)
        else:
            out.append(t)
            _zigzag(out, fid)
        last = fid
        if t != BOOL_TRUE and t != BOOL_FALSE:
            _write_value(out, t, v)
    out.append(STOP)


def write_struct(s: ThriftStruct) -> bytes:
    out = bytearray()
    _write_struct(out, s)
    return bytes(out)
