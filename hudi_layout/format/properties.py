"""Java ``.properties`` files and Hudi's ``hoodie.properties`` table config.

Java's format (``java.util.Properties.load``/``store``): ISO-8859-1 text, ``#``/``!`` comment lines,
key and value separated by the first unescaped ``=``, ``:`` or whitespace, backslash escapes
(``\\t \\n \\r \\f``, ``\\uXXXX``, any other ``\\c`` = ``c``), lines continued with a trailing odd backslash.
Hudi stores schemas in it, so ``:`` and ``=`` inside values are escaped on write.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path

from hudi_layout.errors import CorruptFileError, NotAHudiTableError
from hudi_layout.format.capabilities import TABLE_TYPES, version_refusal
from hudi_layout.format.fileio import atomic_write
from hudi_layout.format.internal_schema import history_name_changes

PROPERTIES_FILE = "hoodie.properties"
BACKUP_FILE = "hoodie.properties.backup"

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterator[str]:
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while _ends_with_odd_backslashes(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        if _ends_with_odd_backslashes(line):
            line = line[:-1]
        yield line


def _ends_with_odd_backslashes(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _unescape(s: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\" or i + 1 >= len(s):
            out.append(c)
            i += 1
            continue
        n = s[i + 1]
        if n == "u":
            hexpart = s[i + 2 : i + 6]
            try:
                out.append(chr(int(hexpart, 16)))
            except ValueError as exc:
                raise CorruptFileError(f"malformed \\uxxxx escape {s[i:i + 6]!r} in properties") from exc
            i += 6
        else:
            out.append(_ESCAPES.get(n, n))
            i += 2
    joined = "".join(out)
    # \uD83D\uDE00 style surrogate pairs -> one code point
    return joined.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java properties text into an ordered dict (later keys override earlier ones)."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        i = 0
        key_end = len(line)
        while i < len(line):
            c = line[i]
            if c == "\\":
                i += 2
                continue
            if c in "=: \t\f":
                key_end = i
                break
            i += 1
        key = line[:key_end]
        rest = line[key_end:]
        # skip whitespace, then at most one separator '=' or ':', then whitespace
        rest = rest.lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        result[_unescape(key)] = _unescape(rest)
    return result


def _escape(s: str, *, is_key: bool) -> str:
    out: list[str] = []
    for idx, c in enumerate(s):
        if c == "\\":
            out.append("\\\\")
        elif c == " ":
            out.append("\\ " if (is_key or idx == 0) else " ")
        elif c in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[c])
        elif c in "=:#!":
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            units = c.encode("utf-16-be")
            out.extend(f"\\u{int.from_bytes(units[j:j + 2], 'big'):04X}" for j in range(0, len(units), 2))
        else:
            out.append(c)
    return "".join(out)


def format_properties(mapping: Mapping[str, str], comments: tuple[str, ...] = ()) -> bytes:
    """Serialise like ``Properties.store``: comment lines, a date line, then escaped ``k=v`` lines.

    Non-ASCII characters are written as ``\\uXXXX`` so the output is pure ASCII (valid ISO-8859-1).
    Keys are sorted (Hudi's ``OrderedProperties`` order is irrelevant to readers).
    """
    lines = [f"#{c}" for c in comments]
    lines.append("#" + datetime.now(timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y"))
    for k in sorted(mapping):
        lines.append(f"{_escape(k, is_key=True)}={_escape(str(mapping[k]), is_key=False)}")
    return ("\n".join(lines) + "\n").encode("latin-1")


def read_properties_file(path: str | os.PathLike[str]) -> dict[str, str]:
    data = Path(path).read_bytes()
    return parse_properties(data.decode("latin-1"))


def compute_checksum(props: Mapping[str, str]) -> int:
    """Hudi's ``hoodie.table.checksum``: unsigned CRC32 of UTF-8 ``"<database>.<table>"``."""
    if "hoodie.table.name" not in props:
        raise CorruptFileError("cannot compute hoodie.table.checksum: hoodie.table.name is missing")
    db = props.get("hoodie.database.name", "") or ""
    return zlib.crc32(f"{db}.{props['hoodie.table.name']}".encode()) & 0xFFFFFFFF


def write_properties(path: str | os.PathLike[str], mapping: Mapping[str, str]) -> None:
    """Write ``hoodie.properties`` (``path`` = the file or its ``.hoodie`` dir) with a correct checksum.

    Follows Java's update sequence: copy the current file to ``hoodie.properties.backup``, write the new
    file, re-read and verify the checksum, then delete the backup. A crash in between leaves the backup,
    which Java (and :func:`load_properties`) falls back to.
    """
    p = Path(path)
    if p.is_dir() or p.name != PROPERTIES_FILE:
        p = p / PROPERTIES_FILE
    props = {k: str(v) for k, v in mapping.items()}
    props["hoodie.table.checksum"] = str(compute_checksum(props))
    backup = p.with_name(BACKUP_FILE)
    if p.exists():
        atomic_write(backup, p.read_bytes())
    atomic_write(p, format_properties(props, comments=("Updated by hudi_layout",)))
    reread = read_properties_file(p)
    if reread.get("hoodie.table.checksum") != str(compute_checksum(reread)):
        raise CorruptFileError(f"{p}: checksum verification failed after write")
    if backup.exists():
        backup.unlink()


def _split_list(value: str | None) -> list[str]:
    if not value:
        return []
    return [v.strip() for v in value.split(",") if v.strip()]


def _bool(value: str | None, default: bool) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() == "true"


class TableProperties(Mapping[str, str]):
    """Read-only view of ``hoodie.properties`` with typed accessors."""

    def __init__(self, props: Mapping[str, str], source: str = "<memory>", *, internal_schema: bool = False,
                 column_name_changes: tuple[str, ...] = ()) -> None:
        self._props = dict(props)
        self.source = source
        #: the table keeps Hudi's internal schema history (``.hoodie/.schema``; :mod:`.internal_schema`)
        self.internal_schema = internal_schema
        #: where that history renames a column or re-adds a dropped name: reading by name would differ
        self.column_name_changes = column_name_changes

    def __getitem__(self, key: str) -> str:
        return self._props[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._props)

    def __len__(self) -> int:
        return len(self._props)

    def __repr__(self) -> str:
        return f"TableProperties({self.source!r}, name={self.get('hoodie.table.name')!r})"

    def to_dict(self) -> dict[str, str]:
        return dict(self._props)

    @property
    def table_name(self) -> str:
        return self._props["hoodie.table.name"]

    @property
    def database_name(self) -> str | None:
        return self._props.get("hoodie.database.name") or None

    @property
    def table_type(self) -> str:
        return self._props.get("hoodie.table.type", "COPY_ON_WRITE").upper()

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    @property
    def version(self) -> int:
        return int(self._props["hoodie.table.version"])

    @property
    def timeline_layout_version(self) -> int:
        v = self._props.get("hoodie.timeline.layout.version")
        if v:
            return int(v)
        return 2 if self.version >= 8 else 1

    @property
    def timeline_path(self) -> str:
        """Timeline folder relative to ``.hoodie`` (``""`` for layout 1)."""
        if self.timeline_layout_version < 2:
            return ""
        return self._props.get("hoodie.timeline.path") or "timeline"

    @property
    def record_key_fields(self) -> list[str]:
        return _split_list(self._props.get("hoodie.table.recordkey.fields"))

    @property
    def partition_fields(self) -> list[str]:
        """Partition field names; v9 custom keygen ``field:type`` suffixes are stripped."""
        return [f.split(":", 1)[0] for f in _split_list(self._props.get("hoodie.table.partition.fields"))]

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields)

    @property
    def hive_style_partitioning(self) -> bool:
        return _bool(self._props.get("hoodie.datasource.write.hive_style_partitioning"), False)

    @property
    def url_encode_partitioning(self) -> bool:
        return _bool(self._props.get("hoodie.datasource.write.partitionpath.urlencode"), False)

    @property
    def base_file_format(self) -> str:
        return (self._props.get("hoodie.table.base.file.format") or "PARQUET").upper()

    @property
    def base_file_extension(self) -> str:
        exts = {"PARQUET": ".parquet", "HFILE": ".hfile", "ORC": ".orc"}
        return exts.get(self.base_file_format, ".parquet")

    @property
    def metadata_partitions(self) -> list[str]:
        return _split_list(self._props.get("hoodie.table.metadata.partitions"))

    @property
    def metadata_partitions_inflight(self) -> list[str]:
        return _split_list(self._props.get("hoodie.table.metadata.partitions.inflight"))

    @property
    def populate_meta_fields(self) -> bool:
        return _bool(self._props.get("hoodie.populate.meta.fields"), True)

    @property
    def keygenerator(self) -> str | None:
        """``hoodie.table.keygenerator.type`` (v8+) or ``.class`` (v6), whichever is set."""
        return self._props.get("hoodie.table.keygenerator.type") or self._props.get(
            "hoodie.table.keygenerator.class") or None

    @property
    def precombine_fields(self) -> list[str]:
        return _split_list(self._props.get("hoodie.table.ordering.fields")
                           or self._props.get("hoodie.table.precombine.field"))

    @property
    def create_schema(self) -> str | None:
        return self._props.get("hoodie.table.create.schema") or None

    @property
    def timeline_timezone(self) -> str:
        return (self._props.get("hoodie.table.timeline.timezone") or "LOCAL").upper()

    @property
    def checksum(self) -> int | None:
        v = self._props.get("hoodie.table.checksum")
        return int(v) if v else None

    def checksum_valid(self) -> bool:
        return self.checksum is not None and self.checksum == compute_checksum(self._props)


