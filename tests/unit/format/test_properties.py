from __future__ import annotations

from pathlib import Path

import pytest

from hudi_layout.errors import CorruptFileError, NotAHudiTableError, UnsupportedTableError
from hudi_layout.format.properties import (
    compute_checksum,
    format_properties,
    load_properties,
    parse_properties,
    recover_table_config,
    table_config_exists,
    write_properties,
)


def test_parse_escapes_and_comments() -> None:
    text = (
        "#comment\n! other comment\n"
        "a=1\n"
        "b\\:c = x\\:y\\=z\n"
        "schema={\"type\"\\:\"record\"}\n"
        "uni=caf\\u00e9\n"
        "cont=abc\\\n    def\n"
        "spaced key\n"
        "colon:val\n"
        "empty=\n"
    )
    p = parse_properties(text)
    assert p["a"] == "1"
    assert p["b:c"] == "x:y=z"
    assert p["schema"] == '{"type":"record"}'
    assert p["uni"] == "café"
    assert p["cont"] == "abcdef"
    assert p["spaced"] == "key"
    assert p["colon"] == "val"
    assert p["empty"] == ""


def test_format_roundtrip() -> None:
    src = {"k=1": "v:2", "schema": '{"a":"b=c"}', "u": "é😀", "sp": " lead", "bs": "a\\b", "nl": "x\ny"}
    out = format_properties(src)
    out.decode("ascii")
    assert parse_properties(out.decode("latin-1")) == src


def test_checksum_known_values() -> None:
    assert compute_checksum({"hoodie.database.name": "default", "hoodie.table.name": "v9_txns_cow_complex_meta"}) \
        == 2097361480
    assert compute_checksum({"hoodie.table.name": "v9_txns_cow_complex_meta_metadata"}) == 3347748510


def _props(version: str = "9") -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.database.name": "db", "hoodie.table.version": version,
            "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.recordkey.fields": "a,b",
            "hoodie.table.partition.fields": "p", "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.table.metadata.partitions": "files,column_stats",
            "hoodie.table.create.schema": '{"type":"record","name":"x","fields":[]}'}


def test_write_and_load(tmp_path: Path) -> None:
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir()
    write_properties(hoodie, _props())
    assert not (hoodie / "hoodie.properties.backup").exists()
    tp = load_properties(hoodie)
    assert tp.checksum_valid()
    assert tp.table_name == "t" and tp.version == 9 and tp.timeline_layout_version == 2
    assert tp.record_key_fields == ["a", "b"] and tp.partition_fields == ["p"]
    assert tp.hive_style_partitioning and tp.metadata_partitions == ["files", "column_stats"]
    assert tp.base_file_format == "PARQUET" and tp.populate_meta_fields
    assert tp.create_schema and tp["hoodie.table.create.schema"].startswith('{"type":"record"')
    # update path: backup removed again, new value visible
    write_properties(hoodie / "hoodie.properties", {**tp, "hoodie.table.metadata.partitions": "files"})
    assert load_properties(hoodie).metadata_partitions == ["files"]
    assert not (hoodie / "hoodie.properties.backup").exists()


def test_backup_fallback(tmp_path: Path) -> None:
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir()
    write_properties(hoodie, _props())
    (hoodie / "hoodie.properties.backup").write_bytes((hoodie / "hoodie.properties").read_bytes())
    (hoodie / "hoodie.properties").write_text("hoodie.table.name=t\nhoodie.table.version=9\nhoodie.table.checksum=1\n")
    assert load_properties(hoodie).record_key_fields == ["a", "b"]


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(NotAHudiTableError, match=str(tmp_path)):
        load_properties(tmp_path / ".hoodie")
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir()
    write_properties(hoodie, _props("5"))
    with pytest.raises(UnsupportedTableError):
        load_properties(hoodie)


def test_fixture_properties(fixture_table, expected_tables) -> None:
    for zip_name, exp in expected_tables.items():
        base = fixture_table(zip_name)
        tp = load_properties(base / ".hoodie")
        assert tp.checksum_valid(), zip_name
        assert str(tp.version) == exp["table_version"]
        assert tp.table_type == exp["table_type"]
        assert ",".join(tp.partition_fields) == exp["partition_fields"]
        assert ",".join(tp.record_key_fields) == exp["record_key_fields"]
        assert ",".join(tp.metadata_partitions) == exp["metadata_partitions"]
        if (base / ".hoodie" / "metadata" / ".hoodie").is_dir():
            assert load_properties(base / ".hoodie" / "metadata" / ".hoodie").checksum_valid()


def test_rewrite_fixture_properties_stays_readable(fixture_table) -> None:
    """Rewriting a real hoodie.properties keeps every value and stays readable by hudi-rs."""
    base = fixture_table("cow_v9_txns_simple_meta.zip")
    before = load_properties(base / ".hoodie").to_dict()
    write_properties(base / ".hoodie", before)
    after = load_properties(base / ".hoodie")
    assert after.to_dict() == before and after.checksum_valid()
    hudi = pytest.importorskip("hudi")
    assert len(hudi.HudiTableBuilder.from_base_uri(str(base)).build().get_file_slices()) == 5


def test_a_wrong_checksum_without_a_valid_backup_is_refused_naming_the_right_value(tmp_path: Path) -> None:
    """Java's ``HoodieTableConfig`` treats a checksum that does not match the table name as a damaged file
    and fails when the backup does not help; accepting it would let us write into a table Hudi refuses."""
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir()
    write_properties(hoodie, _props())
    good = load_properties(hoodie).checksum
    text = (hoodie / "hoodie.properties").read_text().replace(f"hoodie.table.checksum={good}",
                                                               "hoodie.table.checksum=12345")
    (hoodie / "hoodie.properties").write_text(text)
    with pytest.raises(CorruptFileError, match="checksum 12345 does not match") as err:
        load_properties(hoodie)
    assert f"hoodie.table.checksum={good}" in (err.value.hint or "")
    (hoodie / "hoodie.properties.backup").write_text(text)  # an equally wrong backup does not help either
    with pytest.raises(CorruptFileError):
        load_properties(hoodie)


def test_a_backup_left_alone_is_the_table_config(tmp_path: Path) -> None:
    """An update cut short between deleting the old file and writing the new one leaves only the backup:
    Java reads it, and every "is this a table?" test here asks :func:`table_config_exists`, so a write does not
    take the folder for a non-table."""
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir()
    assert not table_config_exists(hoodie)
    write_properties(hoodie, _props())
    (hoodie / "hoodie.properties").rename(hoodie / "hoodie.properties.backup")
    assert table_config_exists(hoodie)
    assert load_properties(hoodie).record_key_fields == ["a", "b"]
    saved = (hoodie / "hoodie.properties.backup").read_bytes()
    assert recover_table_config(hoodie)  # before a change (other readers do not look at the backup)
    assert (hoodie / "hoodie.properties").read_bytes() == saved and not recover_table_config(hoodie)
    assert sorted(p.name for p in hoodie.iterdir()) == ["hoodie.properties", "hoodie.properties.backup"]
    write_properties(hoodie, load_properties(hoodie).to_dict())  # the next update drops the backup
    assert (hoodie / "hoodie.properties").is_file() and not (hoodie / "hoodie.properties.backup").exists()
