"""Pure clean planning: Hudi's ECTR and policies, plus the pending-clustering guard, the grace period, orphans."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from hudi_layout.cleaning.config import CleanConfig
from hudi_layout.cleaning.plan import (
    CompletedInstant,
    DataFile,
    LogFile,
    TableState,
    earliest_commit_to_retain,
    plan_clean,
)
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.options import CleaningPolicy

NOW = datetime(2026, 1, 1, 12, 0, 0)


def t(i: int) -> str:
    """Instant ``i`` (requested at NOW - 100 h + i minutes)."""
    return (NOW - timedelta(hours=100) + timedelta(minutes=i)).strftime("%Y%m%d%H%M%S") + "000"


def done(*ids: int, action: str = "commit", replace: frozenset[int] = frozenset()) -> tuple[CompletedInstant, ...]:
    return tuple(CompletedInstant(t(i), "replacecommit" if i in replace else action,
                                  datetime.strptime(t(i)[:14], "%Y%m%d%H%M%S") + timedelta(seconds=5))
                 for i in ids)


def f(part: str, fid: str, i: int, committed: bool = True) -> DataFile:
    return DataFile(part, f"{fid}_0-1-0_{t(i)}.parquet", fid, t(i), committed, 100)


def state(completed, files, *, replaced=None, pending=(), protected=(), extra_times=(), now=NOW) -> TableState:
    times = {c.requested_time for c in completed} | set(pending) | set(extra_times)
    return TableState(tuple(completed), tuple(pending), frozenset(times), tuple(files), dict(replaced or {}),
                      frozenset(protected), now)


def cfg(**kw) -> CleanConfig:
    kw.setdefault("grace_seconds", 0)
    return CleanConfig(**kw)


def names(planned) -> set[str]:
    return {n for v in planned.to_delete.values() for n in v}


def test_ectr_is_the_nth_newest_completed_commit_capped_by_pending() -> None:
    completed = done(1, 2, 3, 4, 5)
    st = state(completed, [])
    assert earliest_commit_to_retain(st, cfg(commits_retained=2)).requested_time == t(4)
    assert earliest_commit_to_retain(st, cfg(commits_retained=5)) is None  # not more than N completed
    assert earliest_commit_to_retain(st, cfg(commits_retained=4)).requested_time == t(2)
    # a pending commit (or clustering plan) requested at 3 caps the ECTR below it
    capped = state(completed, [], pending=(t(2) + "5",))
    assert earliest_commit_to_retain(capped, cfg(commits_retained=2)).requested_time == t(2)
    early = state(completed, [], pending=(t(0),))
    assert earliest_commit_to_retain(early, cfg(commits_retained=2)) is None
    assert earliest_commit_to_retain(st, cfg(policy=CleaningPolicy.KEEP_LATEST_FILE_VERSIONS)) is None


def test_ectr_by_hours() -> None:
    st = state(done(1, 2, 3), [], now=datetime.strptime(t(2)[:14], "%Y%m%d%H%M%S") + timedelta(hours=1))
    c = cfg(policy=CleaningPolicy.KEEP_LATEST_BY_HOURS, hours_retained=1)
    assert earliest_commit_to_retain(st, c).requested_time == t(2)


def test_keep_latest_commits_keeps_latest_and_last_before_ectr() -> None:
    # one file group rewritten by commits 1..5; ECTR = 4 (N=2): slices 1 and 2 go, 3 (last before ECTR), 4, 5 stay
    files = [f("p", "g", i) for i in (1, 2, 3, 4, 5)]
    planned = plan_clean(state(done(1, 2, 3, 4, 5), files), cfg(commits_retained=2))
    assert names(planned) == {files[0].name, files[1].name}
    assert planned.earliest_commit_to_retain.requested_time == t(4)
    assert planned.last_completed_commit == t(5)
    # a group written once is never touched, however old
    assert not plan_clean(state(done(1, 2, 3, 4, 5), [f("p", "h", 1)]), cfg(commits_retained=1)).to_delete


def test_replaced_groups_go_only_when_replaced_before_the_ectr() -> None:
    # c1 writes a; r2 replaces a by b; r3 replaces b by c; r4 replaces c by d
    files = [f("p", "a", 1), f("p", "b", 2), f("p", "c", 3), f("p", "d", 4)]
    replaced = {("p", "a"): t(2), ("p", "b"): t(3), ("p", "c"): t(4)}
    completed = done(1, 2, 3, 4, replace=frozenset({2, 3, 4}))
    planned = plan_clean(state(completed, files, replaced=replaced), cfg(commits_retained=2))
    # ECTR = r3: a (replaced by r2 < r3) goes; b (replaced by r3 itself) stays for readers of r3's predecessor
    assert names(planned) == {files[0].name}
    planned = plan_clean(state(completed, files, replaced=replaced), cfg(commits_retained=1))
    assert names(planned) == {files[0].name, files[1].name}


def test_keep_latest_file_versions() -> None:
    files = [f("p", "g", i) for i in (1, 2, 3, 4)] + [f("p", "r", 1)]
    replaced = {("p", "r"): t(3)}
    planned = plan_clean(state(done(1, 2, 3, 4), files, replaced=replaced),
                         cfg(policy=CleaningPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=2))
    assert names(planned) == {files[0].name, files[1].name, files[4].name}
    assert planned.earliest_commit_to_retain is None


def test_pending_clustering_inputs_are_never_deleted() -> None:
    files = [f("p", "g", i) for i in (1, 2, 3)]
    planned = plan_clean(state(done(1, 2, 3), files, protected={("p", files[0].name)}),
                         cfg(policy=CleaningPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1))
    assert names(planned) == {files[1].name}
    assert planned.protected == 1


def test_grace_period_keeps_files_that_left_the_snapshot_recently() -> None:
    files = [f("p", "g", i) for i in (1, 2, 3)]
    completed = done(1, 2, 3)
    superseded_at = completed[1].completed_at  # slice 1 left the latest snapshot when commit 2 completed
    c = cfg(policy=CleaningPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1, grace_seconds=60)
    early = plan_clean(state(completed, files, now=superseded_at + timedelta(seconds=59)), c)
    assert not early.to_delete and early.deferred == 2
    mid = plan_clean(state(completed, files, now=completed[2].completed_at + timedelta(seconds=30)), c)
    assert names(mid) == {files[0].name} and mid.deferred == 1
    late = plan_clean(state(completed, files, now=completed[2].completed_at + timedelta(seconds=60)), c)
    assert names(late) == {files[0].name, files[1].name} and late.deferred == 0


def test_replaced_group_grace_counts_from_the_replacecommit() -> None:
    files = [f("p", "a", 1), f("p", "b", 2)]
    completed = done(1, 2, 3, replace=frozenset({2}))
    c = cfg(commits_retained=1, grace_seconds=60)
    st = state(completed, files, replaced={("p", "a"): t(2)}, now=completed[1].completed_at + timedelta(seconds=30))
    assert not plan_clean(st, c).to_delete
    st = state(completed, files, replaced={("p", "a"): t(2)}, now=completed[1].completed_at + timedelta(seconds=61))
    assert names(plan_clean(st, c)) == {files[0].name}


def test_orphans_of_rolled_back_instants() -> None:
    completed = done(1, 3)
    live = f("p", "g", 1)
    orphan = f("p", "x", 2, committed=False)  # instant 2 is off the timeline (rolled back / aborted)
    pending = f("p", "y", 4, committed=False)  # instant 4 is pending: a write in progress
    future = f("p", "z", 9, committed=False)  # newer than anything on the timeline: began after the listing
    planned = plan_clean(state(completed, [live, orphan, pending, future], pending=(t(4),)), cfg())
    assert names(planned) == {orphan.name} and planned.orphans == 1


def test_nothing_to_clean_with_too_few_commits() -> None:
    files = [f("p", "g", i) for i in (1, 2)]
    planned = plan_clean(state(done(1, 2), files), cfg())  # default: retain 10 commits
    assert not planned.to_delete and planned.earliest_commit_to_retain is None


@pytest.mark.parametrize(("key", "value"), [
    ("hoodie.clean.async", "true"), ("hoodie.clean.trigger.strategy", "NUM_HOURS"),
    ("hoodie.cleaner.policy", "KEEP_SOMETHING"), ("hoodie.cleaner.commits.retained", "0"),
    ("hoodie.cleaner.delete.bootstrap.base.file", "true"), ("hudi_layout.clean.grace.period.seconds", "-1"),
])
def test_options_we_cannot_honour_are_refused(key: str, value: str) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        CleanConfig.from_options({key: value})
    assert key in str(e.value) or "expected one of" in str(e.value)


def test_options_parse() -> None:
    c = CleanConfig.from_options({"hoodie.cleaner.policy": "keep_latest_file_versions",
                                  "hoodie.cleaner.fileversions.retained": "1", "hoodie.clean.automatic": "false",
                                  "hoodie.clean.max.commits": "3", "hudi_layout.clean.grace.period.seconds": "0"})
    assert (c.policy, c.file_versions_retained, c.automatic, c.max_commits, c.grace_seconds) == (
        CleaningPolicy.KEEP_LATEST_FILE_VERSIONS, 1, False, 3, 0)
    assert CleanConfig.from_options({}) == CleanConfig()


# ------------------------------------------------------------------ Merge-on-Read: log files go with their slice


def log(part: str, fid: str, written: int, slice_at: int | None) -> LogFile:
    return LogFile(part, f".{fid}_{t(written)}.log.1_0-1-0", fid, "" if slice_at is None else t(slice_at), 10)


def test_mor_slices_are_cleaned_with_their_log_files() -> None:
    """Group g: slice 1 (base + logs of deltacommits 2, 3), slice 4 (base written by a deltacommit that merged
    them) + log 5, slice 6 (base) + log 7. Retaining 2 commits (ECTR 6) cleans slice 1 with its logs only."""
    files = [f("p", "g", 1), f("p", "g", 4), f("p", "g", 6)]
    logs = [log("p", "g", 2, 1), log("p", "g", 3, 1), log("p", "g", 5, 4), log("p", "g", 7, 6)]
    st = replace(state(done(1, 2, 3, 4, 5, 6, 7, action="deltacommit"), files), logs=tuple(logs))
    planned = plan_clean(st, cfg(commits_retained=2))
    assert names(planned) == {files[0].name, logs[0].name, logs[1].name}
    assert planned.bytes_to_delete == 100 + 2 * 10
    # keep the latest file version only: slices 1 and 4 go, each with its own logs
    planned = plan_clean(st, cfg(policy=CleaningPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1))
    assert names(planned) == {files[0].name, files[1].name, logs[0].name, logs[1].name, logs[2].name}


def test_mor_replaced_group_goes_whole_and_compacting_groups_stay() -> None:
    files = [f("p", "g", 1), f("p", "h", 1)]
    logs = [log("p", "g", 0, None), log("p", "g", 2, 1), log("p", "h", 2, 1)]
    base = state(done(1, 2, 3, 4, 5, replace=frozenset({3})), files, replaced={("p", "g"): t(3)})
    planned = plan_clean(replace(base, logs=tuple(logs)), cfg(commits_retained=1))
    assert names(planned) == {files[0].name, logs[0].name, logs[1].name}  # log-only prefix slice too
    # a pending compaction reads group g: nothing of it is cleaned; an unreadable plan keeps everything
    assert names(plan_clean(replace(base, logs=tuple(logs), compacting=frozenset({("p", "g")})),
                            cfg(commits_retained=1))) == set()
    assert names(plan_clean(replace(base, logs=tuple(logs), compacting=None), cfg(commits_retained=1))) == set()


def test_mor_slice_whose_log_a_pending_clustering_reads_is_kept() -> None:
    files = [f("p", "g", 1), f("p", "g", 4)]
    logs = [log("p", "g", 2, 1)]
    st = replace(state(done(1, 2, 3, 4, 5, 6), files, protected={("p", logs[0].name)}), logs=tuple(logs))
    planned = plan_clean(st, cfg(commits_retained=1))
    assert names(planned) == set() and planned.protected == 1


def test_savepointed_slices_are_kept_whole_by_any_of_their_files() -> None:
    """Hudi's ``CleanPlanner`` keeps a slice when its base file or any of its log files is savepointed (names
    only), under every policy; a replaced group's log-only slice too."""
    files = [f("p", "g", 1), f("p", "g", 4), f("p", "g", 6)]
    logs = [log("p", "g", 2, 1), log("p", "g", 3, 1), log("p", "g", 5, 4), log("p", "g", 7, 6)]
    st = replace(state(done(1, 2, 3, 4, 5, 6, 7, action="deltacommit"), files), logs=tuple(logs),
                 savepointed=frozenset({logs[1].name}), savepoint_times=(t(3),))
    planned = plan_clean(st, cfg(commits_retained=2))
    assert names(planned) == set() and planned.savepointed == 1 and planned.savepoint_times == (t(3),)
    planned = plan_clean(st, cfg(policy=CleaningPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1))
    assert names(planned) == {files[1].name, logs[2].name} and planned.savepointed == 1
    # a replaced group: its savepointed slice stays, and with it the log-only slice before it (Hudi would delete
    # that one; keeping a group's files together is the safe side)
    gfiles = [f("p", "g", 1)]
    glogs = [log("p", "g", 0, None), log("p", "g", 2, 1)]
    base = replace(state(done(1, 2, 3, 4, 5, replace=frozenset({3})), gfiles, replaced={("p", "g"): t(3)}),
                   logs=tuple(glogs))
    assert names(plan_clean(replace(base, savepointed=frozenset({gfiles[0].name})), cfg(commits_retained=1))) \
        == set()
    assert names(plan_clean(replace(base, savepointed=frozenset({glogs[0].name})), cfg(commits_retained=1))) \
        == {gfiles[0].name, glogs[1].name}
