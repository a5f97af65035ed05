"""Partition paths: Hudi's encoding of partition values into folder names, and the rules that keep every
partition folder a single safe segment under the table's base path.

Hudi builds a record's partition path field by field (``KeyGenUtils.getRecordPartitionPath``): a null or
empty value becomes ``__HIVE_DEFAULT_PARTITION__``; otherwise, when
``hoodie.datasource.write.partitionpath.urlencode=true``, the value goes through Hive's path escaper
(``PartitionPathEncodeUtils.escapePathName``: control characters and ``"#%'*/:=?\\{[]^`` plus DEL become
``%XX``, upper-case hex; nothing else changes); with hive-style partitioning the segment is
``<field>=<value>``; segments are joined with ``/`` (live-tables notes §6.1-§6.4). Our choices on top of it
are in ``docs/safety.md``.

Hudi's own writer without url-encoding turns a ``/`` inside a value into nested folders, and guards only
against ``..`` segments. hudi_layout never lets a value choose where a file lands:

* with url-encoding, Hudi's escaper runs, and a segment that would still start with ``.`` (``.``, ``..``,
  ``.hoodie``, hidden names that listings skip) gets that first dot written as ``%2E``. Hudi's unescaper
  turns ``%2E`` back into ``.``, so readers that decode (Hudi, and us) see the original value.
* without url-encoding (Hudi's default, and a table property that cannot change later), a value whose
  segment would not be one ordinary folder name is refused: a ``/`` or NUL inside it, ``.``/``..``, a
  leading ``.``. The error names the value and the option that encodes it.
* either way a segment longer than :data:`MAX_SEGMENT_BYTES` UTF-8 bytes (what Linux file systems hold in
  one name) is refused: no encoding makes it shorter.

Everything here is pure string work (plus one Arrow helper), used by the executors' writer and by the
read side's partition pruning, so both apply exactly the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hudi_layout.errors import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow as pa

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: Hudi before 0.12 wrote ``default`` for null values; readers treat both as null
DEPRECATED_DEFAULT_PARTITION = "default"
#: longest folder name (in UTF-8 bytes) that ext4, xfs, btrfs and tmpfs accept (NAME_MAX)
MAX_SEGMENT_BYTES = 255
URL_ENCODE_OPTION = "hoodie.datasource.write.partitionpath.urlencode"

#: Hive's FileUtils.charToEscape, which Hudi's PartitionPathEncodeUtils copies
_ESCAPED_CHARS = frozenset([chr(c) for c in range(0x00, 0x20)] + list('"#%\'*/:=?\\\x7f{[]^'))
_FULLWIDTH_HEX = {**{chr(0xFF21 + i): 10 + i for i in range(6)}, **{chr(0xFF41 + i): 10 + i for i in range(6)}}


class UnsafePartitionPathError(InvalidArgumentError):
    """A partition value or path that cannot be one safe folder name under the base path."""


# ----------------------------------------------------------------------------------- Hudi's escaper


def escape_path_name(value: str) -> str:
    """``PartitionPathEncodeUtils.escapePathName``: ``%XX`` (upper-case hex) for the Hive escape set.

    Only characters below 128 are ever escaped, so iterating code points gives the same result as Java's
    iteration over UTF-16 units. ``""`` becomes the default partition, as in Hudi.
    """
    if not value:
        return DEFAULT_PARTITION
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED_CHARS else c for c in value)


def _java_hex_digit(c: str) -> int:
    """``Character.digit(c, 16)``: ASCII hex, any Unicode decimal digit, full-width A-F; -1 otherwise."""
    if "0" <= c <= "9":
        return ord(c) - 48
    if "a" <= c.lower() <= "f" and c.isascii():
        return ord(c.lower()) - 87
    if c in _FULLWIDTH_HEX:
        return _FULLWIDTH_HEX[c]
    if c.isdecimal():
        import unicodedata

        return unicodedata.decimal(c, -1)
    return -1


def _java_parse_hex2(s: str) -> int:
    """``Integer.parseInt(s, 16)`` for a two-character ``s`` (a sign is allowed); -1 when it throws."""
    if len(s) != 2:
        return -1
    if s[0] in "+-":
        d = _java_hex_digit(s[1])
        if d < 0:
            return -1
        return d if s[0] == "+" else -d
    hi, lo = _java_hex_digit(s[0]), _java_hex_digit(s[1])
    return -1 if hi < 0 or lo < 0 else hi * 16 + lo


def unescape_path_name(path: str) -> str:
    """``PartitionPathEncodeUtils.unescapePathName``, quirks included: ``%`` decodes when two characters
    follow and Java's ``parseInt(.., 16)`` reads them as a value >= 0 (so ``%+F`` is char 15 and ``%-0``
    is char 0, while ``%-1``, a trailing ``%`` or ``%X`` stay literal)."""
    out: list[str] = []
    i, n = 0, len(path)
    while i < n:
        c = path[i]
        if c == "%" and i + 2 < n:
            code = _java_parse_hex2(path[i + 1:i + 3])
            if code >= 0:
                out.append(chr(code))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


# ----------------------------------------------------------------------------------- safety rules


def segment_problem(segment: str) -> str | None:
    """Why ``segment`` cannot be one folder name under the base path, or ``None`` when it can."""
    if segment == "":
        return "it is empty"
    if "\x00" in segment:
        return "it contains a NUL character, which no file name can hold"
    if "/" in segment:
        return "it contains '/', which would create nested folders"
    if segment in (".", ".."):
        return f"{segment!r} is not a folder name ('..' would leave the table)"
    if segment.startswith("."):
        return "it starts with '.', which makes a hidden folder that readers skip (or Hudi's own .hoodie)"
    size = len(segment.encode("utf-8", "surrogatepass"))
    if size > MAX_SEGMENT_BYTES:
        return f"it is {size} bytes long; a folder name holds at most {MAX_SEGMENT_BYTES}"
    return None


def check_partition_path(partition_path: str) -> str:
    """Refuse a relative partition path that could leave the base path or reach a hidden folder.

    ``""`` (non-partitioned) is fine; otherwise every ``/``-separated segment must pass
    :func:`segment_problem` (so no absolute path, no ``..``, no empty or hidden segment, no NUL). Used as
    the last check before files are created, whatever produced the path (our encoder, a clustering plan,
    an existing table's listing). Returns the path unchanged.
    """
    if partition_path == "":
        return partition_path
    if not isinstance(partition_path, str):
        raise UnsafePartitionPathError(f"partition path {partition_path!r} is not a string")
    for segment in partition_path.split("/"):
        problem = segment_problem(segment)
        if problem is not None:
            raise UnsafePartitionPathError(
                f"refusing partition path {_show(partition_path)}: segment {_show(segment)} is unsafe ({problem})",
                hint="partition paths must be relative folder names inside the table")
    return partition_path


def field_problem(field: str) -> str | None:
    """Why ``field`` cannot be the ``<field>=`` prefix of a hive-style segment, or ``None``."""
    if field == "":
        return "it is empty"
    for bad, why in (("/", "'/'"), ("\x00", "a NUL character"), ("=", "'='")):
        if bad in field:
            return f"it contains {why}"
    if field.startswith("."):
        return "it starts with '.'"
    return None


def _show(value: str, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 5] + "...'" + f" ({len(value)} chars)"


# ----------------------------------------------------------------------------------- the rule


@dataclass(frozen=True)
class PartitionPathRule:
    """How a table turns partition values into its partition path (fields in order, hive style, url-encode).

    ``hoodie.datasource.write.hive_style_partitioning`` and ``hoodie.datasource.write.partitionpath.urlencode``
    are table properties: the rule of an existing table comes from its ``hoodie.properties``.
    """

    fields: tuple[str, ...]
    hive_style: bool = False
    url_encode: bool = False

    def check_fields(self) -> None:
        """Refuse field names that cannot prefix a hive-style segment (validation before any write)."""
        if not self.hive_style:
            return
        for f in self.fields:
            problem = field_problem(f)
            if problem is not None:
                raise UnsafePartitionPathError(
                    f"partition field {f!r} cannot name a hive-style partition folder: {problem}",
                    hint="rename the column, or set hoodie.datasource.write.hive_style_partitioning=false")

    def segment(self, field: str, value: str | None) -> str:
        """The folder name for one field's value (``None``/``""``: the default partition). Raises
        :class:`UnsafePartitionPathError` naming the value and the option that encodes it."""
        if value is None or value == "":
            text = DEFAULT_PARTITION
        elif self.url_encode:
            text = escape_path_name(value)
            if text.startswith(".") and not self.hive_style:
                text = "%2E" + text[1:]
        else:
            text = value
        seg = f"{field}={text}" if self.hive_style else text
        problem = segment_problem(seg)
        if problem is not None:
            if self.url_encode or "bytes long" in problem:
                hint = "shorten the value (for example a hash or a prefix of it in a derived column)"
            else:
                hint = (f"write the table with {URL_ENCODE_OPTION}=true (Hudi's %XX escaping) - a table "
                        "property, chosen when the table is created - or clean the column")
            raise UnsafePartitionPathError(
                f"partition value {_show(value or '')} of field {field!r} cannot be a partition folder: {problem}",
                hint=hint)
        return seg

    def path(self, values: Sequence[str | None]) -> str:
        """The partition path for one record's values (``""`` when the table is not partitioned)."""
        if len(values) != len(self.fields):
            raise InvalidArgumentError(f"{len(self.fields)} partition fields {list(self.fields)} but "
                                       f"{len(values)} values")
        return "/".join(self.segment(f, v) for f, v in zip(self.fields, values, strict=True))

    def values(self, partition_path: str) -> dict[str, str | None] | None:
        """Inverse of :meth:`path`: field -> value (``None`` for the default partition), or ``None`` when the
        path does not split into this table's fields (a reader must then treat the values as unknown).

        Tables Hudi wrote without url-encoding may hold a ``/`` inside a value; with one field, extra
        segments are that field's value.
        """
        if not self.fields:
            return {} if partition_path in ("", ".") else None
        segments = [s for s in partition_path.strip("/").split("/") if s not in ("", ".")]
        if self.hive_style:
            found: dict[str, str] = {}
            for seg in segments:
                key, sep, text = seg.partition("=")
                if not sep or key in found:
                    return None
                found[key] = text
            if set(found) != set(self.fields):
                return None
            raw = [found[f] for f in self.fields]
        elif len(segments) == len(self.fields):
            raw = segments
        elif len(self.fields) == 1 and segments:
            raw = ["/".join(segments)]
        else:
            return None
        out: dict[str, str | None] = {}
        for f, text in zip(self.fields, raw, strict=True):
            if text in (DEFAULT_PARTITION, DEPRECATED_DEFAULT_PARTITION):
                out[f] = None
            else:
                out[f] = unescape_path_name(text) if self.url_encode else text
        return out

    def arrow_paths(self, columns: Sequence[pa.Array | pa.ChunkedArray]) -> pa.Array:
        """:meth:`path` for whole Arrow string columns (one per field, nulls allowed), computed once per
        distinct value: what the executors' writer uses, so every write path encodes alike."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if len(columns) != len(self.fields):
            raise InvalidArgumentError(f"{len(self.fields)} partition fields but {len(columns)} value columns")
        if not self.fields:
            raise InvalidArgumentError("a non-partitioned table has no partition value columns")
        segments = []
        for field, column in zip(self.fields, columns, strict=True):
            col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
            if not pa.types.is_string(col.type):
                col = pc.cast(col, pa.string())
            encoded = col.dictionary_encode(null_encoding="encode")
            dictionary = encoded.dictionary.to_pylist()
            mapped = pa.array([self.segment(field, v) for v in dictionary], pa.string())
            segments.append(mapped.take(encoded.indices))
        if len(segments) == 1:
            return segments[0]
        return pc.binary_join_element_wise(*segments, "/")
