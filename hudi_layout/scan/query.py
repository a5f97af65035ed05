"""What a read returns: the query type and the instants it sees (Hudi's read options, parsed once).

Semantics (docs/read-semantics.md):

* **snapshot** (default): the latest committed file slices. ``as_of`` (``as.of.instant``) travels back in time:
  only instants *requested* at or before it count, as hudi-rs decides (and Hudi 0.x); ``completed_by`` pins a
  snapshot to the instants *completed* by then (the data source takes one when a DataFrame is loaded, so asking
  it again gives the same rows even after new commits).
* **read_optimized**: the same base files; on Merge-on-Read tables the log files are left out (Hudi's meaning).
* **incremental**: the rows written by the commits *completed* in ``(begin, end]`` (Hudi 1.x and hudi-rs compare
  the bounds with completion times; tables of version 6 record none and use requested times). The rows come
  from the file slices of the table as of ``end`` whose base file one of those commits wrote, and only the rows
  whose ``_hoodie_commit_time`` is one of those commits are returned. A clustering keeps commit times, so it
  adds no rows; a commit overwritten later in the range loses its rows, as in the table itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hudi_layout import options as cfg
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.format.instant import Instant
from hudi_layout.options import EARLIEST, QueryType
from hudi_layout.table.fs_view import FileSlice
from hudi_layout.table.timeline import Timeline, completed_at

__all__ = ["EARLIEST", "IncrementalSelection", "QueryType", "ReadQuery", "select_incremental", "stream_frontier"]


@dataclass(frozen=True)
class ReadQuery:
    """The query type and instant bounds of one read (see the module docstring)."""

    query_type: QueryType = QueryType.SNAPSHOT
    as_of: str | None = None
    completed_by: str | None = None
    begin: str | None = None
    end: str | None = None
    #: use the column_stats index (``hoodie.enable.data.skipping`` and ``hoodie.metadata.enable``)
    use_column_stats: bool = True
    #: an incremental read whose range a clean reached reads the latest snapshot's rows of the commits in
    #: range (``hoodie.datasource.read.incr.fallback.fulltablescan.enable``; Copy-on-Write tables)
    fallback_full_scan: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None, *, completed_by: str | None = None) -> ReadQuery:
        """Parse Hudi's read options; refuses keys a read does not honour and combinations that mean nothing."""
        opts = cfg.resolve_read_options(options)
        query_type = cfg.QUERY_TYPE.get(opts)
        as_of, begin, end = cfg.AS_OF_INSTANT.get(opts), cfg.BEGIN_INSTANT.get(opts), cfg.END_INSTANT.get(opts)
        if query_type is QueryType.INCREMENTAL:
            if begin is None:
                raise InvalidArgumentError(
                    f"an incremental read needs {cfg.BEGIN_INSTANT.key}",
                    hint="give the instant to start after (exclusive), or 'earliest'")
            if as_of is not None:
                raise InvalidArgumentError(f"{cfg.AS_OF_INSTANT.key} does not apply to an incremental read",
                                           hint=f"bound the range with {cfg.END_INSTANT.key}")
        elif begin is not None or end is not None:
            raise InvalidArgumentError(
                f"{cfg.BEGIN_INSTANT.key} / {cfg.END_INSTANT.key} only apply to incremental reads",
                hint=f"set {cfg.QUERY_TYPE.key}=incremental")
        elif cfg.INCREMENTAL_FALLBACK.get(opts):
            raise InvalidArgumentError(f"{cfg.INCREMENTAL_FALLBACK.key}=true only applies to incremental reads",
                                       hint=f"set {cfg.QUERY_TYPE.key}=incremental, or drop the option")
        return cls(query_type, as_of, completed_by, begin, end,
                   cfg.DATA_SKIPPING.get(opts) and cfg.METADATA_ENABLE.get(opts),
                   query_type is QueryType.INCREMENTAL and cfg.INCREMENTAL_FALLBACK.get(opts))

    @property
    def is_incremental(self) -> bool:
        return self.query_type is QueryType.INCREMENTAL

    @property
    def schema_as_of(self) -> str | None:
        """The instant whose schema the read returns: the time-travel instant (Hudi's Spark reads take the
        schema as of ``as.of.instant``), else ``None``, the latest (incremental reads too, as Hudi's do unless
        ``read.schema.use.end.instanttime``, which is refused)."""
        return self.as_of

    def describe(self) -> str:
        """One line for ``explain``."""
        if self.is_incremental:
            begin = "earliest" if self.begin == EARLIEST else self.begin
            return f"incremental: commits completed in ({begin}, {self.end or 'latest'}]"
        text = self.query_type.value
        if self.as_of is not None:
            text += f" as of {self.as_of} (instants requested by then)"
        if self.completed_by is not None:
            text += f", pinned to the instants completed by {self.completed_by}"
        return text


