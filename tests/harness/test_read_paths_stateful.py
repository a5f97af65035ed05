"""Stateful property test: random sequences of writes, upserts, deletes, overwrites, clusterings, cleans,
killed writers and schema evolution (an added column), with
random predicates asked through every read entry point after each step (see :mod:`.read_paths`).

One long-lived SparkSession (the ``spark`` fixture) serves every example. This is the fast CI profile; the
long run is ``python -m bench.soak_read_paths --steps N``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from .read_paths import METHODS, STRATEGIES, Checker, ReadPathsHarness

pytestmark = pytest.mark.integration

FAST = settings(max_examples=3, stateful_step_count=10, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck), report_multiple_bugs=False)


def machine(spark, root, checker: Checker) -> type[RuleBasedStateMachine]:
    class ReadPaths(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.h: ReadPathsHarness | None = None

        @initialize(seed=st.integers(0, 2**32 - 1), partitioned=st.booleans())
        def create(self, seed: int, partitioned: bool) -> None:
            self.h = ReadPathsHarness(spark, root, seed, checker, partitioned=partitioned, cli_every=2)
            self.h.write("append", n=self.h.rng.choice([40, 150]))

        @rule()
        def append(self) -> None:
            self.h.write("append")

        @rule()
        def upsert(self) -> None:
            self.h.upsert()

        @rule()
        def delete(self) -> None:
            self.h.delete()

        @rule()
        def clean(self) -> None:
            self.h.clean()

        @rule()
        def savepoint(self) -> None:
            self.h.savepoint()

        @rule()
        def overwrite(self) -> None:
            self.h.write("overwrite")

        @rule()
        def lagging_writer(self) -> None:
            self.h.write_lagging()

        @rule()
        def overwrite_partitions(self) -> None:
            self.h.overwrite_partitions()

        @rule()
        def delete_partition(self) -> None:
            self.h.delete_partition()

        @rule(strategy=st.sampled_from(STRATEGIES), method=st.sampled_from(METHODS))
        def cluster(self, strategy: str, method: str) -> None:
            self.h.cluster(strategy, method)

        @rule()
        def kill_a_writer(self) -> None:
            self.h.crash_writer()

        @rule()
        def compact(self) -> None:
            self.h.compact()

        @rule()
        def rebuild_index(self) -> None:
            self.h.rebuild_index()

        @rule()
        def evolve(self) -> None:
            self.h.evolve()

        @rule()
        def query_commit_time(self) -> None:
            self.h.query_commit_time()

        @rule()
        def session_time_zone(self) -> None:
            self.h.set_zone()

        @rule()
        def query(self) -> None:
            self.h.query()

        @rule()
        def query_again(self) -> None:
            self.h.query()

        @precondition(lambda self: self.h is not None and len(self.h.model.snapshots) > 1)
        @rule()
        def time_travel(self) -> None:
            self.h.time_travel()

        @precondition(lambda self: self.h is not None and len(self.h.model.snapshots) > 1)
        @rule()
        def incremental(self) -> None:
            self.h.incremental()

        def teardown(self) -> None:
            if self.h is not None:
                self.h.close()

    return ReadPaths


def test_every_read_path_agrees_with_the_model(spark, tmp_path):
    checker = Checker()
    run_state_machine_as_test(machine(spark, tmp_path, checker), settings=FAST)
    assert checker.checks > 0 and not checker.mismatches
