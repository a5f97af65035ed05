"""Partition path encoding (Hudi's escaper, our safety rules) and the path guard."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_layout.format.partition_path import (
    DEFAULT_PARTITION,
    MAX_SEGMENT_BYTES,
    PartitionPathRule,
    UnsafePartitionPathError,
    check_partition_path,
    escape_path_name,
    segment_problem,
    unescape_path_name,
)

# values chosen to break naive path building: separators, dots, NUL, Hudi's escape set, unicode, length
HOSTILE = ["../ESCAPED", "/abs", ".hoodie", ".", "..", "a\x00b", "x" * 300, "a/b", "a\\b", "..\\..", "%",
           "%2F", "p=1", "é/ü", "😀", " ", ".hidden", "a:b", "#?*", "__HIVE_DEFAULT_PARTITION__", "\n"]

partition_values = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.text(alphabet=st.sampled_from(list("./\\%=:\x00 aé😀-_")), max_size=12),
    st.text(min_size=200, max_size=400),
)


def test_escape_matches_hudi_examples():
    assert escape_path_name("x/y:z") == "x%2Fy%3Az"
    assert escape_path_name('a"#%\'*/:=?\\\x7f{[]^b') == "a%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%5B%5D%5Eb"
    assert escape_path_name("\x00\x01\x1f") == "%00%01%1F"
    # not escaped: space, '}', '.', '-', '_', non-ASCII
    assert escape_path_name(" }.-_é😀") == " }.-_é😀"
    assert escape_path_name("") == DEFAULT_PARTITION


def test_unescape_java_quirks():
    assert unescape_path_name("a%2Fb") == "a/b"
    assert unescape_path_name("%2f") == "/"           # lower-case hex decodes
    assert unescape_path_name("%") == "%"             # trailing % literal
    assert unescape_path_name("%4") == "%4"           # one digit literal
    assert unescape_path_name("%41") == "A"
    assert unescape_path_name("x%4") == "x%4"
    assert unescape_path_name("%+F") == "\x0f"        # Integer.parseInt accepts a sign
    assert unescape_path_name("%-1") == "%-1"         # negative: literal
    assert unescape_path_name("%-0") == "\x00"
    assert unescape_path_name("%ZZ") == "%ZZ"
    assert unescape_path_name("% F") == "% F"         # no whitespace (Python's int() would accept it)
    assert unescape_path_name("%\uff21\uff26") == "\xaf"  # Character.digit reads full-width A-F


@pytest.mark.property
@given(st.text(alphabet=st.characters(codec="utf-8"), min_size=1))
def test_escape_round_trips(value):
    assert unescape_path_name(escape_path_name(value)) == value


@pytest.mark.parametrize("segment", ["..", ".", "", "a/b", "a\x00", ".hoodie", "." + "x", "y" * 256])
def test_unsafe_segments(segment):
    assert segment_problem(segment) is not None


@pytest.mark.parametrize("segment", ["a", "p=..", "2024.01.01", "a.b", "a..", "é" * 127, "%2E%2E", "a\\b"])
def test_safe_segments(segment):
    assert segment_problem(segment) is None


@pytest.mark.parametrize("path", ["../x", "/abs", "a//b", "a/../b", ".hoodie/x", "a/.temp", "x\x00",
                                  "a/./b", "./a", "a/"])
def test_check_partition_path_refuses(path):
    with pytest.raises(UnsafePartitionPathError):
        check_partition_path(path)


def test_check_partition_path_accepts():
    for path in ("", "a", "a=1/b=2", "2024/01/15", "p=%2E%2E"):
        assert check_partition_path(path) == path


def test_plain_rule_refuses_with_the_option_in_the_hint():
    rule = PartitionPathRule(("p",))
    for bad in ("../ESCAPED", "/abs", ".hoodie", ".", "a\x00b", "a/b"):
        with pytest.raises(UnsafePartitionPathError) as e:
            rule.path([bad])
        assert "urlencode=true" in (e.value.hint or ""), bad
        assert "field 'p'" in str(e.value)
    with pytest.raises(UnsafePartitionPathError) as e:
        rule.path(["x" * 300])
    assert "255" in str(e.value) and "shorten" in (e.value.hint or "")


def test_url_encoded_rule_encodes_what_it_can():
    rule = PartitionPathRule(("p",), url_encode=True)
    assert rule.path(["../ESCAPED"]) == "%2E.%2FESCAPED"
    assert rule.path(["/abs"]) == "%2Fabs"
    assert rule.path([".hoodie"]) == "%2Ehoodie"
    assert rule.path(["."]) == "%2E"
    assert rule.path(["a\x00b"]) == "a%00b"
    assert rule.path([None]) == rule.path([""]) == DEFAULT_PARTITION
    hive = PartitionPathRule(("p", "q"), hive_style=True, url_encode=True)
    assert hive.path(["..", "x/y"]) == "p=../q=x%2Fy"
    with pytest.raises(UnsafePartitionPathError):
        rule.path(["é" * 200])  # 400 bytes: nothing shortens it


def test_hive_rule_refuses_bad_field_names():
    PartitionPathRule(("a", "b"), hive_style=True).check_fields()
    PartitionPathRule(("a/b",), hive_style=False).check_fields()  # the name is not in the path
    for bad in ("a/b", ".x", "a=b", "a\x00"):
        with pytest.raises(UnsafePartitionPathError):
            PartitionPathRule((bad,), hive_style=True).check_fields()


@pytest.mark.property
@settings(max_examples=300, deadline=None)
@given(st.lists(partition_values, min_size=1, max_size=3), st.booleans(), st.booleans())
def test_property_paths_stay_inside_and_decode_back(values, hive_style, url_encode):
    """Whatever the values: the path is either refused with our error or is relative, made of safe
    segments (one per field), and decodes back to the values (url-encoded tables, or plain tables
    whose values were accepted)."""
    fields = tuple(f"f{i}" for i in range(len(values)))
    rule = PartitionPathRule(fields, hive_style=hive_style, url_encode=url_encode)
    try:
        path = rule.path(values)
    except UnsafePartitionPathError:
        if url_encode:  # only length can defeat the encoder (escaping at most triples a byte)
            assert any(v and 3 * len(v.encode("utf-8")) + len(f) + 1 > MAX_SEGMENT_BYTES
                       for f, v in zip(fields, values))
        return
    check_partition_path(path)
    assert len(path.split("/")) == len(fields)
    # "default" and the Hive default name read back as null, in Hudi as here
    assert rule.values(path) == {f: (None if v in ("", None, DEFAULT_PARTITION, "default") else v)
                                 for f, v in zip(fields, values)}


def test_url_encode_never_refuses_short_values():
    rule = PartitionPathRule(("p",), url_encode=True)
    for v in HOSTILE:
        if len(v.encode()) * 3 <= MAX_SEGMENT_BYTES:
            rule.path([v])


def test_arrow_paths_match_scalar_rule():
    rule = PartitionPathRule(("a", "b"), hive_style=True, url_encode=True)
    a = pa.array(["x", None, "../y", "x", ""])
    b = pa.chunked_array([pa.array([1, 2]), pa.array([3, None, 5])]).cast(pa.string())
    got = rule.arrow_paths([a, b]).to_pylist()
    want = [rule.path([x, y]) for x, y in zip(a.to_pylist(), b.to_pylist())]
    assert got == want
    with pytest.raises(UnsafePartitionPathError):
        PartitionPathRule(("a",)).arrow_paths([pa.array(["ok", "../no"])])


def test_values_of_foreign_paths():
    rule = PartitionPathRule(("day",))
    assert rule.values("2024/01/15") == {"day": "2024/01/15"}  # Hudi's nested folders for one field
    assert PartitionPathRule(("a", "b")).values("x") is None
    assert PartitionPathRule(("a",), hive_style=True).values("b=1") is None
    assert PartitionPathRule(("a",), hive_style=True).values("a=default") == {"a": None}
    assert PartitionPathRule((), hive_style=True).values("") == {}
