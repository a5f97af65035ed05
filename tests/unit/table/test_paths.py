"""Table locations: ``file:`` URIs are local paths on every entry point; other schemes are refused."""

from __future__ import annotations

import pytest

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.table.paths import local_table_path


@pytest.mark.parametrize("given, local", [("/data/t", "/data/t"), ("rel/t", "rel/t"), ("file:/data/t", "/data/t"),
                                          ("file:///data/t", "/data/t"), ("file://localhost/data/t", "/data/t"),
                                          ("FILE:///data/a%20b", "/data/a b"), ("/data/p=a:b", "/data/p=a:b")])
def test_file_uris_are_local_paths(given: str, local: str) -> None:
    assert local_table_path(given) == local


@pytest.mark.parametrize("given", ["s3://bucket/t", "hdfs://nn:8020/t", "s3a://b/t", "file://otherhost/t"])
def test_other_schemes_and_hosts_are_refused(given: str) -> None:
    with pytest.raises(InvalidArgumentError):
        local_table_path(given)
