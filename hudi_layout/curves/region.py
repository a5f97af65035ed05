"""Exact curve-region pruning: does a file's curve-key range meet a query box?

A file written by a curve clustering holds a contiguous run of the curve order, so its rows' keys lie in
``[kmin, kmax]``. A query box (one interval per curve column) covers a *set* of keys that is far from one
interval: a file whose min/max box meets the query box may still hold no key of it (the file's region is an
L-shape, or the z-order jumped over the box). This module proves that case:

1. **value -> code** (:func:`constraint_codes`): a predicate bound on a column becomes an interval of the
   order-preserving codes of :mod:`~hudi_layout.curves.encoding`. The encodings are monotone, so ``c >= v``
   implies ``code(c) >= code(v)`` for every encoding, lossy or not (strict bounds are tightened only for
   the exact integer-like encodings).
2. **code -> coordinate** (:class:`ColumnReduction`): the clustering's reduction (min/max scaling, sampled
   quantile buckets, or Hudi's top bits) is monotone too, so the code interval maps to a coordinate interval.
   Sampled bounds are stored coarsened (every ``step``-th bound); a coordinate is then known to lie in a
   bucket interval, which only widens the box.
3. **coordinate box -> keys**: for z-order, Tropf & Herzog's BIGMIN (1981) gives, for each file, the smallest
   key ``>= kmin`` inside the box; the file cannot match when it is ``> kmax`` (:func:`zorder_bigmin`, exact).
   For Hilbert (and as a generic check), :func:`cover_intervals` decomposes the box level by level into the
   key blocks of the grid cells it contains, refining only cells on the box boundary, within a cell budget;
   cells left unrefined are kept whole, so the cover is a superset of the box's keys.

Every step over-approximates the set of keys a matching row can have, so a file is dropped only when no
row in it can match. Nulls (coded last, clamped into the top cell) never satisfy a bound on their column.

:class:`CurveRegions` is what a clustering commit stores (as JSON in its ``extraMetadata`` under
:data:`CURVE_REGIONS_KEY`) and what scan planning reads back.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from hudi_layout.curves.encoding import encode_column
from hudi_layout.curves.reduce import scale_to_bits
from hudi_layout.curves.weighted import level_plan, normalise_bits, weighted_index
from hudi_layout.errors import InvalidArgumentError

#: ``extraMetadata`` key of a clustering replacecommit holding :meth:`CurveRegions.to_json`
CURVE_REGIONS_KEY = "hudi_layout.curve.regions"
REGIONS_FORMAT_VERSION = 1
U64_MAX = (1 << 64) - 1
#: sampled bounds kept per column in the commit (1024: the box edge moves by at most 1/1024 of the column)
STORED_BOUNDS = 1024
#: grid cells the Hilbert decomposition may refine per query box
DEFAULT_CELL_BUDGET = 1 << 14


# ------------------------------------------------------------------------------------------ value -> code

def encoding_family(t: pa.DataType) -> str:
    """Types whose values share one code space (:func:`~hudi_layout.curves.encode_column`): codes of two
    types compare meaningfully only within a family."""
    if pa.types.is_dictionary(t):
        return encoding_family(t.value_type)
    if pa.types.is_signed_integer(t):
        return "signed"
    if pa.types.is_unsigned_integer(t):
        return "unsigned"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if any(f(t) for f in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
                          pa.types.is_large_binary, pa.types.is_fixed_size_binary)) or \
            str(t) in ("string_view", "binary_view"):
        return "bytes"
    return str(t)  # dates, times, durations, booleans: exactly their own type


def _strictly_increasing(t: pa.DataType) -> bool:
    """Encodings that never map two different values to one code (strict bounds may move by one)."""
    return (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_boolean(t)
            or (pa.types.is_floating(t) and t.bit_width > 16))


def _code_of(value: Any, t: pa.DataType) -> int | None:
    try:
        codes = encode_column(pa.array([value], t))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError, InvalidArgumentError):
        return None
    return int(codes[0])


def prefix_codes(prefix: str | bytes) -> tuple[int, int] | None:
    """Codes of every value starting with ``prefix`` (string/binary encoding: first 8 bytes, zero padded)."""
    raw = prefix.encode() if isinstance(prefix, str) else bytes(prefix)
    if not raw:
        return None
    head = raw[:8]
    lo = int.from_bytes(head.ljust(8, b"\x00"), "big")
    free = 8 * (8 - len(head))
    return lo, lo | ((1 << free) - 1)


def constraint_codes(op: str, value: Any, value_type: pa.DataType, column_type: pa.DataType
                     ) -> tuple[int, int] | None:
    """Code interval holding every value of a ``column_type`` column that satisfies ``column <op> value``.

    ``op`` is ``>=``, ``>``, ``<=``, ``<``, ``=`` or ``prefix`` (``LIKE 'p%'``); ``value`` is a Python value of
    ``value_type`` (the type the predicate compares in). ``None`` means "no usable bound" (unconstrained):
    a literal from another code space, an unencodable value. An empty interval is returned as ``(1, 0)``.
    """
    if op == "prefix":
        if encoding_family(column_type) != "bytes" or not isinstance(value, (str, bytes)):
            return None
        return prefix_codes(value)
    if encoding_family(value_type) != encoding_family(column_type):
        return None
    code = _code_of(value, value_type)
    if code is None:
        return None
    strict = _strictly_increasing(column_type) and _strictly_increasing(value_type)
    if op == "=":
        return code, code
    if op == ">=":
        return code, U64_MAX
    if op == ">":
        if strict:
            return (code + 1, U64_MAX) if code < U64_MAX else (1, 0)
        return code, U64_MAX
    if op == "<=":
        return 0, code
    if op == "<":
        if strict:
            return (0, code - 1) if code > 0 else (1, 0)
        return 0, code
    raise InvalidArgumentError(f"unknown constraint operator {op!r}")


class BoundLike(Protocol):
    """What :func:`code_box` needs of a bound (:class:`hudi_layout.skipping.boxes.Bound` fits)."""

    @property
    def op(self) -> str: ...
    @property
    def value(self) -> Any: ...
    @property
    def value_type(self) -> pa.DataType | None: ...


def code_box(bounds: Mapping[str, Sequence[BoundLike]], column_types: Mapping[str, pa.DataType]
             ) -> dict[str, tuple[int, int]] | None:
    """Intersect each column's bounds into one code interval; ``None`` when some column's interval is empty
    (no row satisfies the box). Columns without a usable bound are left out (unconstrained)."""
    out: dict[str, tuple[int, int]] = {}
    for name, items in bounds.items():
        col_type = column_types.get(name)
        if col_type is None:
            continue
        lo, hi = 0, U64_MAX
        known = False
        for b in items:
            got = constraint_codes(b.op, b.value, b.value_type or col_type, col_type)
            if got is None:
                continue
            known = True
            lo, hi = max(lo, got[0]), min(hi, got[1])
        if known:
            if lo > hi:
                return None
            out[name] = (lo, hi)
    return out


# ------------------------------------------------------------------------------------- code -> coordinate

def _b64(values: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype="<u8").tobytes()).decode()


def _unb64(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<u8").astype(np.uint64)


@dataclass(frozen=True)
class ColumnReduction:
    """How one column's codes became curve coordinates (the clustering's global reduction).

    * ``range``: :func:`~hudi_layout.curves.scale_to_bits` over ``[lo, hi]``;
    * ``bounds``: quantile buckets (:func:`~hudi_layout.curves.bucketize`) of ``buckets`` bounds, of which
      every ``step``-th is kept in ``kept`` (``kept[k] = full[(k + 1) * step - 1]``);
    * ``top``: Hudi's direct reduction, the top bits of the code;
    * ``constant``: every row has coordinate 0 (a column with no non-null value).
    """

    kind: str
    lo: int = 0
    hi: int = 0
    buckets: int = 0
    step: int = 1
    kept: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64), compare=False)

    @classmethod
    def from_range(cls, rng: tuple[int, int] | None) -> ColumnReduction:
        return cls("constant") if rng is None else cls("range", lo=int(rng[0]), hi=int(rng[1]))

    @classmethod
    def from_bounds(cls, bounds: np.ndarray, keep: int = STORED_BOUNDS) -> ColumnReduction:
        full = np.asarray(bounds, dtype=np.uint64)
        m = int(full.size)
        if m == 0:
            return cls("constant")
        step = max(1, -(-m // max(1, keep)))
        return cls("bounds", buckets=m, step=step, kept=full[step - 1::step].copy())

    def coordinate_interval(self, lo: int, hi: int, bits: int) -> tuple[int, int]:
        """Coordinates (``bits`` wide) of every code in ``[lo, hi]`` lie in the returned interval."""
        if self.kind == "constant":
            return 0, 0
        if self.kind == "top":
            shift = 64 - bits
            return lo >> shift, hi >> shift
        if self.kind == "range":
            a, b = scale_to_bits(np.array([lo, hi], np.uint64), self.lo, self.hi, bits)
            return int(a), int(b)
        if self.kind != "bounds":
            raise InvalidArgumentError(f"unknown reduction kind {self.kind!r}")
        t_lo, t_hi = np.searchsorted(self.kept, np.array([lo, hi], np.uint64), side="right")
        first = int(t_lo) * self.step
        last = min((int(t_hi) + 1) * self.step - 1, self.buckets)
        a, b = scale_to_bits(np.array([first, last], np.uint64), 0, self.buckets, bits)
        return int(a), int(b)

    def to_json(self) -> dict[str, Any]:
        if self.kind == "range":
            return {"kind": "range", "lo": str(self.lo), "hi": str(self.hi)}
        if self.kind == "bounds":
            return {"kind": "bounds", "buckets": self.buckets, "step": self.step, "kept": _b64(self.kept)}
        return {"kind": self.kind}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ColumnReduction:
        kind = d["kind"]
        if kind == "range":
            return cls("range", lo=int(d["lo"]), hi=int(d["hi"]))
        if kind == "bounds":
            return cls("bounds", buckets=int(d["buckets"]), step=int(d["step"]), kept=_unb64(d["kept"]))
        if kind in ("top", "constant"):
            return cls(kind)
        raise InvalidArgumentError(f"unknown reduction kind {kind!r}")


# ------------------------------------------------------------------------------------------- curve shape

@dataclass(frozen=True)
class CurveShape:
    """A curve over ``len(bits)`` coordinates: ``kind`` (``zorder`` / ``hilbert``) and bits per coordinate."""

    kind: str
    bits: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.kind not in ("zorder", "hilbert"):
            raise InvalidArgumentError(f"unknown curve kind {self.kind!r}")
        object.__setattr__(self, "bits", normalise_bits(self.bits, len(self.bits)))
        if self.total_bits > 64:
            raise InvalidArgumentError(f"bits {list(self.bits)} make a key wider than 64 bits")

    @property
    def total_bits(self) -> int:
        return sum(self.bits)

    def keys(self, coords: Sequence[np.ndarray]) -> np.ndarray:
        return weighted_index([np.asarray(c, np.uint64) for c in coords], self.bits, self.kind)

    def zorder_schedule(self) -> list[int]:
        """For z-order: the coordinate of each key bit, most significant first."""
        return [j for active in level_plan(self.bits) for j in active]


# ------------------------------------------------------------------------------------ box -> key intervals

def zorder_bigmin(z: np.ndarray, box_lo: Sequence[int], box_hi: Sequence[int], shape: CurveShape
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Tropf & Herzog's BIGMIN for every key in ``z``: the smallest z-order key ``>= z`` whose coordinates lie
    in the box ``[box_lo, box_hi]``. Returns ``(bigmin, found)``; ``found`` is False where no such key exists.

    Works for any bit schedule that visits each coordinate's bits from the most significant down
    (:meth:`CurveShape.zorder_schedule`).
    """
    if shape.kind != "zorder":
        raise InvalidArgumentError("BIGMIN is defined for z-order keys")
    total = shape.total_bits
    schedule = shape.zorder_schedule()
    z = np.asarray(z, dtype=np.uint64)
    f = z.size
    zmin = int(shape.keys([np.array([v], np.uint64) for v in box_lo])[0])
    zmax = int(shape.keys([np.array([v], np.uint64) for v in box_hi])[0])
    lo = np.full(f, zmin, dtype=np.uint64)
    hi = np.full(f, zmax, dtype=np.uint64)
    cand = np.zeros(f, dtype=np.uint64)
    has_cand = np.zeros(f, dtype=bool)
    result = np.zeros(f, dtype=np.uint64)
    found = np.zeros(f, dtype=bool)
    active = np.ones(f, dtype=bool)
    # key bits (LSB numbering) of each coordinate, to build the masks of "this coordinate's lower bits"
    positions: dict[int, list[int]] = {}
    for p, d in enumerate(schedule):
        positions.setdefault(d, []).append(total - 1 - p)
    for p, d in enumerate(schedule):
        if not active.any():
            break
        i = total - 1 - p
        bit = np.uint64(1 << i)
        below = np.uint64(sum(1 << k for k in positions[d] if k < i))
        clear = ~np.uint64((1 << i) | int(below))
        zb = (z & bit) != 0
        lb = (lo & bit) != 0
        hb = (hi & bit) != 0
        split_low = active & ~zb & ~lb & hb     # z in the lower half: remember the upper half's minimum
        above = active & ~zb & lb & hb           # the whole box is above z
        below_z = active & zb & ~lb & ~hb        # the whole box is below z: the remembered candidate
        split_high = active & zb & ~lb & hb      # z in the upper half: continue there
        cand[split_low] = (lo[split_low] & clear) | bit
        has_cand[split_low] = True
        hi[split_low] = (hi[split_low] & ~bit) | below
        result[above] = lo[above]
        found[above] = True
        result[below_z] = cand[below_z]
        found[below_z] = has_cand[below_z]
        lo[split_high] = (lo[split_high] & clear) | bit
        active &= ~(above | below_z)
    result[active] = z[active]  # z itself lies in the box
    found[active] = True
    return result, found


