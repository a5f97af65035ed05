"""The ``qdtree`` layout: cut the data along the workload's own predicates, then a Hilbert curve per leaf.

A query-data routing tree (Yang et al., "Qd-tree: Learning Data Layouts for Big Data Analytics", SIGMOD
2020) splits rows by *cuts* ``code(column) < threshold`` whose thresholds are the constants of the
workload's predicates, so a query's matching rows gather in few leaves and the other leaves' min/max
statistics exclude it. Everything here is pure numpy on order-preserving codes
(:func:`~hudi_layout.curves.encode_column`), shared by the driver (choosing cuts on a sample) and the
executors (routing every row):

* :func:`workload_boxes` turns each workload predicate into code boxes (one per disjunct), with its weight;
* :func:`build_qdtree` grows the tree greedily on a row sample: the cut (leaf, column, threshold) that most
  lowers the workload's estimated cost - ``sum over queries of weight x files of the leaves whose sampled
  min/max box meets one of the query's boxes`` - is applied next, as long as it lowers the cost and both
  children keep at least one target file's worth of rows. A cut's benefit only depends on its leaf, so each
  leaf's best cut is computed once (prefix/suffix min/max over the rows sorted by the cut column);
* :class:`QdTree` routes codes to leaves and serialises to the JSON the clustering plan records, with the
  workload's query *shapes* (:func:`query_shapes`: each query's weight and share of every column's rows);
* :func:`fill_leaves` (in each clustering group, on the group's own sample) cuts every leaf further into
  cells of about one file, k-d style along those shapes, so queries of the workload's shapes with other
  constants skip too (the cut search then counts the shapes as well: ``build_qdtree``'s ``shape_weight``);
* :class:`QdTreeLayout` is the full sort key the executors compute: ``leaf << inner_bits | hilbert(...)``,
  the Hilbert index taken over the sort columns' sampled quantile buckets, *zoomed* to each leaf's own
  bucket range (it orders the rows of a leaf that stays larger than a file); one-file cells need no curve
  and are ordered by one column's bucket.

The layout only decides where rows go: whatever the tree, the clustering writes every row once and the
column statistics stay exact.
"""

from __future__ import annotations

import heapq
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from hudi_layout.curves import bits_for_weights, bucketize, encode_column, sample_bounds
from hudi_layout.curves.region import U64_MAX, code_box, encoding_family
from hudi_layout.curves.weighted import weighted_index
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.boxes import predicate_boxes
from hudi_layout.skipping.ir import Predicate

log = logging.getLogger(__name__)

QDTREE_FORMAT_VERSION = 1
#: leaves a tree may have (the leaf id takes the top bits of a 64-bit sort key)
MAX_LEAVES = 4096
#: :func:`fill_leaves` splits a leaf (or cell) holding at least this many cells' worth of sampled rows; below
#: it the leaf stays one cell, and the reduce task cuts it into ``round(rows / rows per file)`` files by its
#: real row count (ordered along the cell's widest column). At 1.5 a leaf of ~1.4 files that the sample showed
#: as 1.5 became two cells, so two files, where the real count made one: on the 10M conn replay (seeds 17, 5,
#: 99, 1, 2, 3, 4, 6) 2.0 read 59-63 workload files (mean 60.9) where 1.5 read 60-65 (62.5), held-out
#: 997-1,037 (mean 1,016) vs 1,011-1,034 (1,020), with ~850 cells instead of ~1,180.
CELL_SPLIT_AT = 2.0
#: widest inner-curve coordinate (quantile buckets per column: 2**16)
MAX_INNER_BITS = 16


# ------------------------------------------------------------------------------------------ workload

@dataclass(frozen=True)
class WorkloadBoxes:
    """The workload as code boxes over the tree's columns: box ``b`` belongs to query ``query[b]``;
    ``lo``/``hi`` are ``(boxes, columns)`` code bounds (``[0, 2**64 - 1]`` where unconstrained)."""

    weights: np.ndarray  # float64 per query
    query: np.ndarray  # int per box
    lo: np.ndarray
    hi: np.ndarray

    @property
    def num_queries(self) -> int:
        return int(self.weights.size)

    def query_matrix(self) -> np.ndarray:
        """``(boxes, queries)`` 0/1 matrix: box ``b`` belongs to query ``q``."""
        m = np.zeros((self.query.size, self.num_queries), dtype=np.float64)
        m[np.arange(self.query.size), self.query] = 1.0
        return m


def workload_boxes(predicates: Sequence[tuple[Predicate, float]], columns: Sequence[str],
                   schema: pa.Schema) -> WorkloadBoxes:
    """Code boxes of each (bound) predicate over ``columns``. A query without any usable bound reads every
    file whatever the layout, so it is left out (it cannot favour a cut)."""
    types = {c: schema.field(c).type for c in columns}
    index = {c: j for j, c in enumerate(columns)}
    weights: list[float] = []
    query: list[int] = []
    lo: list[list[int]] = []
    hi: list[list[int]] = []
    for pred, weight in predicates:
        boxes = []
        for box in predicate_boxes(pred, columns, schema):
            got = code_box(box, types)
            if got is not None:  # an empty box matches nothing
                boxes.append(got)
        if not boxes or any(not b for b in boxes):
            continue  # matches nothing, or somewhere unconstrained
        q = len(weights)
        weights.append(float(weight))
        for b in boxes:
            row_lo = [0] * len(columns)
            row_hi = [U64_MAX] * len(columns)
            for name, (a, z) in b.items():
                row_lo[index[name]] = a
                row_hi[index[name]] = z
            query.append(q)
            lo.append(row_lo)
            hi.append(row_hi)
    k = len(columns)
    return WorkloadBoxes(np.array(weights, np.float64), np.array(query, np.int64),
                         np.array(lo, np.uint64).reshape(-1, k), np.array(hi, np.uint64).reshape(-1, k))


#: the ``lookahead`` search tries alternatives at nodes this shallow (on the 10M conn workload, depths 3, 6 and
#: 30 gave 65, 64 and 64 files; deeper nodes are small and their greedy move is rarely beaten)
PILOT_DEPTH = 8
#: the lookahead runs when the plain greedy tree has at most this many leaves (each trial grows a whole tree:
#: 42 leaves for the 10M conn workload, ~850 for 30 random predicates, where it took 5x the greedy's 4 s), and
#: searches at most ``PILOT_BUDGET`` times the leaves the greedy search did
PILOT_MAX_LEAVES = 256
PILOT_BUDGET = 4
#: sampled rows each workload box gets at least (all of its rows when it has fewer): a uniform sample of
#: 50,000 of 10M rows holds 1 of the 159 rows of ``dst_port = 443``, too few for the estimate to see what
#: a cut around them is worth
BOX_SAMPLE_ROWS = 2_000
#: ... but the box rows of a large workload (a long query log) share this many in all
BOX_SAMPLE_BUDGET = 200_000


