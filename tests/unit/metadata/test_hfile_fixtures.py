"""HFileReader against the real HBase 2.4 / Hudi 1.0 HFiles in ../shared/fixtures/hfile (skipped without them).

Every lookup is checked against a brute-force model built from a full scan (:class:`Oracle`), probing keys at
every block boundary and index key (many index keys are shortened "fake" keys), before the first key and after
the last one.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from pathlib import Path

import pytest

from hudi_layout.errors import HFileFormatError
from hudi_layout.metadata.hfile import HFileReader

pytestmark = pytest.mark.shared


class Oracle:
    """Answers get/seek/scan from the full list of items (sorted by key)."""

    def __init__(self, items: list[tuple[bytes, bytes]]) -> None:
        self.items = items
        self.keys = [k for k, _ in items]

    def get(self, key: bytes) -> bytes | None:
        i = bisect_left(self.keys, key)
        return self.items[i][1] if i < len(self.keys) and self.keys[i] == key else None

    def seek(self, key: bytes) -> list[tuple[bytes, bytes]]:
        return self.items[bisect_left(self.keys, key):]

    def seek_head(self, key: bytes, depth: int) -> list[tuple[bytes, bytes]]:
        i = bisect_left(self.keys, key)
        return self.items[i:i + depth]

    def scan(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        out = []
        for i in range(bisect_left(self.keys, prefix), len(self.keys)):
            if not self.keys[i].startswith(prefix):
                break
            out.append(self.items[i])
        return out


def probe_keys(reader: HFileReader, items: list[tuple[bytes, bytes]]) -> list[bytes]:
    keys = [k for k, _ in items]
    probes = {b"", b"\x00", b"\xff" * 4, b"a", b"zzz"}
    if keys:
        probes |= {keys[0], keys[-1], keys[-1] + b"\x00", keys[0][:-1], keys[len(keys) // 2]}
    index = reader.data_block_index
    # about 12 blocks whose index key is shortened ("fake": row differs from the block's first row), plus an
    # even sample of 12 others
    fake = [i for i, e in enumerate(index) if e.row != reader._block(i)[0][0]]
    chosen = set(fake[:: max(1, len(fake) // 12)]) | set(range(0, len(index), max(1, len(index) // 12)))
    for i in sorted(chosen):
        row = index[i].row
        probes |= {row, row + b"\x00", row[:-1], row[:-2], row + b"\xff"}
        if i:  # just past the previous block's last key, i.e. in the gap before a fake index key
            rows, _ = reader._block(i - 1)
            probes |= {rows[-1], rows[-1] + b"\x00", rows[-1] + b"0"}
    for i in range(0, len(keys), max(1, len(keys) // 10)):
        probes |= {keys[i], keys[i] + b"\x00", keys[i][:-1]}
    return sorted(probes)


def check_against_oracle(reader: HFileReader, items: list[tuple[bytes, bytes]], *, depth: int = 25) -> None:
    oracle = Oracle(items)
    for n, key in enumerate(probe_keys(reader, items)):
        assert reader.get(key) == oracle.get(key), key
        got = []
        for kv in reader.seek(key):
            got.append(kv)
            if len(got) >= depth:
                break
        assert got == oracle.seek_head(key, depth), key
        # shortened prefixes can match thousands of rows: check them on a sample of the probes only
        prefixes = (key, key[:-1], key[:-3]) if n % 16 == 0 else (key,)
        for prefix in prefixes:
            if not prefix:
                continue
            expected = oracle.scan(prefix)
            assert reader.scan_items(prefix) == expected, prefix
            if n % 16 == 0:
                assert list(reader.scan(prefix)) == expected, prefix
                assert reader.scan_values(prefix) == [v for _, v in expected], prefix


def expected_count(path: Path) -> int:
    name = path.stem
    if name.endswith("no_entry"):
        return 0
    m = re.search(r"_(\d+)_(\d+)_non_unique$", name)
    if m:
        return int(m.group(1)) * (int(m.group(2)) + 1)
    m = re.search(r"_(NONE|GZ)_(\d+)", name)
    assert m, name
    return int(m.group(2))


def test_fixtures_present(hfile_fixtures: list[Path]) -> None:
    assert len(hfile_fixtures) >= 7


def test_entry_counts_and_order(hfile_fixtures: list[Path]) -> None:
    for path in hfile_fixtures:
        with HFileReader(path, verify_checksums=True) as reader:
            items = list(reader)
            assert reader.num_entries == expected_count(path) == len(items), path.name
            keys = [k for k, _ in items]
            assert keys == sorted(keys), path.name
            assert reader.trailer.major_version == 3
            if items:
                assert reader.last_key == keys[-1]


def test_values_follow_key_pattern(hfile_fixtures: list[Path]) -> None:
    key_re = re.compile(rb"^hudi-key-(?:a+-)?(\d{9})$")
    for path in hfile_fixtures:
        reader = HFileReader(path)
        seen: dict[bytes, int] = {}
        for key, value in reader:
            m = key_re.match(key)
            assert m, (path.name, key)
            n = seen.get(key, 0)
            expected = b"hudi-value-" + m.group(1) + (b"" if n == 0 else b"_%d" % (n - 1))
            assert value == expected, (path.name, key, value)
            seen[key] = n + 1
        if "non_unique" in path.name:
            assert len(seen) == 200 and set(seen.values()) == {21}


def test_lookups_agree_with_full_scan(hfile_fixtures: list[Path]) -> None:
    for path in hfile_fixtures:
        reader = HFileReader(path, cache_blocks=4)
        check_against_oracle(reader, reader.items())


def test_non_unique_get_returns_first_value(hfile_fixtures: list[Path]) -> None:
    path = next(p for p in hfile_fixtures if "non_unique" in p.name)
    reader = HFileReader(path)
    assert reader.get(b"hudi-key-000000042") == b"hudi-value-000000042"
    assert [v for _, v in reader.scan(b"hudi-key-000000042")][-1] == b"hudi-value-000000042_19"
    assert len(reader.scan_values(b"hudi-key-000000042")) == 21
    assert reader.get_many([b"hudi-key-000000199", b"nope"]) == {b"hudi-key-000000199": b"hudi-value-000000199"}


def test_multi_level_and_fake_keys_present(hfile_fixtures: list[Path]) -> None:
    """Guards the test data itself: the large-keys file has a 2-level index and shortened index keys."""
    path = next(p for p in hfile_fixtures if "large_keys" in p.name)
    reader = HFileReader(path)
    assert reader.trailer.num_data_index_levels >= 2
    assert reader.num_data_blocks > reader.trailer.data_index_count
    fakes = [e for i, e in enumerate(reader.data_block_index) if e.row != reader._block(i)[0][0]]
    assert fakes and all(e.key[-1] == 0xFF for e in fakes)


def test_reads_from_bytes_and_file_info(hfile_fixtures: list[Path]) -> None:
    path = next(p for p in hfile_fixtures if p.name.endswith("16KB_GZ_20000.hfile"))
    data = path.read_bytes()
    reader = HFileReader(data)
    assert reader.num_entries == 20000
    assert reader.get(b"hudi-key-000012345") == b"hudi-value-000012345"
    assert reader.file_info[b"KEY_VALUE_VERSION"] == b"\x00\x00\x00\x01"
    assert reader.trailer.compression_codec == 1
    reader.verify()


def test_corrupt_fixture_bytes_raise(hfile_fixtures: list[Path]) -> None:
    path = next(p for p in hfile_fixtures if p.name.endswith("16KB_GZ_20000.hfile"))
    data = bytearray(path.read_bytes())
    data[40] ^= 0xFF  # inside the first data block's gzip payload
    with pytest.raises(HFileFormatError, match="offset 0"):
        HFileReader(bytes(data), verify_checksums=True).get(b"hudi-key-000000001")
    with pytest.raises(HFileFormatError, match="trailer"):
        HFileReader(bytes(data[:-10]))


def test_hudi_1_1_mdt_hfiles_in_table_zips(shared_dir: Path) -> None:
    """Every MDT HFile inside the table fixtures (Hudi 1.1 native writer: minor version 0, checksum type 0,
    ``rowLen || row`` index keys) reads from bytes, sorted, with working point lookups and prefix scans."""
    import zipfile

    seen = 0
    for zip_path in sorted((shared_dir / "fixtures" / "hudi-tables").glob("*.zip")):
        with zipfile.ZipFile(zip_path) as zf:
            for member in zf.namelist():
                if not member.endswith(".hfile") or "__MACOSX" in member:
                    continue
                reader = HFileReader(zf.read(member), verify_checksums=True)
                items = reader.items()
                assert len(items) == reader.num_entries, member
                keys = [k for k, _ in items]
                assert keys == sorted(keys), member
                for key, value in items[:: max(1, len(items) // 10)]:
                    assert reader.get(key) == value, member
                    assert reader.get(key + b"\x00") is None, member
                    assert reader.scan_items(key[:12]) == [kv for kv in items if kv[0].startswith(key[:12])]
                seen += 1
    assert seen > 0
