"""Table locations: ``file:`` URIs are local paths on every entry point; other schemes are refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.table.paths import local_table_path


@pytest.mark.parametrize("given, local", [("/data/t", "/data/t"), ("rel/t", "rel/t"), ("file:/data/t", "/data/t"),
                                          ("file:///data/t", "/data/t"), ("file://localhost/data/t", "/data/t"),
                                          ("FILE:///data/a%20b", "/data/a%20b"), ("/data/p=a:b", "/data/p=a:b"),
                                          ("file:/data/a b/t%41#x?y", "/data/a b/t%41#x?y")])
def test_file_uris_are_local_paths(given: str, local: str) -> None:
    """Taken literally after the scheme and authority, as Hadoop's Path and so Spark: a SQL table's LOCATION
    arrives as ``file:/data/a%20b`` for a folder named ``a%20b`` (decoding it opened ``a b``, session 32)."""
    assert local_table_path(given) == local


@pytest.mark.parametrize("given", ["s3://bucket/t", "hdfs://nn:8020/t", "s3a://b/t", "file://otherhost/t",
                                   "file:rel/t"])
def test_other_schemes_and_hosts_are_refused(given: str) -> None:
    with pytest.raises(InvalidArgumentError):
        local_table_path(given)


def test_paths_the_file_system_cannot_look_up_are_one_line_refusals(tmp_path) -> None:
    """A name over 255 bytes, a path over PATH_MAX or a symbolic-link loop raised a raw OSError from the first
    ``is_dir()`` (every CLI command printed a traceback, path probe F3); an empty path meant the current folder."""
    from hudi_layout.errors import NotAHudiTableError
    from hudi_layout.table.hudi_table import HudiTable
    from hudi_layout.table.paths import table_dir

    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    for bad in [tmp_path / ("N" * 300), tmp_path / "/".join(["d" * 200] * 30), loop]:
        with pytest.raises(InvalidArgumentError):
            table_dir(bad)
        with pytest.raises(InvalidArgumentError):
            HudiTable(bad)
    with pytest.raises(InvalidArgumentError, match="empty"):
        table_dir("")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(NotAHudiTableError, match="a file, not a folder"):
        HudiTable(tmp_path / "afile")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(InvalidArgumentError, match="symbolic link to nothing"):
        HudiTable(dangling)


def test_dotdot_after_a_link_is_one_physical_path_and_odd_links_are_refused(tmp_path) -> None:
    from hudi_layout.table.paths import table_dir

    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "deep" / "er")
    assert table_dir(tmp_path / "link" / ".." / "t") == tmp_path / "deep" / "t"  # not the lexical tmp_path / "t"
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(InvalidArgumentError, match="symbolic link to nothing"):
        table_dir(tmp_path / "dangling")
    with pytest.raises(InvalidArgumentError, match="not valid UTF-8"):
        table_dir(os.fsdecode(b"/tmp/caf\xe9"))
    # POSIX keeps a leading "//", which Hadoop reads as a host (path probe F11); "y/.." never creates y (F12)
    assert table_dir("//data/t") == table_dir("file:////data/t") == Path("/data/t")
    assert table_dir(tmp_path / "dot" / "." / "y" / ".." / "t") == tmp_path / "dot" / "t"