def box_sample_rows(boxes: WorkloadBoxes) -> int:
    """Sampled rows each box of ``boxes`` gets at least: :data:`BOX_SAMPLE_ROWS`, fewer (not below 100) when
    the workload has more than 100 boxes."""
    return max(100, min(BOX_SAMPLE_ROWS, BOX_SAMPLE_BUDGET // max(1, int(boxes.lo.shape[0]))))


def rows_in_boxes(codes: Sequence[np.ndarray], boxes: WorkloadBoxes) -> np.ndarray:
    """``(boxes, rows)`` bool: the row's code lies in the box on every column."""
    n = int(codes[0].size) if len(codes) else 0
    out = np.ones((boxes.lo.shape[0], n), dtype=bool)
    for b in range(boxes.lo.shape[0]):
        for c, col in enumerate(codes):
            lo, hi = boxes.lo[b, c], boxes.hi[b, c]
            if lo == 0 and hi == np.uint64(U64_MAX):
                continue
            out[b] &= (col >= lo) & (col <= hi)
    return out


def box_candidates(codes: Sequence[np.ndarray], priority: np.ndarray, boxes: WorkloadBoxes,
                   per_box: int = BOX_SAMPLE_ROWS) -> np.ndarray:
    """Sorted indices of the rows that are among the ``per_box`` lowest ``priority`` of some box's rows: one
    task's (or one batch's) share of :func:`workload_sample`; applying it again to a union of shares gives
    the union's own candidates."""
    inside = rows_in_boxes(codes, boxes)
    picked = [np.empty(0, np.int64)]
    for b in range(inside.shape[0]):
        idx = np.flatnonzero(inside[b])
        if idx.size > per_box:
            idx = idx[np.argpartition(priority[idx], per_box - 1)[:per_box]]
        picked.append(idx)
    return np.unique(np.concatenate(picked))


def workload_sample(codes: Sequence[np.ndarray], priority: np.ndarray, boxes: WorkloadBoxes, rate: float,
                    per_box: int = BOX_SAMPLE_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """A sample that keeps at least ``per_box`` rows of every workload box, with the rows each stands for.

    Every row of the table drew ``priority`` uniform in [0, 1); the uniform sample is the rows below
    ``rate``. ``codes`` / ``priority`` hold those rows and each task's :func:`box_candidates`. Box ``b`` keeps
    its rows below ``tau_b``, the ``per_box``-th lowest priority among its rows (1 when it has fewer rows), so
    a row is in the sample when its priority is below ``max(rate, tau_b of the boxes it is in)`` - one
    threshold per row, shared across boxes (coordinated priority sampling) - and stands for ``1 / threshold``
    rows. Returns ``(indices into codes, weights)``.
    """
    u = np.asarray(priority, np.float64)
    threshold = np.full(u.size, float(rate))
    inside = rows_in_boxes(codes, boxes)
    for b in range(inside.shape[0]):
        idx = np.flatnonzero(inside[b])
        tau = 1.0 if idx.size < per_box else float(np.partition(u[idx], per_box - 1)[per_box - 1])
        threshold[idx] = np.maximum(threshold[idx], tau)
    keep = np.flatnonzero(u < threshold)
    return keep, 1.0 / threshold[keep]


def candidate_cuts(boxes: WorkloadBoxes) -> list[np.ndarray]:
    """Per column, the sorted thresholds the workload's bounds suggest: a box edge ``[lo, hi]`` gives the cuts
    ``< lo`` and ``< hi + 1``."""
    k = boxes.lo.shape[1]
    out = []
    for j in range(k):
        lo = boxes.lo[:, j]
        hi = boxes.hi[:, j]
        ts = np.concatenate([lo[lo > 0], hi[hi < np.uint64(U64_MAX)] + np.uint64(1)])
        out.append(np.unique(ts))
    return out


# ------------------------------------------------------------------------------------------ the tree

@dataclass(frozen=True)
class QdTree:
    """Nodes in pre-order: node ``i`` is a cut ``code(columns[column[i]]) < threshold[i]`` (left child =
    TRUE) with children ``left[i]`` / ``right[i]``, or a leaf (``column[i] == -1``) numbered ``leaf[i]``
    from left to right."""

    columns: tuple[str, ...]
    code_spaces: tuple[str, ...]
    column: tuple[int, ...]
    threshold: tuple[int, ...]
    left: tuple[int, ...] = field(repr=False)
    right: tuple[int, ...] = field(repr=False)
    leaf: tuple[int, ...] = field(repr=False)
    #: the workload's query shapes (:func:`query_shapes`) the executors cut each leaf's cells along
    #: (:func:`fill_leaves`); empty: every leaf is one curve
    shapes: tuple[tuple[float, ...], ...] = field(default=(), repr=False)

    @property
    def num_leaves(self) -> int:
        return sum(1 for x in self.leaf if x >= 0)

    @property
    def num_cuts(self) -> int:
        return sum(1 for c in self.column if c >= 0)

    def route(self, codes: Sequence[np.ndarray]) -> np.ndarray:
        """Leaf id (``int64``) of each row, from per-column ``uint64`` codes (in :attr:`columns` order)."""
        n = codes[0].shape[0] if codes else 0
        col = np.asarray(self.column, np.int64)
        thr = np.asarray([int(t) for t in self.threshold], np.uint64)
        left = np.asarray(self.left, np.int64)
        right = np.asarray(self.right, np.int64)
        node = np.zeros(n, np.int64)
        # the codes end to end: row r's code of column c is flat[c * n + r] (a 1-D take is cheaper than a
        # 2-D fancy index: 20% of the routing of 1M rows through 1,182 cells)
        flat = np.concatenate([np.asarray(c, np.uint64) for c in codes]) if codes else np.empty(0, np.uint64)
        pending = np.flatnonzero(col[node] >= 0)
        while pending.size:
            at = node[pending]
            values = flat.take(col[at] * n + pending)
            node[pending] = np.where(values < thr[at], left[at], right[at])
            pending = pending[col[node[pending]] >= 0]
        return np.asarray(self.leaf, np.int64)[node]

    def leaf_boxes(self) -> list[list[tuple[int, int]]]:
        """Per leaf, the code interval of each column its cuts allow."""
        k = len(self.columns)
        out: list[list[tuple[int, int]]] = [[] for _ in range(self.num_leaves)]
        stack = [(0, [(0, U64_MAX)] * k)]
        while stack:
            i, box = stack.pop()
            if self.column[i] < 0:
                out[self.leaf[i]] = box
                continue
            j, t = self.column[i], int(self.threshold[i])
            lbox, rbox = list(box), list(box)
            lbox[j] = (box[j][0], min(box[j][1], t - 1))
            rbox[j] = (max(box[j][0], t), box[j][1])
            stack.append((self.right[i], rbox))
            stack.append((self.left[i], lbox))
        return out

    def with_shapes(self, shapes: Sequence[Sequence[float]]) -> QdTree:
        return replace(self, shapes=_checked_shapes(shapes, len(self.columns)))

    def to_json(self) -> str:
        nodes: list[Any] = [[c, str(t)] if c >= 0 else [] for c, t in zip(self.column, self.threshold)]
        d: dict[str, Any] = {"version": QDTREE_FORMAT_VERSION, "columns": list(self.columns),
                             "code_spaces": list(self.code_spaces), "nodes": nodes}
        if self.shapes:
            d["shapes"] = [list(shape) for shape in self.shapes]
        return json.dumps(d, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> QdTree:
        try:
            d = json.loads(text)
            if int(d.get("version", 0)) != QDTREE_FORMAT_VERSION:
                raise InvalidArgumentError(f"qdtree format version {d.get('version')} is not supported")
            spec = [(int(n[0]), int(n[1])) if n else (-1, 0) for n in d["nodes"]]
            tree = _from_preorder(tuple(d["columns"]), tuple(d["code_spaces"]), spec)
            return tree.with_shapes(d.get("shapes", ()))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            raise InvalidArgumentError(f"malformed qdtree in the clustering plan: {e}",
                                       hint="reschedule the clustering") from e

    @classmethod
    def single_leaf(cls, columns: Sequence[str], code_spaces: Sequence[str]) -> QdTree:
        return _from_preorder(tuple(columns), tuple(code_spaces), [(-1, 0)])


def _from_preorder(columns: tuple[str, ...], code_spaces: tuple[str, ...], spec: Sequence[tuple[int, int]]) -> QdTree:
    """Rebuild child links and leaf numbers from a pre-order node list."""
    n = len(spec)
    if n == 0:
        raise InvalidArgumentError("a qdtree needs at least one node")
    left = [-1] * n
    right = [-1] * n
    leaf = [-1] * n
    next_leaf = 0
    waiting: list[int] = []  # cut nodes whose right child is still to come
    for i, (c, _t) in enumerate(spec):
        if c >= len(columns):
            raise InvalidArgumentError(f"qdtree node {i} cuts column {c}; there are {len(columns)}")
        if i > 0:
            if not waiting:
                raise InvalidArgumentError(f"qdtree node list has {n - i} nodes after the tree")
            parent = waiting[-1]
            if left[parent] < 0:
                left[parent] = i
            else:
                right[parent] = i
                waiting.pop()
        if c >= 0:
            waiting.append(i)
        else:
            leaf[i] = next_leaf
            next_leaf += 1
    if waiting:
        raise InvalidArgumentError("qdtree node list ends inside a subtree")
    return QdTree(columns, code_spaces, tuple(c for c, _ in spec), tuple(t for _, t in spec),
                  tuple(left), tuple(right), tuple(leaf))


# ------------------------------------------------------------------------------------------ building

@dataclass
class _Node:
    rows: np.ndarray  # sample row indices
    cut: tuple[int, int] | None = None  # (column, threshold) chosen
    children: tuple[int, int] | None = None
    #: per column the half-open code interval the node covers (its key among equal sub-trees)
    region: tuple[tuple[int, int], ...] = ()
    depth: int = 0


#: a move on a leaf: (estimated gain, column, thresholds: one cut or a slab of two)
Move = tuple[float, int, tuple[int, ...]]


@dataclass
class _Growth:
    """One greedy growth of the tree: nodes, leaf costs, and the heap of each leaf's best move."""

    nodes: list[_Node]
    costs: list[float]
    heap: list[tuple[float, int, int, tuple[int, ...]]]
    leaves: int

    def total(self) -> float:
        return sum(c for nd, c in zip(self.nodes, self.costs) if nd.cut is None)

    def copy(self) -> _Growth:
        """An independent growth (nodes are replaced, never changed, so they are shared)."""
        return _Growth(list(self.nodes), list(self.costs), list(self.heap), self.leaves)


@dataclass(frozen=True)
class BuildStats:
    """What the greedy search did (for logs and the benchmark)."""

    leaves: int
    cuts: int
    cost_before: float
    cost_after: float


def _touch(lo: np.ndarray, hi: np.ndarray, boxes: WorkloadBoxes) -> np.ndarray:
    """``(candidates, boxes)``: does a candidate's sampled box ``[lo, hi]`` (``(m, k)``) meet the query box?"""
    return np.all((lo[:, None, :] <= boxes.hi[None, :, :]) & (hi[:, None, :] >= boxes.lo[None, :, :]), axis=2)


def _files_read(touch: np.ndarray, inside: np.ndarray, rows: np.ndarray, rows_per_file: float, dims: int,
                qmat: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Estimated weighted files the workload reads in candidate leaves (one per entry of ``rows``).

    A leaf of ``f`` files is ordered along a ``dims``-dimensional curve, so each file spans about
    ``a = f ** (-1 / dims)`` of every column's range in the leaf; a query box covering the fraction ``s_c`` of
    the leaf's rows on column ``c`` then meets about ``f * prod_c min(1, s_c + a)`` files (a file's extent
    widens the box by ``a``; a box spanning a whole column costs nothing more there), and none when the
    leaf's sampled min/max box misses it. Checked against simulated layouts: splitting a 470-file leaf in two
    costs a query on another column ~15%, which this estimate gives (a ``+1`` boundary term per column
    overstated it at ~33% and kept the search from isolating thin slabs). ``inside``:
    ``(candidates, boxes, k)`` rows of the candidate whose column ``c`` lies in the box's interval.
    """
    f = np.maximum(1.0, rows / rows_per_file)
    cell = f ** (-1.0 / max(1, dims))
    frac = inside / np.maximum(rows, 1.0)[:, None, None]
    est = f[:, None] * np.prod(np.minimum(1.0, frac + cell[:, None, None]), axis=2)  # (m, B)
    est = np.minimum(est, f[:, None]) * touch
    per_query = np.minimum(est @ qmat, f[:, None])  # a query's boxes never read more than the leaf
    return per_query @ weights


def build_qdtree(codes: Sequence[np.ndarray], columns: Sequence[str], code_spaces: Sequence[str],
                 boxes: WorkloadBoxes, *, rows_per_file: float, min_leaf_rows: float | None = None,
                 max_leaves: int = MAX_LEAVES, inner_dims: int | None = None,
                 row_weights: np.ndarray | None = None, lookahead: int = 1,
                 lookahead_depth: int = PILOT_DEPTH, shapes: Sequence[Sequence[float]] = (),
                 shape_weight: float = 0.0) -> tuple[QdTree, BuildStats]:
    """Greedy cut selection on a row sample (``codes``: per column ``uint64`` codes of the same rows).

    ``rows_per_file``: sample rows of one target file (the estimate counts files); ``min_leaf_rows``: the
    fewest sample rows a leaf may get (default one file; e.g. half a file lets a thin slab of the workload
    become one smaller file). ``inner_dims``: columns of the curve inside
    each leaf (default: all ``columns``). ``row_weights``: rows each sampled row stands for (a sample that
    over-represents the workload's boxes, :func:`workload_sample`); every count of the estimate, the two row
    limits included, is then a sum of weights. Default: one each. ``lookahead`` / ``lookahead_depth``: moves
    tried per node, at nodes shallower than the depth (``lookahead=1``: the plain greedy search).

    ``shapes`` (:func:`query_shapes`) with ``shape_weight`` > 0: the estimate also counts, with that weight,
    each shape placed at random - the workload's queries with other constants. A leaf of ``f`` files spanning
    the share ``e_c`` of column ``c``'s rows is then met by a shape of shares ``s_c`` in about
    ``f * prod_c min(1, s_c + e_c * f^(-1/d))`` files, so a cut that helps the workload's own constants
    little but fragments the rows for every other constant no longer pays. The search then makes fewer,
    better-placed cuts, and the one-file cells that complete the tree serve other constants better.
    """
    k = len(columns)
    if len(codes) != k:
        raise InvalidArgumentError(f"{len(codes)} code arrays for {k} columns")
    n = codes[0].shape[0] if k else 0
    max_leaves = max(1, min(int(max_leaves), MAX_LEAVES))
    if n == 0 or boxes.num_queries == 0 or k == 0:
        return QdTree.single_leaf(columns, code_spaces), BuildStats(1, 0, 0.0, 0.0)
    dims = inner_dims or k
    cuts = candidate_cuts(boxes)
    matrix = np.stack([np.asarray(c, np.uint64) for c in codes])
    wt = np.ones(n, np.float64) if row_weights is None else np.asarray(row_weights, np.float64)
    if wt.shape != (n,):
        raise InvalidArgumentError(f"{wt.size} row weights for {n} sampled rows")
    weights = boxes.weights
    qmat = boxes.query_matrix()
    per_file = max(1.0, float(rows_per_file))
    min_rows = max(1.0, float(min_leaf_rows if min_leaf_rows is not None else rows_per_file))

    # only (box, column) pairs that constrain the column need counting; elsewhere every row is inside
    pairs = [(b, c) for b in range(boxes.lo.shape[0]) for c in range(k)
             if not (boxes.lo[b, c] == 0 and boxes.hi[b, c] == np.uint64(U64_MAX))]

    # each constrained (box, column) pair's membership of every sampled row, computed once for the search
    pair_b = np.array([b for b, _c in pairs], np.int64)
    pair_c = np.array([c for _b, c in pairs], np.int64)
    pair_inside = np.stack([(matrix[c] >= boxes.lo[b, c]) & (matrix[c] <= boxes.hi[b, c]) for b, c in pairs]) \
        if pairs else np.zeros((0, n), bool)

    # each column's order over the whole sample, computed once (stable: ties by row, as a leaf's own sort)
    sorted_rows = [np.argsort(matrix[j], kind="stable") for j in range(k)]
    # the shapes, and per column the sample's codes in order with their cumulative share of the rows
    shape_arr = (np.array(_checked_shapes(shapes, k), np.float64).reshape(-1, k + 1) if shape_weight > 0
                 else np.zeros((0, k + 1)))
    shape_w, shape_s = shape_arr[:, 0] * float(shape_weight), shape_arr[:, 1:]
    col_order = sorted_rows if shape_w.size else []
    col_sorted = [matrix[j][o] for j, o in enumerate(col_order)]
    col_cum = [np.concatenate([[0.0], np.cumsum(wt[o])]) / max(float(wt.sum()), 1e-300) for o in col_order]

    def leaf_cost(lo: np.ndarray, hi: np.ndarray, inside: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Estimated weighted reads of candidate leaves (sampled min/max boxes ``[lo, hi]``, ``(m, k)``;
        ``inside`` and ``rows`` as :func:`_files_read`): the workload's own queries, plus its shapes placed at
        random (``shape_weight``)."""
        out = _files_read(_touch(lo, hi, boxes), inside, rows, per_file, dims, qmat, weights)
        if shape_w.size:
            e = np.stack([col_cum[j][np.searchsorted(col_sorted[j], hi[:, j], side="right")]
                          - col_cum[j][np.searchsorted(col_sorted[j], lo[:, j], side="left")] for j in range(k)],
                         axis=1)  # (m, k): share of the sample within the leaf's box
            f = np.maximum(1.0, rows / per_file)
            a = f ** (-1.0 / max(1, dims))
            per = np.prod(np.minimum(1.0, shape_s[None, :, :] + (e * a[:, None])[:, None, :]), axis=2)  # (m, S)
            out = out + f * (per @ shape_w)
        return out

    def counts_before(order: np.ndarray, sw: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """``(len(pos), boxes, k)``: weight of the first ``pos`` rows of ``order`` (sample rows, weights ``sw``)
        inside each interval."""
        total = np.concatenate([[0.0], np.cumsum(sw)])
        out = np.repeat(total[pos][:, None, None], boxes.lo.shape[0], axis=1)
        out = np.repeat(out, k, axis=2)
        if pairs:  # one cumulative sum over all pairs (the same sums, in the same order, as one per pair)
            running = np.cumsum(np.where(pair_inside[:, order], sw, 0.0), axis=1)
            at = np.clip(pos - 1, 0, None)
            out[:, pair_b, pair_c] = np.where(pos[:, None] > 0, running[:, at].T, 0.0)
        return out

    def cost_of(rows: np.ndarray) -> float:
        """Estimated reads of the sample rows ``rows`` as one leaf."""
        srt, sw = matrix[:, rows], wt[rows]
        mass = float(sw.sum())
        inside = np.full((1, boxes.lo.shape[0], k), mass)
        if pairs:  # totals only: a product, not the running sums of counts_before
            inside[0, pair_b, pair_c] = pair_inside[:, rows].astype(np.float64) @ sw
        return float(leaf_cost(srt.min(axis=1)[None, :], srt.max(axis=1)[None, :], inside,
                               np.array([mass], np.float64))[0])

    def leaf_moves(rows: np.ndarray, base: float) -> list[Move]:
        """The moves for a leaf that lower the estimate, best first: per column the best cut ``(t,)``, and
        every slab ``(t1, t2)`` (two cuts at once, so that an interval of the workload - a LIKE prefix, an
        equality - gets a leaf even where neither cut alone pays for the files it splits)."""
        found: list[Move] = []
        m = rows.size
        mass = float(wt[rows].sum())
        if mass < 2 * min_rows:
            return found
        member = np.zeros(n, dtype=bool)
        member[rows] = True
        for j in range(k):
            ts = cuts[j]
            if ts.size == 0:
                continue
            # the leaf's rows in column-j order: the sample's order filtered (O(n), no sort per leaf)
            in_order = sorted_rows[j]
            order = in_order[member[in_order]]
            srt = matrix[:, order]
            sw = wt[order]
            before_w = np.concatenate([[0.0], np.cumsum(sw)])  # weight of the first i rows
            col = srt[j]
            ts = ts[(ts > col[0]) & (ts <= col[-1])]
            if ts.size == 0:
                continue
            pos = np.searchsorted(col, ts, side="left")
            ok = (before_w[pos] >= min_rows) & (mass - before_w[pos] >= min_rows)
            # prefix / suffix min-max of the leaf in column-j order: the codes of the rows below / above a cut
            pmin = np.minimum.accumulate(srt, axis=1)
            pmax = np.maximum.accumulate(srt, axis=1)
            smin = np.minimum.accumulate(srt[:, ::-1], axis=1)[:, ::-1]
            smax = np.maximum.accumulate(srt[:, ::-1], axis=1)[:, ::-1]
            if ok.any():
                pos_ok, first = np.unique(pos[ok], return_index=True)
                ts_ok = ts[ok][first]
                both = counts_before(order, sw, np.concatenate([pos_ok, [m]]))
                before = both[:-1]
                after = both[-1][None, :, :] - before
                p = before_w[pos_ok]
                cost = (leaf_cost(pmin[:, pos_ok - 1].T, pmax[:, pos_ok - 1].T, before, p)
                        + leaf_cost(smin[:, pos_ok].T, smax[:, pos_ok].T, after, mass - p))
                i = int(np.argmin(cost))
                gain = base - float(cost[i])
                if gain > 1e-9 * max(1.0, base):
                    found.append((gain, j, (int(ts_ok[i]),)))
            # every slab of the column at once: rows below t1, in [t1, t2), from t2 on
            lo_t, hi_t = slab_edges[j]
            if lo_t.size:
                p1 = np.searchsorted(col, lo_t, side="left")
                p2 = np.searchsorted(col, hi_t, side="left")
                w1, w2 = before_w[p1], before_w[p2]
                # a slab touching an edge is a single cut; a thin one cannot be a leaf
                fit = (p1 > 0) & (p2 < m) & (w2 - w1 >= min_rows) & (w1 >= min_rows) & (mass - w2 >= min_rows)
                if fit.any():
                    p1, p2, w1, w2 = p1[fit], p2[fit], w1[fit], w2[fit]
                    edges = np.empty(2 * p1.size, np.int64)
                    edges[0::2], edges[1::2] = p1, p2
                    mid_min = np.minimum.reduceat(srt, edges, axis=1)[:, 0::2]
                    mid_max = np.maximum.reduceat(srt, edges, axis=1)[:, 0::2]
                    cnt = counts_before(order, sw, np.concatenate([p1, p2, [m]]))
                    below, upto = cnt[:p1.size], cnt[p1.size:2 * p1.size]
                    cost = (leaf_cost(pmin[:, p1 - 1].T, pmax[:, p1 - 1].T, below, w1)
                            + leaf_cost(mid_min.T, mid_max.T, upto - below, w2 - w1)
                            + leaf_cost(smin[:, p2].T, smax[:, p2].T, cnt[-1][None] - upto, mass - w2))
                    t1s, t2s = lo_t[fit], hi_t[fit]
                    for c, a, z in zip(cost, t1s, t2s):
                        gain = base - float(c)
                        if gain > 1e-9 * max(1.0, base):
                            found.append((gain, j, (int(a), int(z))))
        found.sort(key=lambda mv: -mv[0])  # stable: ties keep column order, single cut before slabs
        return found

    # the workload's intervals per column, as slabs [t1, t2) of two cuts
    slabs: list[list[tuple[int, int]]] = [[] for _ in range(k)]
    for b in range(boxes.lo.shape[0]):
        for j in range(k):
            lo, hi = int(boxes.lo[b, j]), int(boxes.hi[b, j])
            if lo > 0 and hi < U64_MAX and (lo, hi + 1) not in slabs[j]:
                slabs[j].append((lo, hi + 1))
    slab_edges = [(np.array([a for a, _ in sl], np.uint64), np.array([z for _, z in sl], np.uint64)) for sl in slabs]

    root_cost = cost_of(np.arange(n))
    memo: dict[tuple[tuple[int, int], ...], list[Move]] = {}

    def moves_of(st: _Growth, i: int) -> list[Move]:
        """A leaf's moves, computed once per region (rollouts meet the same leaves again)."""
        key = st.nodes[i].region
        if key not in memo:
            memo[key] = leaf_moves(st.nodes[i].rows, st.costs[i])
        return memo[key]

    def within_budget() -> bool:
        """The lookahead stops trying alternatives once it has searched ``PILOT_BUDGET`` times the leaves the
        plain greedy search did (a large workload makes every leaf's search dear)."""
        return len(memo) < budget

    halves: dict[tuple[tuple[tuple[int, int], ...], int, int], tuple[_Node, _Node, float, float]] = {}

    def split(st: _Growth, i: int, j: int, t: int) -> tuple[int, int]:
        nd = st.nodes[i]
        key = (nd.region, j, t)
        if key not in halves:
            go_left = matrix[j, nd.rows] < np.uint64(t)
            lo, hi = nd.region[j]
            a = _Node(nd.rows[go_left], region=nd.region[:j] + ((lo, min(hi, t)),) + nd.region[j + 1:])
            b = _Node(nd.rows[~go_left], region=nd.region[:j] + ((max(lo, t), hi),) + nd.region[j + 1:])
            halves[key] = (a, b, cost_of(a.rows), cost_of(b.rows))
        a, b, cost_a, cost_b = halves[key]
        st.nodes[i] = _Node(np.empty(0, np.int64), (j, t), (len(st.nodes), len(st.nodes) + 1), nd.region, nd.depth)
        st.nodes.extend([replace(a, depth=nd.depth + 1), replace(b, depth=nd.depth + 1)])
        st.costs.extend([cost_a, cost_b])
        return len(st.nodes) - 2, len(st.nodes) - 1

    def push_best(st: _Growth, node: int) -> None:
        found = moves_of(st, node)
        if found:
            gain, j, ts = found[0]
            heapq.heappush(st.heap, (-gain, node, j, ts))

    def apply(st: _Growth, i: int, j: int, ts: tuple[int, ...]) -> None:
        left, right = split(st, i, j, ts[0])
        made = [left, right]
        if len(ts) == 2:
            middle, upper = split(st, right, j, ts[1])
            made = [left, middle, upper]
        st.leaves += len(made) - 1
        for node in made:
            push_best(st, node)

    def fits(st: _Growth, ts: tuple[int, ...]) -> bool:
        return st.leaves + len(ts) <= max_leaves

    def grow(st: _Growth, pilot: bool) -> _Growth:
        """Apply each leaf's best move, best gain first. ``pilot``: at a node shallower than
        ``lookahead_depth``, try the node's ``lookahead`` best moves instead, each on a copy grown greedily to
        the end, and keep the one whose whole tree has the lowest estimate (the greedy's move helps most at
        once, which can fragment what later cuts would have kept whole)."""
        while st.heap and st.leaves < max_leaves:
            _, i, j, ts = heapq.heappop(st.heap)
            if not fits(st, ts):
                continue
            if pilot and st.nodes[i].depth < lookahead_depth and within_budget():
                trials = [(j, ts)] + [(cj, cts) for _, cj, cts in moves_of(st, i)[1:lookahead] if fits(st, cts)]
                if len(trials) > 1:
                    best_total = None
                    for cj, cts in trials:
                        trial = st.copy()
                        apply(trial, i, cj, cts)
                        total = grow(trial, False).total()
                        if best_total is None or total < best_total - 1e-9 * max(1.0, abs(best_total)):
                            best_total, (j, ts) = total, (cj, cts)
            log.debug("qdtree: leaf %d (%d sampled rows) cut on %s at %s", i, st.nodes[i].rows.size, columns[j], ts)
            apply(st, i, j, ts)
        return st

    full = tuple((0, U64_MAX + 1) for _ in range(k))
    root = _Growth([_Node(np.arange(n), region=full)], [root_cost], [], 1)
    push_best(root, 0)
    best = grow(root.copy(), False)  # the plain greedy tree; its leaf searches are kept for the lookahead
    if lookahead > 1 and lookahead_depth > 0 and best.leaves <= PILOT_MAX_LEAVES:
        budget = PILOT_BUDGET * max(1, len(memo))
        best = grow(root, True)
    nodes = best.nodes
    total_before = root_cost
    total_after = best.total()
    spec: list[tuple[int, int]] = []
    stack = [0]
    while stack:  # pre-order
        i = stack.pop()
        nd = nodes[i]
        if nd.cut is None or nd.children is None:
            spec.append((-1, 0))
            continue
        spec.append(nd.cut)
        stack.append(nd.children[1])
        stack.append(nd.children[0])
    tree = _from_preorder(tuple(columns), tuple(code_spaces), spec)
    return tree, BuildStats(tree.num_leaves, tree.num_cuts, total_before, total_after)


def build_qdtree_for_files(codes: Sequence[np.ndarray], columns: Sequence[str], code_spaces: Sequence[str],
                           boxes: WorkloadBoxes, *, output_files: int, min_leaf_files: float, lookahead: int,
                           row_weights: np.ndarray | None = None, shapes: Sequence[Sequence[float]] = (),
                           shape_weight: float = 0.0) -> tuple[QdTree, BuildStats]:
    """:func:`build_qdtree` for a clustering that writes about ``output_files`` files, no leaf below
    ``min_leaf_files`` of a file: the row limits in sampled rows (sums of ``row_weights``); ``shapes`` /
    ``shape_weight`` as there."""
    mass = float(row_weights.sum()) if row_weights is not None else float(codes[0].size if len(codes) else 0)
    per_file = mass / max(1, output_files)
    return build_qdtree(codes, columns, code_spaces, boxes, rows_per_file=per_file,
                        min_leaf_rows=max(1.0, min_leaf_files * per_file),
                        max_leaves=max(1, int(output_files / max(min_leaf_files, 1e-3))), row_weights=row_weights,
                        lookahead=lookahead, shapes=shapes, shape_weight=shape_weight)


# ------------------------------------------------------------------------------------------ the sort key

def leaf_file_rows(rows: int, rows_per_file: float) -> int:
    """Rows per file of a leaf of ``rows`` rows: it becomes ``max(1, round(rows / rows_per_file))`` files of
    equal size (the last one may be smaller), so no file spans two leaves."""
    return -(-int(rows) // max(1, round(rows / max(1.0, rows_per_file))))


def leaf_runs(leaves: np.ndarray) -> Iterator[tuple[int, int]]:
    """``(first, last)`` row ranges of each leaf among rows in key order (``leaves``: each row's leaf)."""
    edges = np.flatnonzero(np.diff(leaves)) + 1
    for first, last in zip(np.concatenate([[0], edges]), np.concatenate([edges, [leaves.size]])):
        yield int(first), int(last)


def leaf_file_starts(leaves: np.ndarray, rows_per_file: float) -> np.ndarray:
    """Where files start among rows in key order (``leaves``: each row's leaf, in that order), by
    :func:`leaf_file_rows`: what the reduce tasks write, for offline replays and tests."""
    starts: list[int] = []
    for first, last in leaf_runs(leaves):
        starts.extend(range(first, last, leaf_file_rows(last - first, rows_per_file)))
    return np.array(starts, np.int64)


def leaf_bits(num_leaves: int) -> int:
    return max(1, (max(1, num_leaves) - 1).bit_length())


@dataclass(frozen=True)
class QdTreeLayout:
    """The sort key of a qdtree clustering (picklable; computed on Arrow batches in the executors).

    ``bounds[j]``: sampled quantile bounds of column ``j`` (global); ``zoom_lo`` / ``zoom_hi``: per leaf and
    column, the range of bucket ids the leaf's sampled rows span, which the inner curve stretches over
    ``widths[leaf, j]`` bits. The inner key of every leaf is left-aligned to :attr:`inner_bits`.
    """

    tree: QdTree
    columns: tuple[str, ...]
    bits: tuple[int, ...]
    bounds: tuple[np.ndarray, ...] = field(repr=False)
    zoom_lo: np.ndarray = field(repr=False)
    zoom_hi: np.ndarray = field(repr=False)
    #: bits per leaf and column (``None``: :attr:`bits` for every leaf)
    widths: np.ndarray | None = field(default=None, repr=False)
    #: per leaf, the one column whose bucket orders its rows instead of a curve (``None``: the curve); for
    #: one-file cells, where a curve only orders rows inside a file (:func:`layout_for`)
    cell_column: np.ndarray | None = field(default=None, repr=False)

    @property
    def inner_bits(self) -> int:
        return sum(self.bits)

    def leaf_of_keys(self, keys: np.ndarray) -> np.ndarray:
        return (np.asarray(keys, np.uint64) >> np.uint64(self.inner_bits)).astype(np.int64)

    def leaf_start_key(self, leaf: int) -> int:
        return int(leaf) << self.inner_bits

    def keys_from_codes(self, codes: Sequence[np.ndarray]) -> np.ndarray:
        """Sort keys from per-column codes of the sort :attr:`columns` (the tree's columns are the same)."""
        leaves = self.tree.route(codes)
        if self.cell_column is not None:
            return self._cell_keys(codes, leaves, self.cell_column)
        widths = self.widths if self.widths is not None else np.tile(np.array(self.bits), (self.tree.num_leaves, 1))
        row_widths = widths[leaves]  # (n, k)
        coords = []
        for j, c in enumerate(codes):
            ids = bucketize(np.asarray(c, np.uint64), self.bounds[j]).astype(np.int64)
            lo = self.zoom_lo[leaves, j]
            hi = self.zoom_hi[leaves, j]
            d = np.clip(ids, lo, hi) - lo
            r = np.maximum(hi - lo, 1)
            top = (np.int64(1) << row_widths[:, j]) - 1
            coords.append((d * top // r).astype(np.uint64))
        inner = np.zeros(leaves.size, np.uint64)
        # the distinct width patterns are found among the leaves, not the rows (a sort of every row's widths
        # was 70% of the key's cost)
        patterns, leaf_pattern = np.unique(widths, axis=0, return_inverse=True)
        which = leaf_pattern.reshape(-1)[leaves]
        for p, pattern in enumerate(patterns):
            rows = np.flatnonzero(which == p) if len(patterns) > 1 else np.arange(leaves.size)
            w = tuple(int(x) for x in pattern)
            part = weighted_index([c[rows] for c in coords], w, "hilbert")
            inner[rows] = part << np.uint64(self.inner_bits - sum(w))
        return (leaves.astype(np.uint64) << np.uint64(self.inner_bits)) | inner

    def _cell_keys(self, codes: Sequence[np.ndarray], leaves: np.ndarray, cell_column: np.ndarray) -> np.ndarray:
        """Keys ordering each leaf's rows by the bucket of its ``cell_column`` alone (one pass of
        ``bucketize`` over the rows in all, no curve)."""
        inner = np.zeros(leaves.size, np.uint64)
        by = cell_column[leaves]
        for j, c in enumerate(codes):
            rows = np.flatnonzero(by == j)
            if rows.size == 0:
                continue
            at = leaves[rows]
            ids = bucketize(np.asarray(c, np.uint64)[rows], self.bounds[j]).astype(np.int64)
            lo, hi = self.zoom_lo[at, j], self.zoom_hi[at, j]
            d = np.clip(ids, lo, hi) - lo
            top = (1 << self.bits[j]) - 1
            inner[rows] = (d * top // np.maximum(hi - lo, 1)).astype(np.uint64) << np.uint64(
                self.inner_bits - self.bits[j])
        return (leaves.astype(np.uint64) << np.uint64(self.inner_bits)) | inner

    def keys(self, table: pa.Table | pa.RecordBatch) -> np.ndarray:
        cols = [table.column(table.schema.get_field_index(c)) for c in self.columns]
        return self.keys_from_codes([encode_column(a, name=n) for a, n in zip(cols, self.columns)])


def layout_for(tree: QdTree, sample_codes: Sequence[np.ndarray], *, weights: Sequence[float] | None = None,
               by_extent: bool = False, one_file_cells: bool = False) -> QdTreeLayout:
    """The inner curves of ``tree``'s leaves from a sample of the sort columns' codes (the tree's columns).

    ``one_file_cells``: the leaves are cells of about one or two files (:func:`fill_leaves`,
    :func:`cells_of_one_file`), so a curve would only order rows inside a file or two: each leaf's rows are
    ordered by its widest column (the largest share of the column's buckets) instead, which splits a cell of
    1.5 files or more (by its real row count) along a column, the way one more k-d cut would. It saved 0.2 s
    of the key's 0.46 s per million rows of the 10M conn table's 1,182 cells.

    Each leaf's curve spans the leaf's own bucket range of every column (zoom). With ``by_extent`` a column
    also weighs in proportion to the share of its global range the leaf spans, so a leaf that is a thin slab
    of one column spends its top bits on the others: files are then about as wide, in every column, as the
    queries of the workload's shapes are, wherever their constants fall. Off by default: on 500,000 conn rows
    (59 files, workload Q1-Q7 of ``bench/bench_workload.py``, files as per-leaf chunks of the sorted keys) it
    read more files than equal bits per column, 69 vs 52 on the workload and 148 vs 140 on the held-out queries.
    """
    k = len(tree.columns)
    key_bits = 64 - leaf_bits(tree.num_leaves)
    base = [1.0] * k if weights is None else [float(w) for w in weights]
    bits = bits_for_weights(base, key_bits=key_bits, max_bits=MAX_INNER_BITS)
    bounds = tuple(sample_bounds(np.asarray(s, np.uint64), b) for s, b in zip(sample_codes, bits))
    n_leaves = tree.num_leaves
    zoom_lo = np.zeros((n_leaves, k), np.int64)
    zoom_hi = np.array([[b.size for b in bounds]] * n_leaves, np.int64).reshape(n_leaves, k)
    if sample_codes and sample_codes[0].size:
        leaves = tree.route(sample_codes)
        for j in range(k):
            ids = np.searchsorted(bounds[j], np.asarray(sample_codes[j], np.uint64), side="right").astype(np.int64)
            lo = np.full(n_leaves, np.iinfo(np.int64).max)
            hi = np.full(n_leaves, -1)
            np.minimum.at(lo, leaves, ids)
            np.maximum.at(hi, leaves, ids)
            seen = hi >= 0
            zoom_lo[seen, j] = lo[seen]
            zoom_hi[seen, j] = hi[seen]
    widths = None
    if by_extent:
        total = np.array([b.size + 1 for b in bounds], np.float64)
        extent = (zoom_hi - zoom_lo + 1) / total  # share of each column's range, per leaf
        widths = np.array([bits_for_weights([w * max(e, 1e-9) for w, e in zip(base, row)], key_bits=sum(bits),
                                            max_bits=max(bits)) for row in extent], np.int64).reshape(n_leaves, k)
    cell_column = None
    if one_file_cells:
        span = (zoom_hi - zoom_lo) / np.array([b.size + 1 for b in bounds], np.float64)[None, :]
        cell_column = np.argmax(span, axis=1).astype(np.int64) if k else None
    return QdTreeLayout(tree, tuple(tree.columns), tuple(bits), bounds, zoom_lo, zoom_hi, widths, cell_column)


# ------------------------------------------------------------------------------------------ leaf cells

def _checked_shapes(shapes: Sequence[Sequence[float]], k: int) -> tuple[tuple[float, ...], ...]:
    out = tuple(tuple(float(x) for x in shape) for shape in shapes)
    for shape in out:
        if len(shape) != k + 1 or shape[0] < 0 or not all(0.0 <= x <= 1.0 for x in shape[1:]):
            raise InvalidArgumentError(f"malformed qdtree query shape {list(shape)}: expected a weight and {k} "
                                       "shares in [0, 1]")
    return out


def _share(ordered: np.ndarray, lo: Any, hi: Any) -> float:
    """Share of the sorted sample column ``ordered`` within ``[lo, hi]``."""
    inside = np.searchsorted(ordered, hi, side="right") - np.searchsorted(ordered, lo, side="left")
    return float(inside) / max(1, ordered.size)


def query_shapes(boxes: WorkloadBoxes, sample_codes: Sequence[np.ndarray]) -> tuple[tuple[float, ...], ...]:
    """The *shape* of each workload box: its weight (the summed weights of the queries it belongs to) and,
    per column, the share of the sampled rows its interval holds (1 where the box leaves the column free).

    A shape is what the workload says beyond its constants: ``src_ip LIKE '157.%'`` is "about 0.4% of the
    rows of ``src_ip``, any other column"; the same query with another prefix has the same shape.
    """
    k = len(sample_codes)
    m = int(sample_codes[0].size) if k else 0
    if m == 0 or boxes.lo.shape[0] == 0:
        return ()
    ordered = [np.sort(np.asarray(c, np.uint64)) for c in sample_codes]
    box_weight = boxes.query_matrix() @ boxes.weights
    out = []
    for b in range(boxes.lo.shape[0]):
        shares = []
        for j in range(k):
            lo, hi = boxes.lo[b, j], boxes.hi[b, j]
            free = lo == 0 and hi == np.uint64(U64_MAX)
            shares.append(1.0 if free else _share(ordered[j], lo, hi))
        out.append((float(box_weight[b]), *shares))
    return tuple(out)


def _files_per_cell(tree: QdTree, output_files: int, max_leaves: int) -> float:
    """Files a cell of :func:`fill_leaves` holds: one, unless ``max_leaves`` leaves no room for a cell per
    output file beside the tree's own leaves."""
    room = max(1, int(max_leaves) - tree.num_leaves)
    return max(1.0, output_files / room)


def cells_of_one_file(tree: QdTree, output_files: int, max_leaves: int = MAX_LEAVES) -> bool:
    """Does :func:`fill_leaves` cut ``tree`` into cells of about one file each (its shapes recorded, and
    room under ``max_leaves`` for a cell per output file)?"""
    return bool(tree.shapes) and output_files >= 2 and _files_per_cell(tree, output_files, max_leaves) == 1.0


def fill_leaves(tree: QdTree, sample_codes: Sequence[np.ndarray], output_files: int,
                max_leaves: int = MAX_LEAVES) -> QdTree:
    """``tree`` with each leaf cut further into cells of about one output file each, along the workload's
    query shapes (:attr:`QdTree.shapes`; the tree unchanged without them).

    The workload's cuts serve its own constants; a query of the same shape with another constant (a
    different prefix, port or range) meets whatever the leaves hold. Each leaf is therefore split k-d style:
    at the sampled median (or the quantile that halves its file count) of the column that most lowers the
    estimated files the shapes read, where a cell spanning the share ``e_c`` of column ``c``'s sampled rows is
    met by a shape with shares ``s_c`` with probability ``prod_c min(1, s_c + e_c)`` (the shape placed at
    random). Cells are exact boxes, so files do not overlap the way chunks of one curve do. On the 10M-row
    conn data (``bench/qdtree_replay.py``, seeds 17 / 5 / 99) this read 1,035 / 1,045 / 1,136 files over the
    held-out queries H1-H7 where Hilbert curves inside the leaves read 1,263 / 1,265 / 1,284, with the
    workload's own queries unchanged (64 / 60 / 61 vs 63 / 62 / 64); with the shapes in the cut search too
    (``build_qdtree``'s ``shape_weight`` 0.1) 1,014 / 1,015 / 1,026, workload 63 / 64 / 62.

    On by default (``hudi_layout.layout.qdtree.leaf.cells``; docs/layouts.md). A leaf below
    :data:`CELL_SPLIT_AT` cells' worth of sampled rows stays whole.
    ``sample_codes``: a uniform row sample of the rows to lay out (per column ``uint64`` codes);
    ``output_files``: the files those rows become. More cells than ``max_leaves`` allows make each cell a few
    files (the leaf's Hilbert curve orders them).
    """
    k = len(tree.columns)
    if not tree.shapes or len(sample_codes) != k or output_files < 2:
        return tree
    matrix = np.stack([np.asarray(c, np.uint64) for c in sample_codes])
    m = matrix.shape[1]
    if m == 0:
        return tree
    rows_per_cell = _files_per_cell(tree, output_files, max_leaves) * m / output_files
    shapes = np.array(tree.shapes, np.float64)
    weight, shares = shapes[:, 0], shapes[:, 1:]
    ordered = [np.sort(matrix[j]) for j in range(k)]

    def extent(rows: np.ndarray) -> np.ndarray:
        """Share of the sample's rows within the rows' min/max, per column."""
        sub = matrix[:, rows]
        lo, hi = sub.min(axis=1), sub.max(axis=1)
        return np.array([_share(ordered[j], lo[j], hi[j]) for j in range(k)])

    def shape_cost(rows: np.ndarray) -> float:
        e = extent(rows)
        return float(weight @ np.prod(np.minimum(1.0, shares + e[None, :]), axis=1)) + 1e-9 * float(e.sum())

    def best_split(rows: np.ndarray) -> tuple[int, int, np.ndarray] | None:
        cells = max(2, round(rows.size / rows_per_cell))
        at = min(max(1, round(rows.size * (cells // 2) / cells)), rows.size - 1)
        best: tuple[float, int, int, np.ndarray] | None = None
        for j in range(k):
            col = matrix[j, rows]
            t = np.partition(col, at)[at]
            left = col < t
            if not left.any():  # ties at the median: the cut goes above them
                above = col[col > t]
                if above.size == 0:
                    continue
                t = above.min()
                left = col < t
            cost = shape_cost(rows[left]) + shape_cost(rows[~left])
            if best is None or cost < best[0]:
                best = (cost, j, int(t), left)
        return None if best is None else best[1:]

    leaf_rows = tree.route(list(matrix))
    by_leaf = np.argsort(leaf_rows, kind="stable")
    starts = np.searchsorted(leaf_rows[by_leaf], np.arange(tree.num_leaves + 1))
    spec: list[tuple[int, int]] = []
    # pre-order over the tree, then over each leaf's cells (a stack: trees can be deep)
    stack: list[tuple[int, np.ndarray | None]] = [(0, None)]
    while stack:
        node, rows = stack.pop()
        if rows is None:
            if tree.column[node] >= 0:
                spec.append((tree.column[node], int(tree.threshold[node])))
                stack.append((tree.right[node], None))
                stack.append((tree.left[node], None))
                continue
            leaf = tree.leaf[node]
            rows = by_leaf[starts[leaf]:starts[leaf + 1]]
        split = best_split(rows) if rows.size >= CELL_SPLIT_AT * rows_per_cell else None
        if split is None:
            spec.append((-1, 0))
            continue
        j, t, left = split
        spec.append((j, t))
        stack.append((-1, rows[~left]))
        stack.append((-1, rows[left]))
    return _from_preorder(tree.columns, tree.code_spaces, spec)


def code_spaces_of(schema: pa.Schema, columns: Sequence[str]) -> tuple[str, ...]:
    return tuple(encoding_family(schema.field(c).type) for c in columns)
