"""A workload: the predicates a table is queried with, each with a weight.

Where it comes from:

* Python: ``Workload.of(["src_ip LIKE '157.%'", ("dst_port = 443", 3.0)])``;
* a file (``--workload FILE``): one SQL ``WHERE`` predicate per line, optionally ``weight<TAB>predicate``;
  blank lines and lines starting with ``#`` are skipped; a leading ``WHERE`` is accepted;
* the table's query log (``Workload.from_log(path)``, see :mod:`hudi_layout.table.workload_log`): each
  distinct predicate once, weighted by how often it was seen.

Predicates are parsed by the SQL front end of :mod:`hudi_layout.skipping` (:meth:`Workload.predicates`); a
predicate that does not parse is reported with its line and text. The workload feeds the ``qdtree`` layout
(:mod:`hudi_layout.clustering.qdtree`) and column weights for curves (:meth:`Workload.column_weights`).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.bind import bind
from hudi_layout.skipping.ir import Predicate
from hudi_layout.skipping.sql import from_sql
from hudi_layout.skipping.visitors import referenced_columns
from hudi_layout.table.workload_log import read_entries


@dataclass(frozen=True)
class WorkloadQuery:
    """One predicate (SQL ``WHERE`` text, without the keyword) and its weight (> 0)."""

    where: str
    weight: float = 1.0
    #: where it came from, for messages (``file.txt:3``, ``log``, ``#2``)
    origin: str = ""

    def __post_init__(self) -> None:
        text = _strip_where(self.where)
        if not text:
            raise InvalidArgumentError(f"empty workload predicate{_at(self.origin)}")
        object.__setattr__(self, "where", text)
        w = float(self.weight)
        if not math.isfinite(w) or w <= 0:
            raise InvalidArgumentError(f"workload weight must be a positive number, got {self.weight!r}"
                                       f"{_at(self.origin)}")
        object.__setattr__(self, "weight", w)


def _at(origin: str) -> str:
    return f" ({origin})" if origin else ""


def _strip_where(text: str) -> str:
    t = text.strip().rstrip(";").strip()
    if t[:6].lower() == "where " or t[:6].lower() == "where\t":
        t = t[6:].strip()
    return t


@dataclass(frozen=True)
class Workload:
    """An ordered list of :class:`WorkloadQuery`."""

    queries: tuple[WorkloadQuery, ...]

    def __len__(self) -> int:
        return len(self.queries)

    @property
    def total_weight(self) -> float:
        return sum(q.weight for q in self.queries)

    @classmethod
    def of(cls, items: Workload | Iterable[str | tuple[str, float] | WorkloadQuery]) -> Workload:
        """From predicates: SQL strings, ``(sql, weight)`` pairs or :class:`WorkloadQuery` values."""
        if isinstance(items, Workload):
            return items
        if isinstance(items, str):
            raise InvalidArgumentError("a workload is a list of predicates (or Workload.from_file(path))")
        out = []
        for i, item in enumerate(items, start=1):
            if isinstance(item, WorkloadQuery):
                out.append(item)
            elif isinstance(item, str):
                out.append(WorkloadQuery(item, 1.0, f"#{i}"))
            elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
                try:
                    weight = float(item[1])
                except (TypeError, ValueError):
                    raise InvalidArgumentError(f"workload item #{i}: weight {item[1]!r} is not a number") from None
                out.append(WorkloadQuery(item[0], weight, f"#{i}"))
            else:
                raise InvalidArgumentError(f"workload item #{i} must be SQL text or (sql, weight), got {item!r}")
        return cls(tuple(out))

    @classmethod
    def from_text(cls, text: str, origin: str = "workload") -> Workload:
        """Parse the file format (see the module docstring)."""
        out = []
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            where = line
            weight = 1.0
            head, tab, rest = line.partition("\t")
            if tab:
                try:  # a number before the first tab is the weight; otherwise the tab is part of the SQL
                    weight = float(head.strip())
                    where = rest
                except ValueError:
                    pass
            out.append(WorkloadQuery(where, weight, f"{origin}:{lineno}"))
        if not out:
            raise InvalidArgumentError(f"{origin} holds no predicate", hint="one SQL WHERE predicate per line")
        return cls(tuple(out))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Workload:
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise InvalidArgumentError(f"cannot read workload file {p}: {e.strerror or e}",
                                       hint="one SQL WHERE predicate per line, optionally weight<TAB>predicate") from e
        return cls.from_text(text, origin=p.name)

    @classmethod
    def from_log(cls, base_path: str | os.PathLike[str], *, limit: int | None = None) -> Workload:
        """The table's query log: each distinct predicate once, weighted by its count (the last ``limit``
        entries when given)."""
        entries = [e.where for e in read_entries(base_path) if e.source != "report"]  # older reports' replays
        if limit is not None:
            entries = entries[-limit:]
        if not entries:
            raise InvalidArgumentError(
                f"the query log of {base_path} is empty",
                hint="set hudi_layout.workload.log.enable=true (conf/hudi-layout-defaults.conf) and run queries, "
                     "or give a workload file")
        counts = Counter(entries)
        return cls(tuple(WorkloadQuery(w, float(n), "log") for w, n in counts.most_common()))

    def to_text(self) -> str:
        """The file format (``weight<TAB>predicate`` lines)."""
        return "".join(f"{q.weight:g}\t{q.where}\n" for q in self.queries)

    def predicates(self, schema: pa.Schema | None = None) -> list[tuple[Predicate, float]]:
        """Each query parsed (and bound to ``schema`` when given), with its weight."""
        out = []
        for q in self.queries:
            try:
                pred = from_sql(q.where, schema)
                if schema is not None:
                    pred = bind(pred, schema)
            except InvalidArgumentError as e:
                raise InvalidArgumentError(f"workload predicate{_at(q.origin)} {q.where!r}: {e}",
                                           hint=getattr(e, "hint", None)) from None
            out.append((pred, q.weight))
        return out

    def column_weights(self, columns: Sequence[str], schema: pa.Schema | None = None) -> dict[str, float]:
        """Per column, 1 + the total weight of the queries that filter on it, relative to the workload: a column
        no query filters weighs 1, one every query filters weighs ``1 + queries``."""
        wanted = {c.lower(): c for c in columns}
        per: dict[str, float] = dict.fromkeys(columns, 0.0)
        total = self.total_weight or 1.0
        for pred, w in self.predicates(schema):
            for name in referenced_columns(pred):
                col = wanted.get(name.lower())
                if col is not None:
                    per[col] += w
        n = max(1, len(self.queries))
        return {c: 1.0 + n * per[c] / total for c in columns}


def as_workload(value: Any) -> Workload:
    """A :class:`Workload` from what the API accepts: a Workload, a list of predicates, or a file path."""
    if isinstance(value, Workload):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Workload.from_file(value)
    return Workload.of(value)
