"""Front end for SQL WHERE-clause text: a small hand-written recursive-descent parser (Spark SQL dialect).

Understood: ``= == <=> != <> < <= > >=`` (literal on either side), ``[NOT] IN (...)``,
``[NOT] BETWEEN a AND b``, ``IS [NOT] NULL``, ``IS [NOT] TRUE|FALSE``, ``IS [NOT] DISTINCT FROM``,
``[NOT] LIKE 'pattern' [ESCAPE 'c']``, ``NOT``/``!``, ``AND``/``&&``, ``OR``, parentheses, and a bare
boolean column. Literals: integers (``int``), ``1.5`` (``Decimal``, as in Spark), ``1e3`` (``float``),
suffixes ``L S Y D F BD``, ``'text'`` / ``"text"`` (``''`` and backslash escapes), ``X'0AFF'``,
``TRUE FALSE NULL``, ``DATE '...'``, ``TIMESTAMP '...'`` (naive = UTC, see :mod:`.ir`),
``CAST(literal AS type)``. Identifiers may be backquoted and dotted (``a.b`` → column ``"a.b"``).
Keywords are case-insensitive.

Valid SQL we cannot use for skipping — functions or arithmetic on columns, column-vs-column comparisons,
LIKE patterns other than ``'prefix%'``, ``RLIKE``, ``CASE`` — becomes an :class:`~.ir.Unsupported` leaf
("might match"). Only text that does not parse raises :class:`InvalidArgumentError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.skipping.bind import bind
from hudi_layout.skipping.ir import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    ComparisonPredicate,
    Eq,
    Gt,
    GtEq,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Lt,
    LtEq,
    Not,
    NotEq,
    NullSafeEq,
    Or,
    Predicate,
    Ref,
    Unsupported,
    mirrored,
)
from hudi_layout.skipping.sql_lexer import DEFAULT_DIALECT, SqlDialect, Token, tokenize
from hudi_layout.skipping.sql_literals import (
    NO_CAST,
    cast_literal,
    is_number,
    like_predicate,
    parse_number,
    typed_literal,
)
from hudi_layout.skipping.visitors import has_unsupported

# ---------------------------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class _Col:
    name: str


@dataclass(frozen=True, slots=True)
class _Lit:
    value: Any


@dataclass(frozen=True, slots=True)
class _Opaque:
    text: str


@dataclass(frozen=True, slots=True)
class _Bool:
    pred: Predicate


_Value = _Col | _Lit | _Opaque | _Bool

_CMP: dict[str, type[ComparisonPredicate]] = {
    "=": Eq, "==": Eq, "<=>": NullSafeEq, "!=": NotEq, "<>": NotEq, "<": Lt, "<=": LtEq, ">": Gt, ">=": GtEq,
}
_RESERVED = {"AND", "OR", "NOT", "IS", "IN", "BETWEEN", "LIKE", "ILIKE", "RLIKE", "REGEXP", "ESCAPE", "AS",
             "THEN", "ELSE", "END", "WHEN", "DISTINCT", "FROM", "SELECT"}


class _Parser:
    def __init__(self, text: str, dialect: SqlDialect = DEFAULT_DIALECT) -> None:
        self.text = text
        self.tokens = tokenize(text, dialect)
        self.pos = 0
        #: ``TIMESTAMP`` names TIMESTAMP_NTZ in sessions whose ``spark.sql.timestampType`` says so
        self.timestamp = "TIMESTAMP_NTZ" if dialect.timestamp_ntz else "TIMESTAMP"
        self.exponent_decimal = dialect.exponent_decimal

    # -- token helpers

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def advance(self) -> Token:
        t = self.tokens[self.pos]
        self.pos += 1
        return t

    def accept_kw(self, *words: str) -> bool:
        if self.tok.is_kw(*words):
            self.pos += 1
            return True
        return False

    def accept_op(self, *ops: str) -> bool:
        if self.tok.kind == "op" and self.tok.text in ops:
            self.pos += 1
            return True
        return False

    def expect_op(self, op: str) -> None:
        if not self.accept_op(op):
            self.fail(f"expected {op!r}")

    def expect_kw(self, word: str) -> None:
        if not self.accept_kw(word):
            self.fail(f"expected {word}")

    def fail(self, what: str) -> None:
        t = self.tok
        found = "end of input" if t.kind == "eof" else repr(self.text[t.start:t.end])
        raise InvalidArgumentError(f"cannot parse SQL filter: {what} at position {t.start}, found {found}",
                                   hint=self.text)

    def unsupported(self, start: int) -> Unsupported:
        """An :class:`Unsupported` leaf for the source text from token ``start`` to here."""
        text = self.since(start)
        return Unsupported(text, text)

    def since(self, start: int) -> str:
        return self.text[self.tokens[start].start:self.tokens[self.pos - 1].end]

    # -- boolean layer

    def parse(self) -> Predicate:
        if self.tok.kind == "eof":
            self.fail("expected an expression")
        result = self.as_pred(self.or_expr(), 0)
        if self.tok.kind != "eof":
            self.fail("unexpected token")
        return result

    def or_expr(self) -> _Value:
        start = self.pos
        left = self.and_expr()
        while self.accept_kw("OR"):
            right = self.and_expr()
            left = _Bool(Or(self.as_pred(left, start), self.as_pred(right, start)))
        return left

    def and_expr(self) -> _Value:
        start = self.pos
        left = self.not_expr()
        while self.accept_kw("AND") or self.accept_op("&&"):
            right = self.not_expr()
            left = _Bool(And(self.as_pred(left, start), self.as_pred(right, start)))
        return left

    def not_expr(self) -> _Value:
        start = self.pos
        if self.accept_kw("NOT") or self.accept_op("!"):
            return _Bool(Not(self.as_pred(self.not_expr(), start)))
        return self.predicate()

    def as_pred(self, v: _Value, start: int) -> Predicate:
        if isinstance(v, _Bool):
            return v.pred
        if isinstance(v, _Col):
            return Eq(Ref(v.name), Literal(True))
        if isinstance(v, _Lit):
            if v.value is True:
                return AlwaysTrue()
            if v.value is False or v.value is None:
                return AlwaysFalse()
            return Unsupported(repr(v.value))
        return Unsupported(v.text, v.text)

    # -- predicates

    def predicate(self) -> _Value:
        start = self.pos
        left = self.additive()
        t = self.tok
        if t.kind == "op" and t.text in _CMP:
            self.advance()
            right = self.additive()
            return _Bool(self.compare(left, t.text, right, start))
        if self.accept_kw("IS"):
            return _Bool(self.is_suffix(left, start))
        negated = self.accept_kw("NOT")
        if self.accept_kw("IN"):
            pred = self.in_suffix(left, start)
        elif self.accept_kw("BETWEEN"):
            low = self.additive()
            self.expect_kw("AND")
            high = self.additive()
            pred = And(self.compare(left, ">=", low, start), self.compare(left, "<=", high, start))
        elif self.accept_kw("LIKE"):
            pred = self.like_suffix(left, start)
        elif self.accept_kw("ILIKE", "RLIKE", "REGEXP"):
            self.additive()
            if self.accept_kw("ESCAPE"):
                self.primary()
            return _Bool(self.unsupported(start))
        else:
            if negated:
                self.fail("expected IN, BETWEEN or LIKE after NOT")
            return left
        if has_unsupported(pred):
            # its text runs from ``start`` and so already holds the NOT: one leaf for the whole construct
            # (wrapping it in Not would render "NOT (x NOT LIKE ANY ...)", the opposite filter)
            return _Bool(self.unsupported(start))
        return _Bool(Not(pred) if negated else pred)

    def compare(self, left: _Value, op: str, right: _Value, start: int) -> Predicate:
        kind = _CMP[op]
        if isinstance(left, _Col) and isinstance(right, _Lit):
            return kind(Ref(left.name), Literal(right.value))
        if isinstance(left, _Lit) and isinstance(right, _Col):
            return mirrored(kind)(Ref(right.name), Literal(left.value))
        return self.unsupported(start)

    def is_suffix(self, left: _Value, start: int) -> Predicate:
        negated = self.accept_kw("NOT")
        if self.accept_kw("NULL"):
            if not isinstance(left, _Col):
                return self.unsupported(start)
            return IsNotNull(Ref(left.name)) if negated else IsNull(Ref(left.name))
        if self.tok.is_kw("TRUE", "FALSE"):
            value = self.advance().text.upper() == "TRUE"
            pred = self.compare(left, "<=>", _Lit(value), start)  # c IS TRUE ≡ c <=> TRUE (never NULL)
        elif self.accept_kw("DISTINCT"):
            self.expect_kw("FROM")
            pred = self.compare(left, "<=>", self.additive(), start)
            negated = not negated  # IS DISTINCT FROM ≡ NOT <=>
        else:
            self.fail("expected NULL, TRUE, FALSE or DISTINCT FROM after IS")
        return Not(pred) if negated else pred

    def in_suffix(self, left: _Value, start: int) -> Predicate:
        self.expect_op("(")
        if self.tok.is_kw("SELECT"):
            self.fail("IN (subquery) is not supported")
        items = [self.additive()]
        while self.accept_op(","):
            items.append(self.additive())
        self.expect_op(")")
        if not isinstance(left, _Col) or not all(isinstance(i, _Lit) for i in items):
            return self.unsupported(start)
        # NOT is applied by the caller (Not(In) rewrites to NotIn).
        return In(Ref(left.name), tuple(Literal(i.value) for i in items))  # type: ignore[union-attr]

    def like_suffix(self, left: _Value, start: int) -> Predicate:
        pattern = self.additive()
        escape = "\\"
        if self.accept_kw("ESCAPE"):
            esc = self.primary()
            if not isinstance(esc, _Lit) or not isinstance(esc.value, str) or len(esc.value) != 1:
                self.fail("ESCAPE needs a one-character string")
            escape = esc.value  # type: ignore[union-attr]
        if not isinstance(left, _Col) or not isinstance(pattern, _Lit) or not isinstance(pattern.value, str):
            return self.unsupported(start)
        return like_predicate(Ref(left.name), pattern.value, escape) or self.unsupported(start)

    # -- value layer

    def additive(self) -> _Value:
        start = self.pos
        left = self.multiplicative()
        while self.tok.kind == "op" and self.tok.text in ("+", "-", "||"):
            self.advance()
            self.multiplicative()
            left = _Opaque(self.since(start))
        return left

    def multiplicative(self) -> _Value:
        start = self.pos
        left = self.unary()
        while (self.tok.kind == "op" and self.tok.text in ("*", "/", "%")) or self.tok.is_kw("DIV"):
            self.advance()
            self.unary()
            left = _Opaque(self.since(start))
        return left

    def unary(self) -> _Value:
        start = self.pos
        if self.tok.kind == "op" and self.tok.text in ("-", "+", "~"):
            op = self.advance().text
            if op == "-" and self.tok.kind == "num":  # Spark reads a signed number as one literal (its range)
                return _Lit(parse_number(self.advance().text, negative=True, exponent_decimal=self.exponent_decimal))
            inner = self.unary()
            if isinstance(inner, _Lit) and op in "+-" and is_number(inner.value):
                return _Lit(-inner.value if op == "-" else inner.value)
            return _Opaque(self.since(start))
        return self.primary()

    def primary(self) -> _Value:
        start = self.pos
        t = self.tok
        if t.kind == "num":
            self.advance()
            return _Lit(parse_number(t.text, exponent_decimal=self.exponent_decimal))
        if t.kind == "str":
            self.advance()
            return _Lit(t.text)
        if t.kind == "hex":
            self.advance()
            try:
                return _Lit(bytes.fromhex(t.text))
            except ValueError as e:
                raise InvalidArgumentError(f"bad hex literal X'{t.text}'") from e
        if self.accept_op("("):
            inner = self.or_expr()
            self.expect_op(")")
            return inner
        if t.kind == "qident":
            return self.column_or_call(start)
        if t.kind != "ident" or t.text.upper() in _RESERVED:
            self.fail("expected a value")
        word = t.text.upper()
        nxt = self.tokens[self.pos + 1]
        if word in ("TRUE", "FALSE", "NULL"):
            self.advance()
            return _Lit(None if word == "NULL" else word == "TRUE")
        if word in ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ") and nxt.kind == "str":
            self.pos += 2
            return _Lit(typed_literal(self.timestamp if word == "TIMESTAMP" else word, nxt.text))
        if word == "CAST" and nxt.kind == "op" and nxt.text == "(":
            return self.cast(start)
        if word == "CASE":
            return self.case(start)
        return self.column_or_call(start)

    def column_or_call(self, start: int) -> _Value:
        parts = [self.advance().text]
        while (self.tok.kind == "op" and self.tok.text == "."
               and self.tokens[self.pos + 1].kind in ("ident", "qident")):
            self.pos += 1
            parts.append(self.advance().text)
        if self.accept_op("("):
            if not self.accept_op(")"):
                self.accept_kw("DISTINCT")
                if not self.accept_op("*"):
                    self.or_expr()
                while self.accept_op(","):
                    self.or_expr()
                self.expect_op(")")
            return _Opaque(self.since(start))
        return _Col(".".join(parts))

    def cast(self, start: int) -> _Value:
        self.pos += 2  # CAST (
        inner = self.or_expr()
        self.expect_kw("AS")
        if self.tok.kind != "ident":
            self.fail("expected a type name")
        type_name, args = self.advance().text.upper(), []
        if self.accept_op("("):
            while self.tok.kind == "num":
                args.append(int(self.advance().text))
                if not self.accept_op(","):
                    break
            self.expect_op(")")
        self.expect_op(")")
        if isinstance(inner, _Lit):
            converted = cast_literal(inner.value, self.timestamp if type_name == "TIMESTAMP" else type_name, args)
            if converted is not NO_CAST:
                return _Lit(converted)
        return _Opaque(self.since(start))

    def case(self, start: int) -> _Value:
        depth = 0
        while True:
            t = self.advance()
            if t.kind == "eof":
                self.pos -= 1
                self.fail("expected END")
            if t.is_kw("CASE"):
                depth += 1
            elif t.is_kw("END"):
                depth -= 1
                if depth == 0:
                    return _Opaque(self.since(start))


def from_sql(text: str, schema: pa.Schema | None = None, dialect: SqlDialect = DEFAULT_DIALECT) -> Predicate:
    """Parse a WHERE-clause expression, read as the session's parser reads it (``dialect``:
    :meth:`SqlDialect.of_session`; session 19: with ``spark.sql.ansi.doubleQuotedIdentifiers`` on, ``s = "s"``
    compares two columns, and was pruned as a comparison with the text ``'s'``).

    With ``schema``, unknown columns raise :class:`InvalidArgumentError`; so does text that does not parse.
    """
    pred = _Parser(text, dialect).parse()
    return bind(pred, schema) if schema is not None else pred


#: keywords that make a statement read a relation more than once, or in a way a WHERE over the view's rows
#: does not describe (joins, set operations, common table expressions, lateral views, sampling, pivots)
_MULTI_SCAN_WORDS = frozenset({"SELECT", "FROM", "JOIN", "UNION", "INTERSECT", "EXCEPT", "MINUS", "WITH", "LATERAL",
                               "TABLESAMPLE", "PIVOT", "UNPIVOT", "VALUES", "TABLE", "OVER", "WINDOW"})
#: what may follow a statement's WHERE condition at the top level
_AFTER_WHERE = frozenset({"GROUP", "ORDER", "LIMIT", "HAVING", "CLUSTER", "DISTRIBUTE", "SORT", "QUALIFY", "OFFSET"})


def where_of_single_scan(statement: str, view_names: set[str], columns: set[str] | None = None) -> str | None:
    """The WHERE condition of ``statement`` when it reads one of ``view_names`` exactly once and filters those
    rows by it: ``SELECT <list> FROM <view> [[AS] <alias>] WHERE <condition> [GROUP BY | ORDER BY | LIMIT |
    HAVING ...]``, with no second ``SELECT`` / ``FROM`` (subquery, CTE), join, set operation or window.
    Otherwise None.

    Names in the condition qualified by the relation (``a.col``, ``t.col``) come back unqualified, when
    ``columns`` (the view's top-level column names) shows the qualifier cannot also be a struct column: with a
    column of that name, ``a.x`` could be its field, and the condition is not ours to judge. A deeper name
    (``a.s.inner``) or any other dotted name gives None, as does any qualifier when ``columns`` is not given.

    Why this shape only: a WHERE keeps exactly the rows of its single FROM relation that satisfy it, before
    anything else in the statement looks at them, so a view restricted to rows satisfying the condition (and
    holding every one of them) leaves the answer unchanged. Any other shape is read without skipping."""
    if "/*" in statement:
        return None
    text = statement.strip().rstrip(";")
    try:
        tokens = tokenize(text)
    except InvalidArgumentError:
        return None
    names = {n.lower() for n in view_names}
    if len(tokens) < 6 or not tokens[0].is_kw("SELECT"):
        return None
    if sum(1 for t in tokens if t.is_kw(*_MULTI_SCAN_WORDS)) != 2:
        return None  # exactly the leading SELECT and one FROM
    i = next(k for k, t in enumerate(tokens) if t.is_kw("FROM"))
    view = tokens[i + 1]
    if view.kind not in ("ident", "qident") or view.text.lower() not in names:
        return None
    qualifiers = {view.text.lower()}
    w = i + 2  # the WHERE token, after an optional alias
    if w + 1 < len(tokens) and tokens[w].is_kw("AS"):
        w += 1
        if tokens[w].kind not in ("ident", "qident") or tokens[w].is_kw("WHERE"):
            return None
    if w < len(tokens) and tokens[w].kind in ("ident", "qident") and not tokens[w].is_kw("WHERE"):
        qualifiers = {tokens[w].text.lower()}  # an alias hides the view's own name
        w += 1
    if w >= len(tokens) or not tokens[w].is_kw("WHERE"):
        return None
    known = {c.lower() for c in columns} if columns is not None else None
    cut: list[tuple[int, int]] = []  # text spans of the qualifiers to drop ("a.")
    depth, end = 0, len(tokens) - 1
    for k in range(w + 1, len(tokens)):
        t = tokens[k]
        if t.kind == "op" and t.text == "(":
            depth += 1
        elif t.kind == "op" and t.text == ")":
            depth -= 1
        elif t.kind == "op" and t.text == ".":
            qual, field = tokens[k - 1], tokens[k + 1] if k + 1 < len(tokens) else None
            plain = (known is not None and qual.kind in ("ident", "qident") and qual.text.lower() in qualifiers
                     and qual.text.lower() not in known and k - 1 > w
                     and not (tokens[k - 2].kind == "op" and tokens[k - 2].text == ".")
                     and field is not None and field.kind in ("ident", "qident")
                     and not (k + 2 < len(tokens) and tokens[k + 2].kind == "op" and tokens[k + 2].text == "."))
            if not plain:
                return None  # a struct field, a deeper name, or another relation's: not ours to judge
            cut.append((qual.start, t.end))
        elif depth == 0 and t.is_kw(*_AFTER_WHERE):
            end = k
            break
    if depth != 0 or end == w + 1:
        return None
    start, stop = tokens[w + 1].start, tokens[end - 1].end
    pieces, at = [], start
    for a, b in cut:
        pieces.append(text[at:a])
        at = b
    pieces.append(text[at:stop])
    return "".join(pieces)


#: what a read-only statement of ``hudi-layout query`` may start with
_READ_STATEMENT_STARTS = frozenset({"SELECT", "WITH", "FROM", "VALUES", "TABLE", "DESCRIBE", "DESC", "SHOW", "EXPLAIN"})
#: words that make a statement write, define or change something (outside strings and backquoted names)
_WRITING_WORDS = frozenset({"INSERT", "CREATE", "DROP", "ALTER", "DELETE", "UPDATE", "MERGE", "TRUNCATE", "LOAD",
                            "ADD", "CACHE", "UNCACHE", "REFRESH", "SET", "RESET", "MSCK", "REPAIR", "USE", "GRANT",
                            "REVOKE", "ANALYZE", "DIRECTORY", "OVERWRITE", "REPLACE", "CALL", "EXECUTE", "DECLARE",
                            "COMMENT", "CLEAR", "LIST"})


def is_writing_word(word: str) -> bool:
    """Whether ``word`` is a keyword of a write, a definition or a session change (not a misspelt query word)."""
    return word.upper() in _WRITING_WORDS


def writing_word(statement: str) -> str | None:
    """``None`` when ``statement`` only reads: it starts as a query does (``SELECT``, ``WITH``, ``FROM``, ...)
    and no keyword of a write, a definition or a session change appears outside strings and backquoted names
    (``INSERT OVERWRITE DIRECTORY`` inside the table folder replaced a data file; ``CREATE TABLE AS`` wrote a
    warehouse folder into the current one). Otherwise the word that makes it a change. A column named like
    one of those words is refused too, unless backquoted."""
    try:
        tokens = tokenize(statement.strip().rstrip(";"))
    except InvalidArgumentError:
        return None  # Spark's parser reports it
    words = [t for t in tokens if t.kind == "ident"]
    if not words or words[0].text.upper() not in _READ_STATEMENT_STARTS:
        return words[0].text.upper() if words else None
    return next((t.text.upper() for t in words if t.is_kw(*_WRITING_WORDS)), None)
