"""Tokenizer for :mod:`.sql` (Spark SQL lexical rules for the subset we parse)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from hudi_layout.errors import InvalidArgumentError


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "num", "str", "hex", "ident", "qident", "op", "eof"
    text: str  # raw text (for "str"/"qident": the unescaped value)
    start: int
    end: int

    def is_kw(self, *words: str) -> bool:
        return self.kind == "ident" and self.text.upper() in words


NUMBER = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?(BD|bd|[LlSsYyDdFf])?(?![A-Za-z0-9_])")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = ("<=>", "==", "!=", "<>", "<=", ">=", "&&", "||", "=", "<", ">", "(", ")", ",", ".", "+", "-", "*",
        "/", "%", "!", "~")
_BACKSLASH = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}


#: Spark session settings that change how SQL text is read (both false by default)
ESCAPED_STRING_LITERALS = "spark.sql.parser.escapedStringLiterals"
DOUBLE_QUOTED_IDENTIFIERS = "spark.sql.ansi.doubleQuotedIdentifiers"
TIMESTAMP_TYPE = "spark.sql.timestampType"
EXPONENT_AS_DECIMAL = "spark.sql.legacy.exponentLiteralAsDecimal.enabled"


@dataclass(frozen=True, slots=True)
class SqlDialect:
    """How the session's parser reads SQL text: ``escaped_string_literals`` keeps backslashes in string
    literals as written (Spark 1.6's behaviour); ``double_quoted_identifiers`` makes ``"x"`` a column name;
    ``timestamp_ntz`` (``spark.sql.timestampType=TIMESTAMP_NTZ``) makes ``TIMESTAMP '...'`` and ``CAST(... AS
    TIMESTAMP)`` wall-clock times, whose offsets Spark drops."""

    escaped_string_literals: bool = False
    double_quoted_identifiers: bool = False
    timestamp_ntz: bool = False
    #: ``spark.sql.legacy.exponentLiteralAsDecimal.enabled``: ``4.0000000000000000001E18`` is an exact decimal
    #: (read as a double, it rounded to 4e18 and a boundary file was skipped; session 29's probe)
    exponent_decimal: bool = False

    @classmethod
    def of_session(cls, settings: Mapping[str, str]) -> SqlDialect:
        def on(key: str) -> bool:
            return str(settings.get(key, "false")).strip().lower() == "true"

        ntz = str(settings.get(TIMESTAMP_TYPE, "")).strip().upper() == "TIMESTAMP_NTZ"
        return cls(on(ESCAPED_STRING_LITERALS), on(DOUBLE_QUOTED_IDENTIFIERS), ntz, on(EXPONENT_AS_DECIMAL))


#: Spark's defaults: backslash escapes unescaped, double quotes around strings
DEFAULT_DIALECT = SqlDialect()


def tokenize(text: str, dialect: SqlDialect = DEFAULT_DIALECT) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "rR" and i + 1 < n and text[i + 1] in "'\"":
            j = text.find(text[i + 1], i + 2)  # a raw string: no escapes, it ends at the next quote
            if j < 0:
                raise InvalidArgumentError(f"unterminated string literal at {i}: {text[i:i + 20]!r}")
            tokens.append(Token("str", text[i + 2:j], i, j + 1))
            i = j + 1
        elif c == '"' and dialect.double_quoted_identifiers:
            value, j = _read_string(text, i, raw=True)
            tokens.append(Token("qident", value, i, j))
            i = j
        elif c in "'\"":
            value, j = _read_string(text, i, raw=dialect.escaped_string_literals)
            tokens.append(Token("str", value, i, j))
            i = j
        elif c in "xX" and i + 1 < n and text[i + 1] == "'":
            value, j = _read_string(text, i + 1)
            tokens.append(Token("hex", value, i, j))
            i = j
        elif c == "`":
            j, parts = i + 1, []
            while True:
                k = text.find("`", j)
                if k < 0:
                    raise InvalidArgumentError(
                        f"unterminated backquoted identifier at {i}: {text[i:i + 20]!r}")
                parts.append(text[j:k])
                if text.startswith("``", k):
                    parts.append("`")
                    j = k + 2
                    continue
                break
            tokens.append(Token("qident", "".join(parts), i, k + 1))
            i = k + 1
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            m = NUMBER.match(text, i)
            if m is None:
                raise InvalidArgumentError(f"malformed number at {i}: {text[i:i + 20]!r}")
            tokens.append(Token("num", m.group(0), i, m.end()))
            i = m.end()
        elif (m := _IDENT.match(text, i)) is not None:
            tokens.append(Token("ident", m.group(0), i, m.end()))
            i = m.end()
        else:
            op = next((o for o in _OPS if text.startswith(o, i)), None)
            if op is None:
                raise InvalidArgumentError(f"unexpected character {c!r} at {i} in {text!r}")
            tokens.append(Token("op", op, i, i + len(op)))
            i += len(op)
    tokens.append(Token("eof", "", n, n))
    return tokens


def _read_string(text: str, i: int, raw: bool = False) -> tuple[str, int]:
    """The string literal starting at ``i`` (its quote) and the index after it, unescaped as Spark 4's
    ``SparkParserUtils.unescapeSQLString`` does: ``\\uXXXX``, ``\\UXXXXXXXX``, three-digit octal ``\\[01][0-7][0-7]``,
    ``\\0 b n r t Z``, ``\\%`` / ``\\_`` kept with their backslash (for LIKE), any other character as itself.
    ``raw`` (``escapedStringLiterals``) keeps every backslash as written. Session 19: ``'\\u0070'`` was read as
    ``'u0070'``, so ``s LIKE '\\u0070%'`` skipped every file holding ``p...``."""
    quote, j, units = text[i], i + 1, []
    while j < len(text):
        c = text[j]
        if c == "\\" and j + 1 < len(text):
            if raw:
                units.append(text[j:j + 2])
                j += 2
                continue
            nxt = text[j + 1]
            if nxt == "u" and _hex(text, j + 2, 4):
                units.append(chr(int(text[j + 2:j + 6], 16)))
                j += 6
            elif nxt == "U" and _hex(text, j + 2, 8):
                code = int(text[j + 2:j + 10], 16)
                if code > 0x10FFFF:
                    raise InvalidArgumentError(f"unicode escape beyond U+10FFFF at {j}: {text[j:j + 10]!r}")
                units.append(chr(code))
                j += 10
            elif nxt in "01" and j + 3 < len(text) and text[j + 2] in _OCTAL and text[j + 3] in _OCTAL:
                units.append(chr(int(text[j + 1:j + 4], 8)))
                j += 4
            else:
                units.append(_BACKSLASH.get(nxt, nxt))
                j += 2
        elif c == quote:
            if text.startswith(quote * 2, j):
                units.append(quote)
                j += 2
            else:
                return _joined(units, i), j + 1
        else:
            units.append(c)
            j += 1
    raise InvalidArgumentError(f"unterminated string literal at {i}: {text[i:i + 20]!r}")


_OCTAL = "01234567"


def _hex(text: str, start: int, length: int) -> bool:
    part = text[start:start + length]
    return len(part) == length and all(ch in "0123456789abcdefABCDEF" for ch in part)


def _joined(units: list[str], at: int) -> str:
    """The literal's characters; ``\\u`` escapes of a surrogate pair become the one character Java's string
    holds (a lone surrogate has none in UTF-8: not a literal we can compare)."""
    out = "".join(units)
    if any("\ud800" <= ch <= "\udfff" for ch in out):
        try:
            out = out.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeDecodeError:
            raise InvalidArgumentError(f"string literal at {at} holds a lone surrogate") from None
    return out
