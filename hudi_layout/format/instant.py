"""Timeline instants: file-name parsing/formatting for layouts 1 (v6) and 2 (v8/v9), instant times.

File names (docs/hudi-format.md §2.2)::

    T.<action>.requested     T.<action>.inflight     T.inflight (= commit inflight)
    T.<action>               (completed, layout 1; also legacy names accepted by layout 2)
    T_C.<action>             (completed, layout 2)

Actions whose completed form is a different action (``compaction`` → ``commit``, ``logcompaction`` →
``deltacommit``, ``clustering`` → ``replacecommit``) only exist as requested/inflight file names.
"""

from __future__ import annotations

import enum
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from hudi_layout.errors import InvalidArgumentError

COMMIT = "commit"
DELTA_COMMIT = "deltacommit"
REPLACE_COMMIT = "replacecommit"
CLUSTERING = "clustering"
COMPACTION = "compaction"
LOG_COMPACTION = "logcompaction"
CLEAN = "clean"
ROLLBACK = "rollback"
RESTORE = "restore"
SAVEPOINT = "savepoint"
INDEXING = "indexing"
SCHEMA_COMMIT = "schemacommit"

ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING, COMPACTION, LOG_COMPACTION, CLEAN,
                     ROLLBACK, RESTORE, SAVEPOINT, INDEXING, SCHEMA_COMMIT})
#: pending-only actions and the action their completed file carries
COMPLETED_ACTION = {COMPACTION: COMMIT, LOG_COMPACTION: DELTA_COMMIT, CLUSTERING: REPLACE_COMMIT}
#: actions that write data files (what a snapshot reader considers)
WRITE_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT})

_TIME_RE = re.compile(r"^\d{14}(\d{3})?(\d{3})?$")  # 14 legacy, 17 normal, 20 = v6 MDT suffixed
_NAME_RE = re.compile(r"^(\d{14,20})(?:_(\d{14,20}))?\.([a-z]+)(?:\.(requested|inflight))?$")


class State(enum.Enum):
    REQUESTED = "requested"
    INFLIGHT = "inflight"
    COMPLETED = "completed"


@dataclass(frozen=True, order=False)
class Instant:
    """One timeline file. ``action`` is the action as named in the file (``clustering``, ``commit``...)."""

    requested_time: str
    action: str
    state: State
    completion_time: str | None = None
    file_name: str = ""

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_pending(self) -> bool:
        return self.state is not State.COMPLETED

    @property
    def is_requested(self) -> bool:
        return self.state is State.REQUESTED

    @property
    def is_inflight(self) -> bool:
        return self.state is State.INFLIGHT

    @property
    def sort_key(self) -> tuple[str, int]:
        """Order: requested time, then REQUESTED < INFLIGHT < COMPLETED (like Hudi's comparator)."""
        return (self.requested_time, _STATE_ORDER[self.state])

    def with_state(self, state: State, completion_time: str | None = None,
                   layout_version: int = 2) -> Instant:
        action = self.action
        if state is State.COMPLETED:
            action = COMPLETED_ACTION.get(action, action)
        ct = completion_time if state is State.COMPLETED else None
        return Instant(self.requested_time, action, state, ct,
                       instant_file_name(self.requested_time, action, state, ct, layout_version))

    def __str__(self) -> str:
        ct = f"_{self.completion_time}" if self.completion_time else ""
        return f"[{self.requested_time}{ct}__{self.action}__{self.state.name}]"


_STATE_ORDER = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


def is_valid_instant_time(value: str) -> bool:
    return bool(_TIME_RE.match(value))


def parse_instant_file_name(name: str) -> Instant | None:
    """Parse a timeline file name; ``None`` for non-instant names (folders, ``hoodie.properties``...)."""
    m = _NAME_RE.match(name)
    if not m:
        return None
    requested, completion, action, state_s = m.groups()
    if state_s is None and action == "inflight":
        if completion:
            return None
        return Instant(requested, COMMIT, State.INFLIGHT, None, name)
    if action not in ACTIONS:
        return None
    if state_s is None:
        if action in COMPLETED_ACTION:
            return None
        return Instant(requested, action, State.COMPLETED, completion, name)
    if completion:  # "_C" only legal on completed names
        return None
    return Instant(requested, action, State(state_s), None, name)


