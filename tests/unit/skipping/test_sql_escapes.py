"""String literals read as Spark 4's parser reads them (``SparkParserUtils.unescapeSQLString``), and the two
session settings that change it. Session 19: ``'\\u0070'`` was read as ``'u0070'`` and ``'\\160'`` as
``'160'``, so ``s LIKE '\\u0070%'`` skipped every file holding ``p...`` (0 rows where Spark has 100);
``s = "s"`` under ``doubleQuotedIdentifiers`` compares two columns, and was pruned as ``s = 's'``."""

from __future__ import annotations

import pytest

from hudi_layout.skipping.sql_lexer import DEFAULT_DIALECT, SqlDialect, tokenize


def _literal(text: str, dialect: SqlDialect = DEFAULT_DIALECT) -> tuple[str, str]:
    token = tokenize(text, dialect)[0]
    return token.kind, token.text


@pytest.mark.parametrize(("text", "value"), [
    (r"'\u0070a'", "pa"), (r"'\u00e9'", "é"), (r"'\U0001F600'", "\U0001F600"), (r"'\uD83D\uDE00'", "\U0001F600"),
    (r"'\160a'", "pa"), (r"'\060'", "0"), (r"'\260'", "260"),  # octal only with 0 or 1 first
    (r"'\u007'", "u007"),  # not four hex digits: the letter itself
    (r"'\0'", "\0"), (r"'a\tb'", "a\tb"), (r"'\Z'", "\x1a"), (r"'p\%'", "p\\%"), (r"'p\_'", "p\\_"),
    (r"'\\'", "\\"), (r"'\''", "'"), (r"'it''s'", "it's"), (r'"\""', '"'), (r"'\x'", "x"),
    (r"r'a\nb'", r"a\nb"), (r"R'\u0070'", r"\u0070"),
])
def test_string_literals_unescape_as_spark_does(text: str, value: str) -> None:
    assert _literal(text) == ("str", value)


def test_session_settings_that_change_the_reading() -> None:
    assert _literal(r"'a\tb'", SqlDialect(escaped_string_literals=True)) == ("str", r"a\tb")
    assert _literal('"s"', SqlDialect(double_quoted_identifiers=True)) == ("qident", "s")
    assert _literal('"s"') == ("str", "s")
    on = {"spark.sql.parser.escapedStringLiterals": "true", "spark.sql.ansi.doubleQuotedIdentifiers": "TRUE"}
    assert SqlDialect.of_session(on) == SqlDialect(True, True)
    assert SqlDialect.of_session({}) == SqlDialect()
