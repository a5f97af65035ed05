from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.format.instant import (
    ACTIONS,
    COMPLETED_ACTION,
    State,
    instant_file_name,
    new_instant_time,
    parse_instant_file_name,
)

T = "20260307162504409"
C = "20260307162508702"


@pytest.mark.parametrize(
    "name,action,state,completion",
    [
        (f"{T}.commit.requested", "commit", State.REQUESTED, None),
        (f"{T}.inflight", "commit", State.INFLIGHT, None),
        (f"{T}.commit", "commit", State.COMPLETED, None),
        (f"{T}_{C}.commit", "commit", State.COMPLETED, C),
        (f"{T}.deltacommit.inflight", "deltacommit", State.INFLIGHT, None),
        (f"{T}_{C}.replacecommit", "replacecommit", State.COMPLETED, C),
        (f"{T}.clustering.requested", "clustering", State.REQUESTED, None),
        (f"{T}.clustering.inflight", "clustering", State.INFLIGHT, None),
        (f"{T}.compaction.requested", "compaction", State.REQUESTED, None),
        (f"{T}.savepoint.inflight", "savepoint", State.INFLIGHT, None),
        (f"{T}_{C}.indexing", "indexing", State.COMPLETED, C),
        ("20240418173235.commit", "commit", State.COMPLETED, None),
        ("00000000000000010.deltacommit", "deltacommit", State.COMPLETED, None),
    ],
)
def test_parse(name: str, action: str, state: State, completion: str | None) -> None:
    inst = parse_instant_file_name(name)
    assert inst is not None
    assert (inst.action, inst.state, inst.completion_time, inst.file_name) == (action, state, completion, name)
    layout = 2 if completion else 1
    assert instant_file_name(inst.requested_time, action, state, completion, layout) == name


@pytest.mark.parametrize("name", ["hoodie.properties", "timeline", "archived", f"{T}.clustering",
                                  f"{T}_{C}.commit.requested", f"{T}.foo", f"{T}_{C}.inflight", ".temp"])
def test_not_instants(name: str) -> None:
    assert parse_instant_file_name(name) is None


@pytest.mark.property
@given(action=st.sampled_from(sorted(ACTIONS)), state=st.sampled_from(list(State)), layout=st.sampled_from([1, 2]))
def test_roundtrip_all(action: str, state: State, layout: int) -> None:
    if state is State.COMPLETED and action in COMPLETED_ACTION:
        with pytest.raises(InvalidArgumentError):
            instant_file_name(T, action, state, C, layout)
        return
    ct = C if state is State.COMPLETED and layout == 2 else None
    name = instant_file_name(T, action, state, ct, layout)
    inst = parse_instant_file_name(name)
    assert inst is not None
    assert (inst.requested_time, inst.action, inst.state, inst.completion_time) == (T, action, state, ct)


def test_with_state() -> None:
    inst = parse_instant_file_name(f"{T}.clustering.inflight")
    assert inst is not None
    done = inst.with_state(State.COMPLETED, C, layout_version=2)
    assert done.action == "replacecommit" and done.file_name == f"{T}_{C}.replacecommit"


def test_new_instant_time_monotonic(monkeypatch: pytest.MonkeyPatch) -> None:
    import hudi_layout.format.instant as instant_module

    # the process-wide floor is pushed to the year 3000 below: restore it afterwards, or every later
    # test in this process would write instants in the year 3000
    monkeypatch.setattr(instant_module, "_last_generated", instant_module._last_generated)
    a = new_instant_time()
    assert len(a) == 17 and a.isdigit()
    b = new_instant_time(a)
    assert b > a
    far = "29991231235959999"
    c = new_instant_time(far)
    assert c > far and len(c) == 17
    assert new_instant_time() > c  # process-wide monotonic


def test_bad_time() -> None:
    with pytest.raises(InvalidArgumentError):
        instant_file_name("2024", "commit", State.COMPLETED)
