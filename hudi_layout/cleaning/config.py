"""The options a clean runs with, parsed and checked once (keys: :mod:`hudi_layout.options`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hudi_layout import options as cfg
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.options import CleaningPolicy


@dataclass(frozen=True)
class CleanConfig:
    """How much history a clean keeps, and when an automatic clean runs (docs/cleaning.md)."""

    policy: CleaningPolicy = CleaningPolicy.KEEP_LATEST_COMMITS
    commits_retained: int = 10
    file_versions_retained: int = 3
    hours_retained: int = 24
    #: a file that left the latest snapshot less than this many seconds ago is kept (running readers)
    grace_seconds: int = 600
    automatic: bool = True
    #: completed commits since the last clean before an automatic clean is attempted
    max_commits: int = 1

    @classmethod
    def from_options(cls, opts: Mapping[str, str]) -> CleanConfig:
        """Parse the cleaning options; options we cannot honour are refused, never ignored."""
        if cfg.CLEAN_ASYNC.get(opts):
            raise InvalidArgumentError(
                f"{cfg.CLEAN_ASYNC.key}=true is not supported: hudi_layout cleans inline after each commit",
                hint=f"drop {cfg.CLEAN_ASYNC.key}, or set {cfg.CLEAN_AUTOMATIC.key}=false and run "
                     "'hudi-layout clean PATH' from a scheduler")
        trigger = cfg.CLEAN_TRIGGER_STRATEGY.get(opts)
        if trigger != "NUM_COMMITS":
            raise InvalidArgumentError(f"{cfg.CLEAN_TRIGGER_STRATEGY.key}={trigger} is not supported "
                                       "(only NUM_COMMITS)")
        if cfg.CLEANER_DELETE_BOOTSTRAP_BASE_FILE.get(opts):
            raise InvalidArgumentError(f"{cfg.CLEANER_DELETE_BOOTSTRAP_BASE_FILE.key}=true is not supported: "
                                       "hudi_layout does not handle bootstrapped tables")
        try:
            policy = cfg.CLEANER_POLICY.get(opts)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(str(e), hint="use KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS or "
                                                    "KEEP_LATEST_BY_HOURS") from None
        out = cls(policy=policy, commits_retained=cfg.CLEANER_COMMITS_RETAINED.get(opts),
                  file_versions_retained=cfg.CLEANER_FILE_VERSIONS_RETAINED.get(opts),
                  hours_retained=cfg.CLEANER_HOURS_RETAINED.get(opts),
                  grace_seconds=cfg.CLEAN_GRACE_SECONDS.get(opts), automatic=cfg.CLEAN_AUTOMATIC.get(opts),
                  max_commits=cfg.CLEAN_MAX_COMMITS.get(opts))
        for key, value, least in ((cfg.CLEANER_COMMITS_RETAINED.key, out.commits_retained, 1),
                                  (cfg.CLEANER_FILE_VERSIONS_RETAINED.key, out.file_versions_retained, 1),
                                  (cfg.CLEANER_HOURS_RETAINED.key, out.hours_retained, 0),
                                  (cfg.CLEAN_GRACE_SECONDS.key, out.grace_seconds, 0),
                                  (cfg.CLEAN_MAX_COMMITS.key, out.max_commits, 1)):
            if value < least:
                raise InvalidArgumentError(f"option {key}={value} is invalid: must be at least {least}")
        return out