#: key generators whose partition value is derived (a date bucket of a timestamp): the column still varies
#: inside a partition, so sorting by it is meaningful
_DERIVED_PARTITION_KEYGENS = ("TIMESTAMP", "TIMESTAMP_AVRO", "TimestampBasedKeyGenerator",
                              "TimestampBasedAvroKeyGenerator")


def constant_partition_columns(props: TableProperties) -> list[str]:
    """Partition fields whose value is constant within a partition (all, except timestamp-keygen ones)."""
    raw = [f.strip() for f in (props.get("hoodie.table.partition.fields") or "").split(",") if f.strip()]
    keygen = props.keygenerator or ""
    out = []
    for spec in raw:
        name, _, kind = spec.partition(":")
        derived_keygen = keygen.rsplit(".", 1)[-1] in _DERIVED_PARTITION_KEYGENS
        if kind.upper() == "TIMESTAMP" or (not kind and derived_keygen):
            continue
        out.append(name)
    return out


def table_config_exists(hoodie_dir: str | os.PathLike[str]) -> bool:
    """Whether ``hoodie_dir`` holds a table config: ``hoodie.properties``, or only the backup that an update
    cut short between deleting the old file and writing the new one left (Java then reads the backup, and so
    does :func:`load_properties`; every "is there a table?" test asks this one function)."""
    d = Path(hoodie_dir)
    return (d / PROPERTIES_FILE).is_file() or (d / BACKUP_FILE).is_file()


