"""Prefix scans that return *positions* of cells instead of ``bytes`` objects (column-stats fast path).

The generic ``HFileReader.scan_items`` materialises two ``bytes`` objects and a tuple per cell; for a
400k-record column-stats load that alone costs ~1 s. Here the matching data blocks are decompressed with the
HFile package's own block primitives and one tight loop records, per cell, where its row and value start in
the concatenated block bodies. :mod:`.colstats_vec` then decodes the Avro values in place.

Only plain cells are handled (KEY_VALUE_VERSION 1 with a zero mvcc byte, no tags); anything else returns
``None`` and the caller uses the generic scan.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_left
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from hudi_layout.metadata.colstats_vec import DECODER_PADDING
from hudi_layout.metadata.hfile import block as blk
from hudi_layout.metadata.hfile.fileinfo import KEY_VALUE_VERSION, MAX_TAGS_LEN
from hudi_layout.metadata.hfile.reader import HFileReader, prefix_successor

_II = struct.Struct(">II")


@dataclass
class CellRanges:
    """Cells of one or more HFiles: ``buf`` holds decompressed block bodies back to back and ends with
    ``PAD`` zero bytes."""

    buf: bytes
    row_pos: np.ndarray
    row_len: np.ndarray
    val_pos: np.ndarray
    val_end: np.ndarray

    @property
    def n(self) -> int:
        return int(self.row_pos.size)


def _plain_cells(reader: HFileReader) -> bool:
    kv = reader.file_info.get(KEY_VALUE_VERSION)
    return kv is not None and int.from_bytes(kv, "big") == 1 and MAX_TAGS_LEN not in reader.file_info


def _be(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros(pos.size, np.int64)
    for k in range(width):
        out = (out << 8) | buf[pos + k]
    return out


def _uniform_key_cell_starts(body: bytes) -> np.ndarray | None:
    """Cell offsets of a block whose keys all have the first cell's length (true for column_stats: every
    row is a 48-character key), found without a per-cell loop.

    Candidates are the offsets where the first cell's key length and row length bytes recur. They are the
    exact cell chain iff the first is 0 and each candidate's computed successor (``start + 9 + klen + vlen``)
    is the next candidate, the last one ending the block: a false candidate inside a value would break that
    chain, and then ``None`` sends the caller to the sequential loop.
    """
    end = len(body)
    if end < 12:
        return None
    b = np.frombuffer(body, np.uint8)
    sig = np.concatenate([b[0:4], b[8:10]])
    m = end - 11
    cand = np.flatnonzero((b[0:m] == sig[0]) & (b[1:m + 1] == sig[1]) & (b[2:m + 2] == sig[2])
                          & (b[3:m + 3] == sig[3]) & (b[8:m + 8] == sig[4]) & (b[9:m + 9] == sig[5]))
    if cand.size == 0 or cand[0] != 0:
        return None
    klen = int.from_bytes(body[0:4], "big")
    vlen = _be(b, cand + 4, 4)
    nxt = cand + 9 + klen + vlen
    if nxt[-1] != end or (cand.size > 1 and not np.array_equal(nxt[:-1], cand[1:])):
        return None
    return cand


#: Trailing zero bytes after the joined bodies, so the vectorised decoder may look a few bytes past a cell's
#: end (a varint's continuation test, a fixed-width gather) without a bounds check or a padded copy
PAD = DECODER_PADDING

#: (process id, pool): a pool inherited through fork has no threads, so a child makes its own
_BLOCK_POOL: tuple[int, ThreadPoolExecutor] | None = None


def _block_pool() -> ThreadPoolExecutor:
    """Threads for block inflation: zlib and crc32c release the GIL, so on a multi-core driver the blocks of
    one scan inflate side by side (the column-stats load is mostly inflation once the page cache is cold)."""
    global _BLOCK_POOL
    if _BLOCK_POOL is None or _BLOCK_POOL[0] != os.getpid():
        _BLOCK_POOL = (os.getpid(), ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1),
                                                       thread_name_prefix="hfile-inflate"))
    return _BLOCK_POOL[1]


def _inflate(reader: HFileReader, data: bytes, offset: int) -> tuple[bytes, np.ndarray | None] | None:
    """One data block's body and, when its keys are uniform, its cell starts (None: not a data block)."""
    header = blk.read_header(data, offset, name=reader.name)
    if header.magic != blk.DATA:
        return None
    body = blk.read_block(data, header, reader.trailer.compression_codec, name=reader.name)
    return body, _uniform_key_cell_starts(body)