def stream_frontier(timeline: Timeline) -> str:
    """How far a streaming read may go now: the bound ``end`` of an incremental read ``(begin, end]`` such that
    every commit completing later falls after it (``EARLIEST`` on a table without commits).

    Versions 8 / 9 compare completion times, which writers take under the table lock as they complete: the
    latest completion time is such a bound. Version 6 tables record none, and an incremental read compares
    requested times: a commit requested before the latest completed one but still running would complete
    *behind* the bound and never be read (Hudi's "hollow" commit). The bound then stops before the earliest
    pending commit (Hudi's ``BLOCK`` resolution), so the stream waits for it."""
    commits = timeline.commits_and_replaces()
    completed = list(commits.completed())
    if any(i.completion_time is None for i in completed):  # layout 1: requested times
        pending = [i.requested_time for i in commits.pending()]
        if pending:
            completed = [i for i in completed if i.requested_time < min(pending)]
    return max((completed_at(i) for i in completed), default=EARLIEST)


@dataclass(frozen=True)
class IncrementalSelection:
    """What an incremental read takes: the commits in range (their requested times, which rows carry as
    ``_hoodie_commit_time``), the completion time that bounds the view, and whether rows of archived commits
    (older than every instant on the active timeline) belong to the range."""

    commit_times: frozenset[str]
    end: str
    archived_before: str | None = None
    #: Hudi's fallback when a clean reached the range: the rows come from the *latest* snapshot (merged as a
    #: snapshot read merges), kept by their commit time; a row rewritten after the range is not returned
    full_table_scan: bool = False

    def keeps(self, commit_time: str | None) -> bool:
        if commit_time is None:
            return False
        if commit_time in self.commit_times:
            return True
        return self.archived_before is not None and commit_time < self.archived_before

    def slices(self, view: Sequence[FileSlice], *, merge_logs: bool = False) -> list[FileSlice]:
        """The slices whose base file a selected commit wrote (a commit in range can only have put its rows
        into files written by itself or by a later commit in range, e.g. a clustering or a compaction);
        with ``merge_logs`` (Merge-on-Read) also every slice with log files, whose blocks of selected
        commits the merge applies (the others it leaves out; :class:`~hudi_layout.scan.merge.MergeSpec`)."""
        return [s for s in view if self.keeps(s.commit_time) or (merge_logs and s.has_log_files)]


def select_incremental(timeline: Timeline, query: ReadQuery, view_commit_times: Sequence[str] = ()
                       ) -> IncrementalSelection:
    """The commits an incremental read covers. ``view_commit_times``: the base instants of the end view, to
    detect commits archived off the timeline."""
    assert query.begin is not None
    writes = [i for i in timeline.completed().commits_and_replaces() if i.action in
              ("commit", "deltacommit", "replacecommit")]
    ends = [completed_at(i) for i in writes]
    end = query.end if query.end is not None else (max(ends) if ends else EARLIEST)
    if query.completed_by is not None:
        end = min(end, query.completed_by)
    chosen = frozenset(i.requested_time for i in writes if query.begin < completed_at(i) <= end)
    first = min((i.requested_time for i in writes), default=None)
    active = {i.requested_time for i in timeline.files}
    archived = first is not None and any(t not in active and t < first for t in view_commit_times)
    archived_before = None
    if archived:
        if query.begin != EARLIEST and query.begin < _first_completion(writes):
            raise InvalidArgumentError(
                f"the incremental range starts at {query.begin}, before the active timeline (commits before "
                f"{first} are archived and their completion times unknown)",
                hint="start at or after the first active instant, or read from 'earliest'")
        if query.begin == EARLIEST:
            archived_before = first
    return IncrementalSelection(chosen, end, archived_before)


def _first_completion(writes: Sequence[Instant]) -> str:
    return min(completed_at(i) for i in writes)
