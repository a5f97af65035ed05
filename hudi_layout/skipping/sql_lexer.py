"""Tokenizer for :mod:`.sql` (Spark SQL lexical rules for the subset we parse)."""

from __future__ import annotations

import re
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


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "'\"":
            value, j = _read_string(text, i)
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


def _read_string(text: str, i: int) -> tuple[str, int]:
    quote, j, out = text[i], i + 1, []
    while j < len(text):
        c = text[j]
        if c == "\\" and j + 1 < len(text):
            out.append(_BACKSLASH.get(text[j + 1], text[j + 1]))
            j += 2
        elif c == quote:
            if text.startswith(quote * 2, j):
                out.append(quote)
                j += 2
            else:
                return "".join(out), j + 1
        else:
            out.append(c)
            j += 1
    raise InvalidArgumentError(f"unterminated string literal at {i}: {text[i:i + 20]!r}")
