"""Inline clustering runs plans left pending by dead executors first; one that cannot run never fails the
write that has already completed (the plan stays pending, as it was)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from hudi_layout.errors import CorruptFileError
from hudi_layout.services import clustering_service


def test_a_pending_plan_that_cannot_run_is_left_pending_with_a_warning(monkeypatch, caplog) -> None:
    calls: list[str] = []

    def failing_resume(_spark: Any, path: str, _opts: Any) -> list[Any]:
        calls.append(path)
        raise CorruptFileError("plan 20260101000000000 stays pending: an input file is damaged")

    monkeypatch.setattr(clustering_service, "execute_pending", failing_resume)
    monkeypatch.setattr(clustering_service, "commits_since_last_clustering", lambda _path: 0)
    with caplog.at_level(logging.WARNING, logger=clustering_service.__name__):
        got = clustering_service.maybe_cluster_inline(None, "/t", {"hoodie.clustering.inline.max.commits": "4"})  # type: ignore[arg-type]
    assert got is None and calls == ["/t"]
    assert "left a pending plan as it is" in caplog.text and "damaged" in caplog.text


def test_a_resumed_plan_is_reported_when_no_new_clustering_is_due(monkeypatch) -> None:
    monkeypatch.setattr(clustering_service, "execute_pending", lambda *_a: ["resumed metrics"])
    monkeypatch.setattr(clustering_service, "commits_since_last_clustering", lambda _path: 0)
    got: Any = clustering_service.maybe_cluster_inline(None, "/t", {})  # type: ignore[arg-type]
    assert got == "resumed metrics"


@pytest.mark.parametrize("scheduled", [None, "new metrics"])
def test_a_due_clustering_runs_after_the_resumed_ones(monkeypatch, scheduled: Any) -> None:
    order: list[str] = []

    def resume(*_args: Any) -> list[Any]:
        order.append("resume")
        return ["resumed"]

    def schedule(*_args: Any) -> Any:
        order.append("schedule")
        return scheduled

    monkeypatch.setattr(clustering_service, "execute_pending", resume)
    monkeypatch.setattr(clustering_service, "commits_since_last_clustering", lambda _path: 9)
    monkeypatch.setattr(clustering_service, "schedule_and_execute", schedule)
    got: Any = clustering_service.maybe_cluster_inline(None, "/t", {})  # type: ignore[arg-type]
    assert order == ["resume", "schedule"] and got == (scheduled or "resumed")


def test_cluster_refuses_settings_its_strategy_ignores() -> None:
    """``--strategy linear --method sample``, column weights with linear, a workload with a curve, qdtree tuning
    with another strategy, and the planner's own tree given by the caller were accepted without effect
    (session 29's probe)."""
    import pytest

    from hudi_layout.errors import InvalidArgumentError
    from hudi_layout.options import CurveBuildMethod, LayoutStrategy
    from hudi_layout.services.clustering import refuse_layout_settings_the_strategy_ignores as check

    linear, zorder, qdtree = LayoutStrategy.LINEAR, LayoutStrategy.Z_ORDER, LayoutStrategy.QDTREE
    direct, sample = CurveBuildMethod.DIRECT, CurveBuildMethod.SAMPLE
    for layout, method, caller, workload in (
            (linear, sample, {}, None),
            (linear, direct, {"hudi_layout.layout.curve.column.weights": "a:2"}, None),
            (zorder, direct, {}, ["a = 1"]),
            (zorder, direct, {"hudi_layout.layout.workload": "log"}, None),
            (zorder, direct, {"hudi_layout.layout.qdtree.lookahead": "3"}, None),
            (qdtree, direct, {"hudi_layout.layout.qdtree": "{}"}, ["a = 1"])):
        with pytest.raises(InvalidArgumentError):
            check(layout, method, caller, workload)
    check(zorder, sample, {"hudi_layout.layout.curve.column.weights": "workload"}, ["a = 1"])
    check(qdtree, direct, {"hudi_layout.layout.qdtree.lookahead": "3"}, ["a = 1"])
    check(linear, direct, {}, None)