def require_table_config(hoodie_dir: str | os.PathLike[str]) -> None:
    """Raise :class:`NotAHudiTableError` unless ``hoodie_dir`` holds a table config (:func:`table_config_exists`),
    naming what is missing: the folder or the file."""
    d = Path(hoodie_dir)
    if not table_config_exists(d):
        raise NotAHudiTableError(f"{d.parent}: not a Hudi table ({_why_not_a_table(d.parent)})")


def _why_not_a_table(base: Path) -> str:
    if base.is_file():
        return "a file, not a folder"
    if base.is_symlink() and not base.exists():
        return "a symbolic link to nothing (or to itself)"
    if not base.exists():
        return "directory does not exist"
    return f"missing {base / '.hoodie' / PROPERTIES_FILE}"


def metadata_table_exists(base_path: str | os.PathLike[str]) -> bool:
    """Whether the table at ``base_path`` has a metadata table (``.hoodie/metadata`` with its table config)."""
    return table_config_exists(Path(base_path) / ".hoodie" / "metadata" / ".hoodie")


def recover_table_config(hoodie_dir: str | os.PathLike[str]) -> bool:
    """Put ``hoodie.properties`` back from a valid backup when only the backup is left; ``True`` if it did.

    Java's ``HoodieTableConfig`` does this before it next modifies the config; we do it before any change to
    the table (other readers, hudi-rs among them, do not look at the backup). The file is created only if it
    is still missing (a hard link of a complete temporary copy), so a writer that put a new file there
    meanwhile keeps it. The backup stays: it is what Java falls back to and deletes on its next update.
    """
    d = Path(hoodie_dir)
    main, backup = d / PROPERTIES_FILE, d / BACKUP_FILE
    if main.exists() or not backup.is_file():
        return False
    if load_properties(d).source != str(backup):  # raises for a backup that is not a valid config
        return False
    tmp = d / f".{PROPERTIES_FILE}.recover-{os.getpid()}"
    atomic_write(tmp, backup.read_bytes())
    try:
        os.link(tmp, main)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def load_properties(hoodie_dir: str | os.PathLike[str]) -> TableProperties:
    """Load ``<hoodie_dir>/hoodie.properties`` (falling back to the backup, as Java does).

    ``hoodie_dir`` is a ``.hoodie`` folder (of the data table or of the metadata table). As in Java's
    ``HoodieTableConfig``, a file whose ``hoodie.table.checksum`` does not match its table name is invalid:
    the backup is tried next, and when no file is valid the table is refused (Java fails the same way).
    """
    d = Path(hoodie_dir)
    main = d / PROPERTIES_FILE
    backup = d / BACKUP_FILE
    require_table_config(d)
    candidates = [p for p in (main, backup) if p.is_file()]
    props: dict[str, str] | None = None
    source = candidates[0]
    mismatch: tuple[Path, str, int] | None = None
    for cand in candidates:
        parsed = read_properties_file(cand)
        if "hoodie.table.name" not in parsed:
            continue
        chk = parsed.get("hoodie.table.checksum")
        if chk is None or chk == str(compute_checksum(parsed)):
            props, source = parsed, cand
            break
        if mismatch is None:
            mismatch = (cand, chk, compute_checksum(parsed))
    if props is None and mismatch is not None:
        invalid, stored, right = mismatch
        raise CorruptFileError(
            f"{invalid}: hoodie.table.checksum {stored} does not match the table name (CRC-32 of "
            f"'<database>.<table>' is {right}); Hudi refuses such a table config too",
            hint=f"restore {PROPERTIES_FILE} from a copy; if the table was renamed on purpose, set "
                 f"hoodie.table.checksum={right} in it")
    if props is None:
        raise NotAHudiTableError(f"{d.parent}: {main} has no hoodie.table.name")
    if "hoodie.table.version" not in props:
        raise NotAHudiTableError(f"{d.parent}: {source} has no hoodie.table.version")
    try:
        version = int(props["hoodie.table.version"])
    except ValueError as exc:
        bad = props["hoodie.table.version"]
        raise CorruptFileError(f"{source}: bad hoodie.table.version {bad!r}") from exc
    unsupported = version_refusal(version, str(d.parent))
    if unsupported is not None:
        raise unsupported.error()
    kind = props.get("hoodie.table.type", "COPY_ON_WRITE").strip().upper()
    if kind not in TABLE_TYPES:  # every reader and writer would guess otherwise
        raise CorruptFileError(f"{source}: hoodie.table.type={props['hoodie.table.type']!r} is not a Hudi table type",
                               hint="COPY_ON_WRITE or MERGE_ON_READ: restore hoodie.properties from a copy")
    has_history, changes = history_name_changes(d)
    return TableProperties(props, source=str(source), internal_schema=has_history, column_name_changes=tuple(changes))