def instant_file_name(requested_time: str, action: str, state: State, completion_time: str | None = None,
                      layout_version: int = 2) -> str:
    """Inverse of :func:`parse_instant_file_name`.

    Layout 1 never writes a completion time; layout 2 writes ``T_C.action`` when ``completion_time`` is
    given (and the legacy ``T.action`` when it is not). ``commit`` inflight is ``T.inflight`` in both.
    """
    if not is_valid_instant_time(requested_time):
        raise InvalidArgumentError(f"bad instant time {requested_time!r} (want 17 digits yyyyMMddHHmmssSSS)")
    if action not in ACTIONS:
        raise InvalidArgumentError(f"unknown timeline action {action!r}")
    if state is State.COMPLETED:
        if action in COMPLETED_ACTION:
            raise InvalidArgumentError(
                f"action {action!r} has no completed file; it completes as {COMPLETED_ACTION[action]!r}")
        if layout_version >= 2 and completion_time:
            if not is_valid_instant_time(completion_time):
                raise InvalidArgumentError(f"bad completion time {completion_time!r}")
            return f"{requested_time}_{completion_time}.{action}"
        return f"{requested_time}.{action}"
    if state is State.INFLIGHT and action == COMMIT:
        return f"{requested_time}.inflight"
    return f"{requested_time}.{action}.{state.value}"


# ---------------------------------------------------------------------------------------- instant times

_FMT = "%Y%m%d%H%M%S"
_lock = threading.Lock()
_last_generated = ""


def format_instant_time(dt: datetime) -> str:
    return dt.strftime(_FMT) + f"{dt.microsecond // 1000:03d}"


def parse_instant_time(value: str) -> datetime:
    """Naive datetime of an instant time (14- or 17-digit; MDT suffixed times are truncated to 17)."""
    if not _TIME_RE.match(value[:17]) and not _TIME_RE.match(value):
        raise InvalidArgumentError(f"bad instant time {value!r}")
    base = datetime.strptime(value[:14], _FMT)
    ms = int(value[14:17]) if len(value) >= 17 else 0
    return base.replace(microsecond=ms * 1000)


def _increment(value: str) -> str:
    """Smallest valid instant time strictly greater than ``value`` (17-digit, +1 ms)."""
    from datetime import timedelta

    padded = value[:17].ljust(17, "0")
    return format_instant_time(parse_instant_time(padded) + timedelta(milliseconds=1))


def new_instant_time(latest: str | None = None, *, use_utc: bool = False) -> str:
    """A new 17-digit ``yyyyMMddHHmmssSSS`` instant time, strictly greater than ``latest``.

    Hudi's default ``hoodie.table.timeline.timezone`` is LOCAL, so we use local wall-clock time unless
    ``use_utc`` (pass ``table.properties.timeline_timezone == "UTC"``). Wall clocks can go backwards (DST,
    NTP) and two calls can fall in the same millisecond, so the result is bumped to ``max(now, latest + 1ms,
    last generated in this process + 1ms)``: instants stay strictly increasing as strings, which is what
    Hudi relies on. Callers should pass the greatest instant (requested or completion time) on the timeline.
    """
    global _last_generated
    with _lock:
        now = datetime.now(timezone.utc) if use_utc else datetime.now()
        candidate = format_instant_time(now)
        for floor in (latest, _last_generated):
            if floor and candidate <= floor[:17].ljust(17, "0"):
                candidate = _increment(floor)
        _last_generated = candidate
        return candidate


def sleep_until_after(instant_time: str) -> None:
    """Best effort: wait until the local wall clock passes ``instant_time`` (if it is < 5 s ahead)."""
    target = parse_instant_time(instant_time[:17])
    delay = (target - datetime.now()).total_seconds()
    if 0 < delay < 5:
        time.sleep(delay + 0.001)