def cover_intervals(box_lo: Sequence[int], box_hi: Sequence[int], shape: CurveShape,
                    budget: int = DEFAULT_CELL_BUDGET) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, disjoint key intervals ``(starts, ends)`` whose union holds every key of the box.

    Grid cells are visited level by level (top level first); a cell inside the box contributes its key block,
    a cell outside nothing, a cell on the boundary is split into its children at the next level, unless the
    number of cells would exceed ``budget``, in which case boundary cells are kept whole.
    """
    bits = shape.bits
    n = len(bits)
    total = shape.total_bits
    q_lo = np.asarray([int(v) for v in box_lo], dtype=np.uint64)
    q_hi = np.asarray([int(v) for v in box_hi], dtype=np.uint64)
    if np.any(q_lo > q_hi):
        return np.empty(0, np.uint64), np.empty(0, np.uint64)
    levels = level_plan(bits)
    remaining = list(bits)
    cells = np.zeros((1, n), dtype=np.uint64)
    done = 0
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []

    def emit(lo: np.ndarray, fixed: int) -> None:
        if lo.shape[0] == 0:
            return
        if fixed == 0:
            starts.append(np.zeros(1, np.uint64))
            ends.append(np.array([(1 << total) - 1], np.uint64))
            return
        free = total - fixed
        keys = shape.keys([lo[:, j] for j in range(n)])
        start = (keys >> np.uint64(free)) << np.uint64(free) if free else keys
        starts.append(start)
        ends.append(start + np.uint64((1 << free) - 1))

    level = 0
    while True:
        size = np.array([(1 << r) - 1 for r in remaining], dtype=np.uint64)
        cell_hi = cells + size
        disjoint = np.any((cell_hi < q_lo) | (cells > q_hi), axis=1)
        inside = np.all((cells >= q_lo) & (cell_hi <= q_hi), axis=1)
        emit(cells[inside], done)
        partial = cells[~disjoint & ~inside]
        if partial.shape[0] == 0 or level == len(levels):
            break
        active = levels[level]
        fan = 1 << len(active)
        if partial.shape[0] * fan > budget:
            emit(partial, done)
            break
        children = np.repeat(partial, fan, axis=0)
        choice = np.tile(np.arange(fan, dtype=np.uint64), partial.shape[0])
        for k, j in enumerate(active):
            half = np.uint64(1 << (remaining[j] - 1))
            children[:, j] += ((choice >> np.uint64(len(active) - 1 - k)) & np.uint64(1)) * half
        for j in active:
            remaining[j] -= 1
        done += len(active)
        cells = children
        level += 1
    if not starts:
        return np.empty(0, np.uint64), np.empty(0, np.uint64)
    return merge_intervals(np.concatenate(starts), np.concatenate(ends))


def merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of closed ``uint64`` intervals as sorted, disjoint, non-adjacent intervals."""
    if starts.size == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    prev = reach[:-1]
    gap = (s[1:] > prev) & ((s[1:] - prev) > np.uint64(1))
    first = np.concatenate([[True], gap])
    group = np.cumsum(first) - 1
    out_s = s[first]
    out_e = np.zeros(out_s.size, dtype=np.uint64)
    np.maximum.at(out_e, group, e)
    return out_s, out_e


