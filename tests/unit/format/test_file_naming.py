from __future__ import annotations

import pytest

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.format.file_naming import (
    make_base_file_name,
    make_write_token,
    new_file_id,
    parse_base_file_name,
    parse_log_file_name,
    partition_depth,
)


def test_base_file_roundtrip() -> None:
    fid = new_file_id(3)
    assert fid.endswith("-3") and len(fid) == 38
    tok = make_write_token(1, 27, 53)
    assert tok == "1-27-53"
    name = make_base_file_name(fid, tok, "20260307162504409")
    p = parse_base_file_name(name)
    assert (p.file_id, p.write_token, p.instant_time, p.extension) == (fid, tok, "20260307162504409", ".parquet")
    assert p.name == name
    h = parse_base_file_name("files-0000-0_0-0-0_00000000000000000.hfile")
    assert h.file_id == "files-0000-0" and h.extension == ".hfile"
    with pytest.raises(InvalidArgumentError):
        parse_base_file_name(".hoodie_partition_metadata")


def test_log_file() -> None:
    p = parse_log_file_name(".col-stats-0000-0_20260307162524292.log.1_0-243-626")
    assert (p.file_id, p.instant_time, p.version, p.write_token, p.is_cdc) == (
        "col-stats-0000-0", "20260307162524292", 1, "0-243-626", False)
    assert p.name == ".col-stats-0000-0_20260307162524292.log.1_0-243-626"
    a = parse_log_file_name(".commits_.archive.3_1-0-1")
    assert a.extension == "archive" and a.version == 3
    c = parse_log_file_name(".abc-0_20240101000000000.log.2_1-2-3.cdc")
    assert c.is_cdc and c.name == ".abc-0_20240101000000000.log.2_1-2-3.cdc"


def test_partition_depth() -> None:
    assert partition_depth("a=1/b=2") == 2 and partition_depth("") == 0
