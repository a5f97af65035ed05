"""Entry points: path first, ``spark=`` keyword; the previous release's spellings still work with a warning.

Spark is not started: the services the API delegates to are replaced, and a stand-in class named
``SparkSession`` plays the session (the API recognises sessions by class name, without importing pyspark).
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from hudi_layout import api


class SparkSession:
    """Stand-in for ``pyspark.sql.SparkSession``."""


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    seen: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    class Plan(str):  # what read() checks ``columns`` against: no schema of its own, no time travel
        schema = None
        query = types.SimpleNamespace(as_of=None)

    def recorder(name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> str:
            seen.append((name, args, kwargs))
            return Plan(name)
        return record

    monkeypatch.setattr(api, "plan_scan", recorder("plan_scan"))
    monkeypatch.setattr(api, "HudiTable", lambda path: ("table", path))
    monkeypatch.setattr(api, "dataframe_for_plan", recorder("dataframe_for_plan"))

    class Schema:  # the columns read() checks ``columns`` against
        def fieldNames(self) -> list[str]:
            return ["k"]

    monkeypatch.setattr(api, "spark_schema", lambda table, include_meta: Schema())
    monkeypatch.setattr(api._clustering, "cluster", recorder("cluster"))

    def run_clustering(*args: Any, **kwargs: Any) -> Any:
        seen.append(("run_clustering", args, kwargs))
        return api._clustering.ClusteringRun()

    monkeypatch.setattr(api._clustering, "run_clustering", run_clustering)
    monkeypatch.setattr(api._clustering, "execute_pending", recorder("execute_pending"))
    return seen


def test_read_new_spelling(calls: list[Any]) -> None:
    s = SparkSession()
    assert api.read("/t", "k > 1", spark=s, columns=["k"]) == "dataframe_for_plan"
    assert api.read("/t", where="k > 1", spark=s) == "dataframe_for_plan"
    (_, args, kwargs), (_, dargs, dkwargs) = calls[0], calls[1]
    assert args == ("/t", "k > 1") and kwargs["spark"] is s and kwargs["use_column_stats"] is True
    assert dargs[0] is s and dargs[3] == "k > 1" and dkwargs == {"columns": ["k"], "include_meta": False}
    assert calls[2][1] == ("/t", "k > 1")


def test_read_old_spelling_warns(calls: list[Any]) -> None:
    s = SparkSession()
    with pytest.warns(DeprecationWarning, match=r"read\(path, where, spark=spark\)"):
        api.read(s, "/t", "k > 1", skipping=False)  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning):
        api.read(s, "/t", where="k > 1")  # type: ignore[arg-type]
    for name, args, kwargs in calls[::2]:
        assert name == "plan_scan" and args == ("/t", "k > 1") and kwargs["spark"] is s
    assert calls[0][2]["use_column_stats"] is False
    with pytest.raises(TypeError):
        api.read("/t", "a", "b")


def test_cluster_old_and_new_spelling(calls: list[Any]) -> None:
    s = SparkSession()
    api.cluster("/t", ["x", "y"], spark=s, strategy="hilbert", method="sample", options={"k": "v"},
                include_all_files=False)
    with pytest.warns(DeprecationWarning, match=r"cluster\(path, columns, spark=spark"):
        api.cluster(s, "/t", ["x", "y"], "hilbert", "sample", {"k": "v"}, include_all_files=False)  # type: ignore[arg-type]
    new, old = calls
    assert new[0] == old[0] == "run_clustering" and new[1][1:] == old[1][1:] and new[2] == old[2]
    assert new[1][0]() is s and old[1][0]() is s  # Spark is started (here: returned) only when a plan runs
    assert new[1][1:] == ("/t", ["x", "y"], "hilbert", "sample", {"k": "v"})
    assert new[2] == {"include_all_files": False, "resume": True, "abandon_pending": False,
                      "workload": None}
    with pytest.raises(TypeError):
        api.cluster("/t", ["x"], "hilbert")


def test_execute_pending_old_and_new_spelling(calls: list[Any]) -> None:
    s = SparkSession()
    api.execute_pending("/t", spark=s, options={"k": "v"}, only="123")
    with pytest.warns(DeprecationWarning, match=r"execute_pending\(path, spark=spark\)"):
        api.execute_pending(s, "/t", {"k": "v"}, only="123")  # type: ignore[arg-type]
    new, old = calls
    assert new == old == ("execute_pending", (s, "/t", {"k": "v"}), {"only": "123"})


def test_clustering_service_old_and_new_spelling() -> None:
    s = SparkSession()
    new = api.ClusteringService("/t", {"k": "v"}, spark=s, poll_seconds=1)
    with pytest.warns(DeprecationWarning, match=r"ClusteringService\(path, options, spark=spark\)"):
        old = api.ClusteringService(s, "/t", {"k": "v"}, poll_seconds=1)  # type: ignore[arg-type]
    for svc in (new, old):
        assert svc.spark is s and svc.path.endswith("/t") and svc.opts["k"] == "v" and svc.poll_seconds == 1
