"""``where_of_single_scan``: the WHERE of statements that read the view once, None for every other shape
(those are read without skipping, so a wrong None costs speed only; a wrong condition would cost answers)."""

from __future__ import annotations

import pytest

from hudi_layout.skipping.sql import where_of_single_scan

NAMES = {"t", "conn"}


@pytest.mark.parametrize(("statement", "where"), [
    ("SELECT count(*) FROM t WHERE dst_port = 443", "dst_port = 443"),
    ("select * from T where a < 3 and (b = 'x' or b is null) order by a limit 5",
     "a < 3 and (b = 'x' or b is null)"),
    ("SELECT a, count(*) FROM `conn` WHERE a BETWEEN 1 AND 9 GROUP BY a HAVING count(*) > 1", "a BETWEEN 1 AND 9"),
    ("  SELECT DISTINCT s FROM t WHERE s LIKE 'ab%' ;", "s LIKE 'ab%'"),
    ("SELECT * FROM t WHERE f(a, 'FROM') > 2 LIMIT 1", "f(a, 'FROM') > 2"),
])
def test_where_of_a_single_scan(statement: str, where: str) -> None:
    assert where_of_single_scan(statement, NAMES) == where


@pytest.mark.parametrize("statement", [
    "SELECT count(*) FROM t",  # no WHERE
    "SELECT * FROM t a WHERE a.x = 1",  # alias
    "SELECT * FROM t WHERE t.x = 1",  # qualified name
    "SELECT * FROM t WHERE s.inner = 1",  # a struct field
    "SELECT (SELECT count(*) FROM t WHERE x = 1) AS a, (SELECT count(*) FROM t) AS b",
    "SELECT * FROM t WHERE x IN (SELECT x FROM t WHERE y = 1)",
    "WITH u AS (SELECT * FROM t) SELECT * FROM u WHERE x = 1",
    "SELECT * FROM t JOIN t AS u ON t.x = u.x WHERE t.y = 1",
    "SELECT * FROM t WHERE x = 1 UNION ALL SELECT * FROM t",
    "SELECT * FROM other WHERE x = 1",
    "SELECT * FROM t TABLESAMPLE (10 PERCENT) WHERE x = 1",
    "SELECT x, row_number() OVER (ORDER BY x) FROM t WHERE x = 1",
    "SELECT * FROM t /* comment */ WHERE x = 1",
    "SELECT * FROM t WHERE x = 1; SELECT 2",
    "SELECT * FROM t WHERE (x = 1",
    "SELECT * FROM t WHERE",
])
def test_other_shapes_are_read_without_skipping(statement: str) -> None:
    assert where_of_single_scan(statement, NAMES) is None


COLUMNS = {"x", "y", "s"}


@pytest.mark.parametrize(("statement", "where"), [
    ("SELECT * FROM t a WHERE a.x = 1", "x = 1"),
    ("SELECT a.y FROM conn AS a WHERE a.x = 1 AND (a.y > 2 OR y IS NULL) ORDER BY a.y",
     "x = 1 AND (y > 2 OR y IS NULL)"),
    ("SELECT * FROM t WHERE t.x = 1", "x = 1"),
    ("SELECT * FROM `t` `q` WHERE `q`.`x` = 'a.b'", "`x` = 'a.b'"),
    ("SELECT * FROM t a WHERE x = 1 LIMIT 3", "x = 1"),
])
def test_names_qualified_by_the_relation_are_unqualified(statement: str, where: str) -> None:
    assert where_of_single_scan(statement, NAMES, COLUMNS) == where


@pytest.mark.parametrize("statement", [
    "SELECT * FROM t s WHERE s.x = 1",  # the alias is also a struct column: s.x may be its field
    "SELECT * FROM t a WHERE a.s.inner = 1",  # a field of a qualified struct
    "SELECT * FROM t a WHERE t.x = 1",  # the alias hides the view's name (Spark refuses it)
    "SELECT * FROM t WHERE conn.x = 1",  # another relation's name
    "SELECT * FROM t a WHERE s.inner = 1",  # a struct field
    "SELECT * FROM t AS WHERE x = 1",
    "SELECT * FROM t a b WHERE x = 1",
])
def test_other_qualified_names_are_read_without_skipping(statement: str) -> None:
    assert where_of_single_scan(statement, NAMES, COLUMNS) is None
