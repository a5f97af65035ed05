"""Partition values that folder names cannot tell apart, through our read entry points, against Spark.

Hudi's key generators file a NULL and an empty string alike in the default partition
(``__HIVE_DEFAULT_PARTITION__``), and a value may spell that name, or ``default`` (the default partition of
Hudi before 0.12), itself. Until session 15 partition pruning read both folder names as "NULL only", so
``hl.read(path, "ps = ''")`` returned no rows, ``ps IS NOT NULL`` 240 of 300 (88 of 1,376 answers wrong over
eight tables). The oracle is Spark over the same rows as a plain DataFrame (no code of ours); the questions
also cover url-encoded values (``/``, ``=``, ``%``, ``#``), blanks, unicode, and int / date partition columns
with NULLs.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

import hudi_layout as hl

pytestmark = pytest.mark.integration

VALUES = [None, "", " ", "a/b", "a=b", "100%", "ü", "__HIVE_DEFAULT_PARTITION__", "default", "a%2Fb", "p1", "#"]
QUESTIONS = [
    "ps IS NULL", "ps IS NOT NULL", "ps = ''", "ps = ' '", "ps = 'a/b'", "ps = 'a=b'", "ps = '100%'", "ps = 'ü'",
    "ps = '__HIVE_DEFAULT_PARTITION__'", "ps = 'default'", "ps = 'a%2Fb'", "ps = 'p1'", "ps < 'a'", "ps > 'a'",
    "ps LIKE 'd%'", "ps IN ('', 'default')", "ps NOT IN ('', 'p1')", "NOT (ps = 'a/b')", "ps <=> NULL", "ps <=> ''",
    "length(ps) = 0", "coalesce(ps, 'zz') = 'zz'", "pn IS NULL", "pn = 0", "pn NOT IN (0)", "pn <=> NULL",
    "pd IS NULL", "pd = DATE '2020-01-02'", "pd > '2020-01-01'", "pn IS NULL AND ps = ''", "ps IS NULL OR pn IS NULL",
]
ROWS = [(i, VALUES[i % len(VALUES)], None if i % 7 == 0 else i % 5 - 2,
         None if i % 9 == 0 else dt.date(2020, 1, 1 + i % 4)) for i in range(240)]
SCHEMA = "id BIGINT, ps STRING, pn INT, pd DATE"
#: (partition fields, hive style)
LAYOUTS = [("ps,pn", "true"), ("ps,pd", "false")]


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("partition_values")
    out = {}
    for fields, hive in LAYOUTS:
        path = str(base / f"{fields.replace(',', '_')}_{hive}")
        hl.write(spark.createDataFrame(ROWS, SCHEMA), path, {
            "hoodie.table.name": "pv", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": fields,
            "hoodie.datasource.write.hive_style_partitioning": hive,
            "hoodie.datasource.write.partitionpath.urlencode": "true"})
        out[(fields, hive)] = path
    return out


def ids(df) -> list[int]:
    return sorted(r[0] for r in df.select("id").collect())


@pytest.mark.parametrize(("fields", "hive"), LAYOUTS)
def test_default_partition_folders_keep_empty_strings_and_their_own_names(spark, tables, fields, hive):
    path = tables[(fields, hive)]
    truth = spark.createDataFrame(ROWS, SCHEMA)
    frame = spark.read.format("hudi_layout").load(path)
    wrong = []
    for q in QUESTIONS:
        want = ids(truth.where(q))
        plan = hl.explain(path, q)
        got = {"read(sql)": ids(hl.read(path, q, spark=spark)),
               "read(Column)": ids(hl.read(path, F.expr(q), spark=spark)), "data source": ids(frame.where(q))}
        wrong += [f"{entry} {q}: {len(g)} rows, Spark {len(want)}" for entry, g in got.items() if g != want]
        if want and not plan.files_read:
            wrong.append(f"explain {q}: no candidate file")
    assert not wrong, "\n".join(wrong)
    # the partitions prune what they can prove: a value in no folder, and the int column's NULL folder
    assert hl.explain(path, "ps = 'p1'").files_read < hl.explain(path, "ps IS NOT NULL").files_read
    assert sorted((r.id, r.ps, r.pn, r.pd) for r in hl.read(path, spark=spark).collect()) == sorted(ROWS)


@pytest.mark.parametrize("values", [["b\\c"], ["a?b", "a:b"], ["[ab]"], ["{x,y}"], ["*", "a*"], ["x]", "a{"],
                                    ["100%", "a b", "a,b"]])
def test_partition_values_with_glob_characters_are_read_as_paths(spark, tmp_path, values):
    """Session 30's probe: without URL-encoding a partition folder may hold ``\\ ? * [ ] { }``, and ``hl.read``
    handed the file paths to Spark's parquet reader as glob patterns: they failed to parse (``b\\c``, ``a{``),
    matched nothing (``[ab]``) or matched a sibling (``a?b`` beside ``a:b``), each a deep Spark error."""
    path = str(tmp_path / "t")
    rows = [(i, v, i) for i, v in enumerate(values)] + [(100, "plain", 0)]
    hl.write(spark.createDataFrame(rows, "id INT, p STRING, v INT"), path, {
        "hoodie.table.name": "glob", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p"})
    assert ids(hl.read(path, "v >= 0", spark=spark)) == sorted(r[0] for r in rows)
    for i, v in enumerate(values):
        assert ids(hl.read(path, [("p", "=", v)], spark=spark)) == [i]


def test_a_table_with_glob_characters_in_partition_folders_clusters_and_reads(spark, tmp_path):
    """The clustering job reads its groups' files through Spark's parquet reader too."""
    path = str(tmp_path / "t")
    values = ["b\\c", "a?b", "a:b", "[ab]", "{x,y}"]
    rows = [(i, values[i % len(values)], i) for i in range(20)]
    hl.write(spark.createDataFrame(rows, "id INT, p STRING, v INT"), path, {
        "hoodie.table.name": "glob", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p"})
    assert hl.cluster(path, ["v"], spark=spark, strategy="linear") is not None
    assert ids(hl.read(path, "v >= 0", spark=spark)) == list(range(20))
    assert ids(hl.read(path, "p = 'a?b'", spark=spark)) == [i for i in range(20) if i % 5 == 1]


def test_binary_partition_bytes_that_are_not_utf8_are_refused_in_one_line(spark, tmp_path):
    """Session 30's probe: a BINARY partition value such as ``b"\\xff"`` failed in a Python task with a
    ``UnicodeDecodeError``; UTF-8 bytes (and NULL) are partition text as Spark's cast gives it."""
    from hudi_layout.errors import InvalidArgumentError

    path = str(tmp_path / "t")
    opts = {"hoodie.table.name": "bin", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "pc"}
    bad = spark.createDataFrame([(1, bytearray(b"\xff")), (2, bytearray(b"ok"))], "id INT, pc BINARY")
    with pytest.raises(InvalidArgumentError, match="not UTF-8"):
        hl.write(bad, path, opts)
    assert not (tmp_path / "t").exists()
    good = spark.createDataFrame([(1, bytearray(b"ab")), (2, bytearray(b"ok")), (3, None)], "id INT, pc BINARY")
    hl.write(good, path, opts)
    assert ids(hl.read(path, "pc = X'6F6B'", spark=spark)) == [2]
    assert ids(hl.read(path, "pc IS NULL", spark=spark)) == [3]
