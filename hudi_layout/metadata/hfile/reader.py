"""Read HFile v3 files (HBase 2.4 / Hudi 1.0 and Hudi 1.1 native writers) from a path or from bytes.

Spec: ``docs/hudi-format.md`` §6 (layout §6.2, blocks §6.3, cells §6.4, indexes §6.5, file info §6.6,
trailer §6.7, lookups §6.8) and §5.8 (HFiles embedded in MDT log blocks, hence the ``bytes`` source).

Design notes:

- The whole file is read into memory once (files are at most tens of MB).
- The data block index is flattened lazily, on first use, into one sorted list of data blocks (walking
  root -> intermediate -> leaf levels); lookups then binary-search the block rows, then the cell rows of one
  decompressed, parsed block. Parsed blocks are kept in a small LRU.
- Keys are compared as row bytes (unsigned lexicographic, which is Python's ``bytes`` order). An index key
  may be a shortened "fake" key sorting before its block's first real row, and with duplicate rows a row may
  continue from the previous block, so a seek starts in the last block whose index row is *strictly* below the
  target and moves forward.
- Duplicate rows (only seen in test files): ``get`` returns the value of the first cell with that row, and
  iteration / ``seek`` / ``scan`` yield every cell in file order.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Iterator

from hudi_layout.errors import HFileFormatError
from hudi_layout.metadata.hfile import block as blk
from hudi_layout.metadata.hfile.cells import parse_cells
from hudi_layout.metadata.hfile.compression import check_codec
from hudi_layout.metadata.hfile.fileinfo import KEY_VALUE_VERSION, LASTKEY, MAX_TAGS_LEN, parse_file_info
from hudi_layout.metadata.hfile.index import IndexEntry, key_row, parse_nonroot_index, parse_root_index
from hudi_layout.metadata.hfile.trailer import HFileTrailer

_ParsedBlock = tuple[list[bytes], list[bytes]]


def prefix_successor(prefix: bytes) -> bytes | None:
    """Smallest byte string greater than every string starting with ``prefix`` (None: no upper bound)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


