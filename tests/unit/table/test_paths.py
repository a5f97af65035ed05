"""Table locations: ``file:`` URIs are local paths on every entry point; other schemes are refused."""

from __future__ import annotations

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


@pytest.mark.parametrize("given", ["s3://bucket/t", "hdfs://nn:8020/t", "s3a://b/t", "file://otherhost/t", "file:rel/t"])
def test_other_schemes_and_hosts_are_refused(given: str) -> None:
    with pytest.raises(InvalidArgumentError):
        local_table_path(given)
