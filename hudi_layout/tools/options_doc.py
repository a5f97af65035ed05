"""``python -m hudi_layout.tools.options_doc [README.md]``: print the options reference (Markdown), or write it
between the ``<!-- options:begin -->`` / ``<!-- options:end -->`` markers of the given file."""

from __future__ import annotations

import sys
from pathlib import Path

from hudi_layout.options import options_reference_markdown

BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    table = options_reference_markdown()
    if not args:
        print(table, end="")
        return 0
    path = Path(args[0])
    text = path.read_text()
    if BEGIN not in text or END not in text:
        print(f"error: {path} has no {BEGIN} ... {END} markers", file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{table}{END}{tail}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
