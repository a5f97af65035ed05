"""Benchmark reports: one Markdown file, one JSON file and PNG plots per benchmark, in ``bench/results/``.

API::

    from bench.report import write_report, md_table
    write_report(name, title, sections, data, plots=[("curves_time.png", fig)], results_dir=None)

* ``name`` — file stem: writes ``<results_dir>/<name>.md`` and ``<name>.json`` (``results_dir`` defaults
  to ``bench/results``).
* ``sections`` — list of ``(heading, markdown_body)`` tuples (or plain markdown strings), in order.
* ``data`` — JSON-serialisable dict (numpy scalars/arrays are converted); stored under ``"data"`` next to
  the ``"meta"`` block (date, machine: nproc + RAM, command line, git commit, library versions).
* ``plots`` — ``(filename, matplotlib Figure)`` pairs, saved as PNG next to the report and linked at the
  end of the Markdown (filenames are relative to ``results_dir``).
* ``md_table(header, rows, align=None)`` — a Markdown table from lists (floats formatted with ``fmt``).
* ``verdict(value, target, lower_is_better=True)`` → ``"PASS"``/``"FAIL"`` string for target tables.

Returns the path of the Markdown file.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .common import RESULTS_DIR, command_line, git_commit, library_versions, machine_info


def fmt(v: Any, digits: int = 3) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:.{digits}f}".rstrip("0").rstrip(".") if abs(v) < 100 \
            else f"{v:.1f}"
    return str(v)


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    align = align or ("l" + "r" * (len(header) - 1))
    sep = ["---:" if a == "r" else ":---:" if a == "c" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def verdict(value: float, target: float, lower_is_better: bool = True) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    ok = value <= target if lower_is_better else value >= target
    return "PASS" if ok else "FAIL"


def _jsonable(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:
        pass
    if isinstance(o, (bytes, bytearray)):
        return o.hex()
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, float) and math.isnan(o):
        return None
    return str(o)


def report_meta() -> dict[str, Any]:
    return {"date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "machine": machine_info(), "command": command_line(), "git_commit": git_commit(),
            "versions": library_versions()}


def write_report(name: str, title: str, sections: Sequence[tuple[str, str] | str], data: dict[str, Any],
                 plots: Sequence[tuple[str, Any]] = (), results_dir: str | Path | None = None) -> Path:
    out_dir = Path(results_dir) if results_dir is not None else RESULTS_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = report_meta()
    m = meta["machine"]
    lines = [f"# {title}", "",
             f"- date: {meta['date']}",
             f"- machine: {m['nproc']} cores, {m['ram_gib']} GiB RAM, {m['platform']}, Python {m['python']}",
             "- versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()),
             f"- command: `{meta['command']}`",
             f"- git commit: `{meta['git_commit']}`", ""]
    for s in sections:
        if isinstance(s, str):
            lines += [s, ""]
        else:
            heading, body = s
            lines += [f"## {heading}", "", body.rstrip(), ""]
    saved = []
    for filename, fig in plots:
        p = out_dir / filename
        fig.savefig(p, dpi=110, bbox_inches="tight")
        saved.append(filename)
        try:
            import matplotlib.pyplot as plt

            plt.close(fig)
        except ImportError:
            pass
    if saved:
        lines += ["## Plots", ""] + [f"![{f}]({f})" for f in saved] + [""]
    md = out_dir / f"{name}.md"
    md.write_text("\n".join(lines))
    (out_dir / f"{name}.json").write_text(
        json.dumps({"meta": meta, "title": title, "data": data, "plots": saved}, indent=2, default=_jsonable,
                   sort_keys=False) + "\n")
    return md