def scan_ranges(reader: HFileReader, data: bytes, prefix: bytes) -> tuple[bytes, np.ndarray, np.ndarray,
                                                                          np.ndarray, np.ndarray] | None:
    """Cells of ``reader`` whose row starts with ``prefix``: (bodies joined and followed by ``PAD`` zero
    bytes, row_pos, row_len, val_pos, val_end). Only the blocks that can hold the prefix are decompressed
    (on the block pool when there are several); the per-cell Python work is one ``unpack_from`` for blocks
    whose keys are not uniform, everything else is vectorised."""
    if not _plain_cells(reader):
        return None
    z = np.zeros(0, np.int64)
    entries = reader.data_block_index
    if not entries:
        return b"", z, z, z, z
    rows = [e.row for e in entries]
    upper = prefix_successor(prefix)
    i = max(bisect_left(rows, prefix) - 1, 0)
    j = len(entries) if upper is None else max(bisect_left(rows, upper), i + 1)
    offsets = [e.offset for e in entries[i:j]]
    if len(offsets) >= 4:
        blocks = list(_block_pool().map(lambda off: _inflate(reader, data, off), offsets))
    else:
        blocks = [_inflate(reader, data, off) for off in offsets]
    bodies: list[bytes] = []
    starts: list[int] = []
    add = starts.append
    start_arrays: list[np.ndarray] = []
    unpack = _II.unpack_from
    base = 0
    for got in blocks:
        if got is None:
            return None
        body, fast = got
        end = len(body)
        if fast is not None:
            start_arrays.append(fast + base)
        else:
            pos = 0
            while pos < end:
                add(base + pos)
                klen, vlen = unpack(body, pos)
                pos += 9 + klen + vlen  # 8-byte head, key, value, 1-byte mvcc (checked below)
            if pos != end:
                return None
        bodies.append(body)
        base += end
    if starts:
        start_arrays.append(np.asarray(starts, np.int64))
    if not start_arrays:
        return b"", z, z, z, z
    bodies.append(b"\x00" * PAD)
    raw = b"".join(bodies)
    buf = np.frombuffer(raw, np.uint8)
    cp = np.sort(np.concatenate(start_arrays)) if len(start_arrays) > 1 else start_arrays[0]
    klen = _be(buf, cp, 4)
    vlen = _be(buf, cp + 4, 4)
    rlen = _be(buf, cp + 8, 2)
    vpos = cp + 8 + klen
    vend = vpos + vlen
    if (buf[vend] != 0).any() or (rlen + 2 > klen).any():
        return None  # mvcc > 0 or malformed: generic path
    rpos = cp + 10
    n = len(prefix)
    ok = rlen >= n
    if n:
        pre = np.frombuffer(prefix, np.uint8)
        head = buf[np.minimum(rpos[:, None] + np.arange(n), buf.size - 1)]
        ok &= (head == pre).all(axis=1)
    return raw, rpos[ok], rlen[ok], vpos[ok], vend[ok]


def collect(groups: list[list[tuple[HFileReader, bytes]]], prefixes: list[bytes]
            ) -> tuple[CellRanges, bool] | None:
    """Concatenate the matching cells of every source (grouped by MDT file group) for every prefix.
    Also returns whether some file group had matches in more than one source (keys may repeat)."""
    raws: list[bytes] = []
    parts: list[tuple[np.ndarray, ...]] = []
    base = 0
    multi = False
    for group in groups:
        contributing = 0
        for reader, data in group:
            hit = False
            for prefix in prefixes:
                got = scan_ranges(reader, data, prefix)
                if got is None:
                    return None
                raw, rp, rl, vp, ve = got
                if rp.size == 0:
                    continue
                hit = True
                parts.append((rp + base, rl, vp + base, ve + base))
                raws.append(raw)
                base += len(raw)
            contributing += hit
        multi |= contributing > 1
    if not parts:
        z = np.zeros(0, np.int64)
        return CellRanges(b"", z, z, z, z), False
    cat = [np.concatenate([p[k] for p in parts]) for k in range(4)]
    # every raw ends with PAD zero bytes, so the joined buffer (or the only one) does too
    return CellRanges(raws[0] if len(raws) == 1 else b"".join(raws), *cat), multi
