"""The last guard before file creation: containment under the base path, and the per-instant file gate."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.format.partition_path import UnsafePartitionPathError
from hudi_layout.table.file_guard import (
    FileGate,
    InstantClosedError,
    close_gate,
    create_new_file,
    data_file_path,
    gate_path,
    marker_path,
    open_gate,
)
from hudi_layout.table.locks import Heartbeat

T = "20260101000000000"
HOSTILE_PARTITIONS = ["../ESCAPED", "/abs", ".hoodie", ".hoodie/.temp", ".", "..", "a/../../b", "a\x00b", "x" * 300,
                      "a//b", "a/", "/", "./a", "a/./b", "a/.hidden", "..\x00", "\x00"]


@pytest.mark.parametrize("partition", HOSTILE_PARTITIONS)
def test_hostile_partition_paths_are_refused(tmp_path: Path, partition: str):
    with pytest.raises(UnsafePartitionPathError):
        data_file_path(tmp_path, partition, "f_0-1-0_1.parquet")
    with pytest.raises(UnsafePartitionPathError):
        marker_path(tmp_path, T, partition, "f_0-1-0_1.parquet")


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "a\x00", ".hoodie", ".hoodie_x"])
def test_hostile_file_names_are_refused(tmp_path: Path, name: str):
    with pytest.raises(UnsafePartitionPathError):
        data_file_path(tmp_path, "p=1", name)


def test_symlinked_partition_folder_cannot_lead_outside(tmp_path: Path):
    base, outside = tmp_path / "t", tmp_path / "outside"
    (base / ".hoodie").mkdir(parents=True)
    outside.mkdir()
    (base / "p=1").symlink_to(outside)
    (base / "p=2").symlink_to(base / ".hoodie")
    for part in ("p=1", "p=2"):
        with pytest.raises(UnsafePartitionPathError, match="outside the table"):
            data_file_path(base, part, "f_0-1-0_1.parquet")
    with pytest.raises(UnsafePartitionPathError):
        marker_path(base, "../../x", "", "f")
    assert data_file_path(base, "p=3/q=é", "f_0-1-0_1.parquet") == str(base.resolve() / "p=3/q=é/f_0-1-0_1.parquet")


def test_create_new_file_never_overwrites_or_follows_links(tmp_path: Path):
    target = tmp_path / "victim"
    target.write_text("keep")
    (tmp_path / "link").symlink_to(target)
    for p in (target, tmp_path / "link"):
        with pytest.raises(OSError):
            create_new_file(str(p))
    assert target.read_text() == "keep"


@pytest.mark.property
@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("./\\%=\x00aé")), max_size=6), min_size=1, max_size=4))
def test_property_accepted_paths_stay_under_the_base(tmp_path_factory, segments):
    base = tmp_path_factory.getbasetemp() / "prop"
    base.mkdir(exist_ok=True)
    partition = "/".join(segments)
    try:
        path = data_file_path(base, partition, "f_0-1-0_1.parquet")
    except UnsafePartitionPathError:
        return
    real_base = str(base.resolve())
    assert path.startswith(real_base + os.sep)
    assert "/.hoodie" not in path[len(real_base):]
    assert os.path.normpath(path) == path


def _gate(base: Path, hb: Heartbeat, inflight: Path) -> FileGate:
    return FileGate(str(base), T, str(inflight), str(hb.path), hb.token)


def test_gate_open_checks_and_closes(tmp_path: Path):
    inflight = tmp_path / f"{T}.commit.inflight"
    inflight.write_bytes(b"")
    hb = Heartbeat(tmp_path, T)
    open_gate(tmp_path, T)
    gate = _gate(tmp_path, hb, inflight)
    with gate.creating():
        pass
    # a gate of an earlier attempt (other token) is refused
    with pytest.raises(InstantClosedError, match="another attempt"):
        with FileGate(str(tmp_path), T, str(inflight), str(hb.path), "old-token").creating():
            pass
    inflight.unlink()
    with pytest.raises(InstantClosedError, match="no longer inflight"):
        with gate.creating():
            pass
    inflight.write_bytes(b"")
    hb.stop()
    with pytest.raises(InstantClosedError, match="writer is gone"):
        with gate.creating():
            pass
    hb = Heartbeat(tmp_path, T)
    gate = _gate(tmp_path, hb, inflight)
    close_gate(tmp_path, T)
    assert not gate_path(tmp_path, T).exists()
    with pytest.raises(InstantClosedError, match="takes no more files"):
        with gate.creating():
            pass
    close_gate(tmp_path, T)  # closing twice is fine
    hb.stop()


def test_close_waits_for_a_creation_in_progress_and_later_ones_fail(tmp_path: Path):
    inflight = tmp_path / f"{T}.commit.inflight"
    inflight.write_bytes(b"")
    hb = Heartbeat(tmp_path, T)
    open_gate(tmp_path, T)
    gate = _gate(tmp_path, hb, inflight)
    entered, release, events = threading.Event(), threading.Event(), []

    def slow_creator():
        with gate.creating():
            entered.set()
            release.wait(5)
            (tmp_path / "late.parquet").write_bytes(b"x")
            events.append("created")

    th = threading.Thread(target=slow_creator)
    th.start()
    assert entered.wait(5)
    closer = threading.Thread(target=lambda: (close_gate(tmp_path, T), events.append("closed")))
    closer.start()
    time.sleep(0.2)
    assert events == []  # close waits for the creation in progress
    release.set()
    th.join(5)
    closer.join(5)
    assert events == ["created", "closed"]  # so a rollback listing after close sees the file
    with pytest.raises(InstantClosedError):
        with gate.creating():
            pass
    hb.stop()


def test_close_gate_times_out_on_a_stuck_holder(tmp_path: Path):
    open_gate(tmp_path, T)
    import fcntl

    fd = os.open(gate_path(tmp_path, T), os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        with pytest.raises(Exception, match="still creating files"):
            close_gate(tmp_path, T, timeout_s=0.2)
    finally:
        os.close(fd)