def ranges_meet_intervals(kmin: np.ndarray, kmax: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each ``[kmin, kmax]``: does it meet one of the sorted disjoint intervals?"""
    if starts.size == 0:
        return np.zeros(kmin.size, dtype=bool)
    j = np.searchsorted(starts, kmax, side="right").astype(np.int64) - 1
    ok = j >= 0
    meets = np.zeros(kmin.size, dtype=bool)
    meets[ok] = ends[j[ok]] >= kmin[ok]
    return meets


def ranges_meet_box(kmin: np.ndarray, kmax: np.ndarray, box_lo: Sequence[int], box_hi: Sequence[int],
                    shape: CurveShape, budget: int = DEFAULT_CELL_BUDGET) -> np.ndarray:
    """For each key range ``[kmin, kmax]``: might it hold a key whose coordinates lie in the box?
    (z-order: exact BIGMIN; Hilbert: the budgeted cover.)"""
    kmin = np.asarray(kmin, dtype=np.uint64)
    kmax = np.asarray(kmax, dtype=np.uint64)
    if any(int(a) > int(b) for a, b in zip(box_lo, box_hi)):
        return np.zeros(kmin.size, dtype=bool)
    if shape.kind == "zorder":
        big, found = zorder_bigmin(kmin, box_lo, box_hi, shape)
        return found & (big <= kmax)
    starts, ends = cover_intervals(box_lo, box_hi, shape, budget)
    return ranges_meet_intervals(kmin, kmax, starts, ends)


# ------------------------------------------------------------------------------------ stored per commit

@dataclass(frozen=True)
class CurveRegions:
    """The curve a clustering laid files out along, and each written file's key range (what a commit stores).

    ``columns`` / ``types`` (each column's :func:`encoding_family` at clustering time) / ``reductions`` /
    ``shape`` describe the curve; ``files`` maps a base file name to its ``(kmin, kmax)``.
    """

    columns: tuple[str, ...]
    types: tuple[str, ...]
    shape: CurveShape
    reductions: tuple[ColumnReduction, ...]
    files: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.columns)
        if not (len(self.types) == len(self.reductions) == len(self.shape.bits) == n):
            raise InvalidArgumentError("curve regions: columns, types, reductions and bits differ in length")

    def to_dict(self) -> dict[str, Any]:
        return {
            "curve": self.shape.kind,
            "columns": list(self.columns),
            "code_spaces": list(self.types),
            "bits": list(self.shape.bits),
            "reductions": [r.to_json() for r in self.reductions],
            "files": {name: [str(lo), str(hi)] for name, (lo, hi) in sorted(self.files.items())},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CurveRegions:
        return cls(columns=tuple(d["columns"]), types=tuple(d["code_spaces"]),
                   shape=CurveShape(str(d["curve"]), tuple(int(b) for b in d["bits"])),
                   reductions=tuple(ColumnReduction.from_json(r) for r in d["reductions"]),
                   files={str(k): (int(v[0]), int(v[1])) for k, v in d["files"].items()})

    def coordinate_box(self, code_box: Mapping[str, tuple[int, int]]) -> tuple[list[int], list[int]]:
        """The coordinate box of a box of code intervals (columns not named are unconstrained)."""
        lo: list[int] = []
        hi: list[int] = []
        for name, red, bits in zip(self.columns, self.reductions, self.shape.bits):
            c_lo, c_hi = code_box.get(name, (0, U64_MAX))
            a, b = red.coordinate_interval(c_lo, c_hi, bits) if c_lo <= c_hi else (1, 0)
            lo.append(a)
            hi.append(b)
        return lo, hi


def encode_regions(regions: Sequence[CurveRegions]) -> str:
    """The ``extraMetadata`` value of :data:`CURVE_REGIONS_KEY`: one entry per clustering group."""
    return json.dumps({"version": REGIONS_FORMAT_VERSION, "groups": [r.to_dict() for r in regions]},
                      separators=(",", ":"))


def decode_regions(text: str) -> list[CurveRegions]:
    """Parse :func:`encode_regions`; raises :class:`InvalidArgumentError` on anything unexpected."""
    try:
        d = json.loads(text)
        if int(d.get("version", 0)) != REGIONS_FORMAT_VERSION:
            raise InvalidArgumentError(f"curve regions format version {d.get('version')} is not supported")
        return [CurveRegions.from_dict(g) for g in d["groups"]]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InvalidArgumentError(f"malformed curve regions metadata: {e}") from e