class HFileReader:
    """Random and sequential access to the cells of one HFile.

    ``source`` is a path or the complete file contents; ``name`` labels errors when it is bytes (e.g. the log
    file an HFILE_DATA block came from). ``verify_checksums`` checks the CRC32C of every block read (HBase
    writes them; Hudi 1.1 files carry none), so a damaged block is reported before it is decompressed.
    ``cache_blocks`` bounds the LRU of parsed data blocks.
    """

    def __init__(self, source: str | os.PathLike[str] | bytes | bytearray | memoryview, *,
                 verify_checksums: bool = True, cache_blocks: int = 8, name: str | None = None) -> None:
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._data: bytes = bytes(source)
            self.name = name or "<hfile bytes>"
        else:
            self.name = os.fspath(source)
            with open(self.name, "rb") as fh:
                self._data = fh.read()
        self._verify = verify_checksums
        self._cache: OrderedDict[int, _ParsedBlock] = OrderedDict()
        self._cache_size = max(1, cache_blocks)
        self._blocks: list[IndexEntry] | None = None
        self._block_rows: list[bytes] = []
        self.root_index_offset = -1

        self.trailer = HFileTrailer.parse(self._data, name=self.name)
        t = self.trailer
        check_codec(t.compression_codec, name=self.name)
        self._codec = t.compression_codec
        self.root_index, self.meta_index = self._load_indexes()
        fi_header = blk.read_header(self._data, t.file_info_offset, name=self.name, expected=blk.FILE_INFO)
        self.file_info: dict[bytes, bytes] = parse_file_info(
            self._read(fi_header), name=self.name, offset=t.file_info_offset)
        kv_version = self.file_info.get(KEY_VALUE_VERSION)
        self._mvcc = kv_version is not None and int.from_bytes(kv_version, "big") == 1
        self._tags = MAX_TAGS_LEN in self.file_info
        self.num_entries: int = t.entry_count

    # -- opening ---------------------------------------------------------------------------------------------

    def _read(self, header: blk.BlockHeader) -> bytes:
        return blk.read_block(self._data, header, self._codec, name=self.name, verify=self._verify)

    def _load_indexes(self) -> tuple[list[IndexEntry], list[IndexEntry]]:
        """Root data index = first IDXROOT2 at/after loadOnOpenDataOffset (HBase may put intermediate index
        blocks before it); the meta index is the next IDXROOT2."""
        t = self.trailer
        end = len(self._data) - 4096
        pos = t.load_on_open_data_offset
        roots: list[list[IndexEntry]] = []
        while len(roots) < 2:
            if pos >= end:
                raise HFileFormatError(
                    f"{self.name}: expected 2 IDXROOT2 blocks (data + meta index) from load-on-open offset "
                    f"{t.load_on_open_data_offset}, found {len(roots)} before the trailer at {end}")
            header = blk.read_header(self._data, pos, name=self.name)
            if header.magic == blk.ROOT_INDEX:
                if not roots:
                    self.root_index_offset = pos
                count = t.data_index_count if not roots else t.meta_index_count
                roots.append(parse_root_index(self._read(header), count, name=self.name, offset=pos))
            pos = header.next_offset
        return roots[0], roots[1]

    def _data_blocks(self) -> list[IndexEntry]:
        """All data block index entries, in file order (walks multi-level indexes once)."""
        if self._blocks is None:
            entries = self.root_index
            for level in range(self.trailer.num_data_index_levels - 1):
                children: list[IndexEntry] = []
                for e in entries:
                    header = blk.read_header(self._data, e.offset, name=self.name)
                    if header.magic not in (blk.LEAF_INDEX, blk.INTERMEDIATE_INDEX):
                        raise HFileFormatError(
                            f"{self.name}: index level {level + 2} entry points at offset {e.offset}: expected an "
                            f"IDXLEAF2/IDXINTE2 block, got {header.magic!r}")
                    children.extend(parse_nonroot_index(self._read(header), name=self.name, offset=e.offset))
                entries = children
            self._blocks = entries
            self._block_rows = [e.row for e in entries]
        return self._blocks

    # -- data blocks -----------------------------------------------------------------------------------------

    def _block(self, i: int) -> _ParsedBlock:
        cached = self._cache.get(i)
        if cached is not None:
            self._cache.move_to_end(i)
            return cached
        entry = self._data_blocks()[i]
        header = blk.read_header(self._data, entry.offset, name=self.name)
        if header.magic != blk.DATA:
            what = "encoded data blocks (DATABLKE) are not supported" if header.magic == blk.ENCODED_DATA \
                else f"expected DATABLK*, got {header.magic!r}"
            raise HFileFormatError(f"{self.name}: data block at offset {entry.offset}: {what}")
        parsed = parse_cells(self._read(header), mvcc=self._mvcc, tags=self._tags, name=self.name,
                             offset=entry.offset)
        self._cache[i] = parsed
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return parsed

    def _start_block(self, key: bytes) -> int:
        """Index of the first data block that may hold a row >= key."""
        self._data_blocks()
        return max(bisect_left(self._block_rows, key) - 1, 0)

    @property
    def raw_bytes(self) -> bytes:
        """The complete file contents (for callers that decode blocks themselves)."""
        return self._data

    @property
    def num_data_blocks(self) -> int:
        return len(self._data_blocks())

    @property
    def data_block_index(self) -> list[IndexEntry]:
        """Flattened data block index entries (file order); for debugging and tests."""
        return list(self._data_blocks())

    @property
    def last_key(self) -> bytes | None:
        """Row of the last cell, from file info ``hfile.LASTKEY`` (None for an empty file)."""
        raw = self.file_info.get(LASTKEY)
        return key_row(raw) if raw else None

    # -- public access ---------------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        for i in range(len(self._data_blocks())):
            rows, values = self._block(i)
            yield from zip(rows, values)

    def __len__(self) -> int:
        return self.num_entries

    def items(self) -> list[tuple[bytes, bytes]]:
        """All cells as a list (faster than iterating when everything is needed)."""
        out: list[tuple[bytes, bytes]] = []
        for i in range(len(self._data_blocks())):
            rows, values = self._block(i)
            out.extend(zip(rows, values))
        return out

    def get(self, key: bytes) -> bytes | None:
        """Value of the first cell whose row equals ``key``, or None. Decompresses one block (rarely two)."""
        blocks = self._data_blocks()
        if not blocks:
            return None
        i = self._start_block(key)
        rows_idx = self._block_rows
        while True:
            rows, values = self._block(i)
            j = bisect_left(rows, key)
            if j < len(rows):
                return values[j] if rows[j] == key else None
            i += 1
            if i >= len(blocks) or rows_idx[i] > key:
                return None

    def get_many(self, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        """Point lookups for many keys (sorted internally); absent keys are left out of the result."""
        out: dict[bytes, bytes] = {}
        for key in sorted(set(keys)):
            value = self.get(key)
            if value is not None:
                out[key] = value
        return out

    def __contains__(self, key: object) -> bool:
        return isinstance(key, bytes) and self.get(key) is not None

    def seek(self, key: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Iterate ``(row, value)`` from the first cell with row >= ``key`` to the end of the file."""
        blocks = self._data_blocks()
        if not blocks:
            return
        start = self._start_block(key)
        rows, values = self._block(start)
        j = bisect_left(rows, key)
        yield from zip(rows[j:], values[j:])
        # every later block's index row is >= key (see _start_block), so its cells all qualify
        for i in range(start + 1, len(blocks)):
            rows, values = self._block(i)
            yield from zip(rows, values)

    def _prefix_slices(self, prefix: bytes) -> Iterator[tuple[list[bytes], list[bytes], int, int]]:
        """Per block: ``(rows, values, lo, hi)`` so that rows[lo:hi] are exactly the rows with ``prefix``."""
        blocks = self._data_blocks()
        if not blocks:
            return
        upper = prefix_successor(prefix)
        i = self._start_block(prefix)
        rows_idx = self._block_rows
        first = True
        while i < len(blocks):
            rows, values = self._block(i)
            lo = bisect_left(rows, prefix) if first else 0
            first = False
            hi = len(rows) if upper is None else bisect_left(rows, upper, lo)
            if hi > lo:
                yield rows, values, lo, hi
            if hi < len(rows):
                return
            i += 1
            if upper is not None and i < len(blocks) and rows_idx[i] >= upper:
                return

    def scan(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Iterate ``(row, value)`` for every row starting with ``prefix``, across block boundaries."""
        for rows, values, lo, hi in self._prefix_slices(prefix):
            yield from zip(rows[lo:hi], values[lo:hi])

    def scan_values(self, prefix: bytes) -> list[bytes]:
        """Values of every row starting with ``prefix`` (bulk form of :meth:`scan`; no per-entry overhead)."""
        out: list[bytes] = []
        for _rows, values, lo, hi in self._prefix_slices(prefix):
            out.extend(values[lo:hi])
        return out

    def scan_items(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        """``list(scan(prefix))``, built per block."""
        out: list[tuple[bytes, bytes]] = []
        for rows, values, lo, hi in self._prefix_slices(prefix):
            out.extend(zip(rows[lo:hi], values[lo:hi]))
        return out

    # -- lifecycle -------------------------------------------------------------------------------------------

    def verify(self) -> None:
        """Check the checksums of every block from offset 0 to the trailer (raises HFileFormatError)."""
        pos, end = 0, len(self._data) - 4096
        while pos < end:
            header = blk.read_header(self._data, pos, name=self.name)
            blk.verify_checksums(self._data, header, name=self.name)
            pos = header.next_offset
        if pos != end:
            raise HFileFormatError(f"{self.name}: blocks end at offset {pos}, expected the trailer at {end}")

    def close(self) -> None:
        self._cache.clear()
        self._data = b""

    def __enter__(self) -> HFileReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HFileReader({self.name!r}, entries={self.num_entries})"


def read_hfile_items(source: str | os.PathLike[str] | bytes) -> list[tuple[bytes, bytes]]:
    """Convenience: every ``(row, value)`` of an HFile."""
    with HFileReader(source) as reader:
        return reader.items()

