"""The format documents under docs/ keep their section numbers, and every "§x.y" the code cites exists.

Code cites ``docs/hudi-format.md`` by section ("format notes §4.7", "hudi-format.md §6.3") and
``docs/hudi-format-live-tables.md`` likewise; a line naming "live-tables", "live tables", "R2" or "round 2"
points at the latter.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FORMAT_DOC = DOCS / "hudi-format.md"
LIVE_DOC = DOCS / "hudi-format-live-tables.md"

# Section numbers each document promises to keep (the numbering the code was written against).
FORMAT_SECTIONS = {
    *(f"1.{i}" for i in range(1, 8)), *(f"2.{i}" for i in range(1, 6)), *(f"3.{i}" for i in range(1, 4)),
    *(f"4.{i}" for i in range(1, 8)), *(f"5.{i}" for i in range(1, 9)), *(f"6.{i}" for i in range(1, 10)),
    *(f"7.{i}" for i in range(1, 4)), "8", "9",
}
LIVE_SECTIONS = {
    *(f"1.{i}" for i in range(1, 8)), *(f"2.{i}" for i in range(1, 6)), *(f"3.{i}" for i in range(1, 6)),
    *(f"4.{i}" for i in range(1, 8)), *(f"5.{i}" for i in range(1, 5)), *(f"6.{i}" for i in range(1, 5)),
    *(f"7.{i}" for i in range(1, 5)), "8",
}

_HEADING = re.compile(r"^(#{2,3}) (\d+(?:\.\d+)?)\.? (.*)$")
_CITATION = re.compile(r"§\s?(\d+(?:\.\d+)?)")
_LIVE_HINT = re.compile(r"live[- ]tables|\bR2\b|round[- ]?2", re.IGNORECASE)
_LINK = re.compile(r"\]\(([^)#\s]*)#([^)\s]+)\)")


def _headings(doc: Path) -> dict[str, str]:
    """Section number -> GitHub anchor of its heading."""
    out: dict[str, str] = {}
    for line in doc.read_text(encoding="utf-8").splitlines():
        m = _HEADING.match(line)
        if m:
            out[m.group(2)] = _anchor(line.lstrip("#").strip())
    return out


def _anchor(title: str) -> str:
    """GitHub's heading slug: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _all_anchors(doc: Path) -> set[str]:
    return {_anchor(line.lstrip("#").strip())
            for line in doc.read_text(encoding="utf-8").splitlines() if line.startswith("#")}


@pytest.mark.parametrize("doc,expected", [(FORMAT_DOC, FORMAT_SECTIONS), (LIVE_DOC, LIVE_SECTIONS)],
                         ids=["format", "live-tables"])
def test_documents_keep_their_numbering(doc: Path, expected: set[str]) -> None:
    numbers = set(_headings(doc))
    assert expected <= numbers, f"{doc.name} lost sections {sorted(expected - numbers)}"


def test_every_cited_section_exists() -> None:
    format_numbers = set(_headings(FORMAT_DOC)) | {n.split(".")[0] for n in _headings(FORMAT_DOC)}
    live_numbers = set(_headings(LIVE_DOC)) | {n.split(".")[0] for n in _headings(LIVE_DOC)}
    missing = []
    for path in sorted((ROOT / "hudi_layout").rglob("*.py")):
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            numbers = live_numbers if _LIVE_HINT.search(line) else format_numbers
            missing += [f"{path.relative_to(ROOT)}:{lineno}: §{n}"
                        for n in _CITATION.findall(line) if n not in numbers]
    assert not missing, "code cites sections the docs do not have:\n" + "\n".join(missing)


def test_links_between_the_documents_resolve() -> None:
    anchors = {FORMAT_DOC.name: _all_anchors(FORMAT_DOC), LIVE_DOC.name: _all_anchors(LIVE_DOC)}
    broken = []
    for doc in (FORMAT_DOC, LIVE_DOC):
        for target, anchor in _LINK.findall(doc.read_text(encoding="utf-8")):
            if anchor not in anchors[target or doc.name]:
                broken.append(f"{doc.name}: {target}#{anchor}")
    assert not broken, "broken links:\n" + "\n".join(broken)
