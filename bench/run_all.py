"""Run the whole conn benchmark and write one report: ``bench/results/REPORT.md``.

Issue: "One command runs the whole conn benchmark (curves, ingest, clustering with every strategy, skipping
queries, index load, delta-rs comparison) at a size given on the command line and writes one Markdown
report with tables and plots under ``bench/results/``."

Every module runs in its own subprocess (``python -m bench.<module> ...``, a clean SparkSession each), in this
order: ``bench_curves`` (``--rows N --parts N/10,000``), ``bench_ingest`` (``--rows N``), ``bench_clustering``
(``--rows N``: linear, z-order direct, z-order sample, Hilbert sample, delta-rs), ``bench_skipping`` (``--rows
N``, reuses the clustering tables), ``bench_index`` (its own size: 100,000 files, 10,000 with ``--quick``;
``--index-files`` overrides), ``bench_upsert`` (``--rows N``: 1% upserts vs delta-rs ``merge``) and
``bench_workload`` (``--rows N``: the ``qdtree`` layout vs curves and delta-rs). Output of each goes to
``bench/results/work/run_all_<module>.log``. A failing module does not stop the others; it is listed as failed.
Then the individual reports (``bench/results/<name>.md``) are stitched into ``REPORT.md`` (``REPORT_quick.md``
with ``--quick``) with, at the top, a summary of every target row (PASS / FAIL) found in them, and the run's
status per module.

Run: ``python -m bench.run_all --rows N [--quick] [--only a,b | --skip a,b] [--report-only]``
(``make bench`` = ``--rows $(BENCH_ROWS)``, 10M). ``--report-only`` re-stitches the existing reports.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .common import RESULTS_DIR, ROOT, WORK_DIR, command_line, git_commit, log, machine_info

MODULES = ["curves", "ingest", "clustering", "skipping", "index", "upsert", "workload"]
TITLES = {"curves": "Curve layouts vs plain range sort", "ingest": "Ingest", "clustering": "Clustering vs delta-rs",
          "skipping": "Data skipping", "index": "Column-stats index load", "upsert": "Upsert vs delta-rs merge",
          "workload": "Workload-aware layout (qdtree)"}


def module_argv(mod: str, rows: int | None, quick: bool, args: argparse.Namespace) -> list[str]:
    argv = [sys.executable, "-m", f"bench.bench_{mod}"]
    if quick:
        argv.append("--quick")
    if mod == "index":
        if args.index_files:
            argv += ["--rows", str(args.index_files)]
    elif rows is not None:
        argv += ["--rows", str(rows)]
        if mod == "curves":
            argv += ["--parts", str(max(1, rows // 10_000))]
    if args.work_dir:
        argv += ["--work-dir", args.work_dir]
    if args.master:
        argv += ["--master", args.master]
    return argv


def report_name(mod: str, quick: bool) -> str:
    return f"{mod}_quick" if quick else mod


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def target_rows(md: str) -> list[dict[str, str]]:
    """Every row of a Markdown table in ``md`` that has a PASS / FAIL cell, with its table's header."""
    out = []
    lines = md.splitlines()
    header: list[str] | None = None
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            header = None
            continue
        if i + 1 < len(lines) and re.match(r"^\|\s*:?-{3,}", lines[i + 1]):
            header = _cells(line)
            continue
        if re.match(r"^\|\s*:?-{3,}", line) or header is None:
            continue
        cells = _cells(line)
        if "PASS" not in cells and "FAIL" not in cells:
            continue
        row = dict(zip(header, cells))
        vi = cells.index("PASS") if "PASS" in cells else cells.index("FAIL")
        desc = cells[0]
        if len(header) > 1 and header[1] in ("what", "label") and cells[1]:
            desc = f"{cells[0]} ({cells[1]})"
        value = next((row[h] for h in ("value", "ratio", "median ratio", "x", "seconds") if h in row), "")
        target = next((cells[j] for j, h in enumerate(header) if h == "target" and cells[j] and j != 0), "")
        if not target:  # a verdict column named after its goal ("target <= 1.0")
            target = next((h[len("target "):] for h in header if h.startswith("target ")), "")
        out.append({"target": desc, "value": value, "goal": target, "verdict": cells[vi]})
    return out


def demote(md: str) -> str:
    """Headings one level down (the module's title becomes a ``##`` section)."""
    out = []
    fence = False
    for line in md.splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and re.match(r"^#{1,5} ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def report_date(name: str) -> str | None:
    p = RESULTS_DIR / f"{name}.json"
    try:
        return json.loads(p.read_text())["meta"]["date"]
    except (OSError, ValueError, KeyError):
        return None


def stitch(rows: int | None, quick: bool, status: dict[str, dict[str, Any]], started: float) -> Path:
    run_date = _dt.datetime.fromtimestamp(started, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    m = machine_info()
    summary = []
    bodies = []
    mod_rows = []
    for mod in MODULES:
        name = report_name(mod, quick)
        md_path = RESULTS_DIR / f"{name}.md"
        st = status.get(mod)
        date = report_date(name)
        if st is None:
            state = "not run (report from an earlier run)" if md_path.is_file() else "not run, no report"
        else:
            state = "ok" if st["rc"] == 0 else f"FAILED (exit {st['rc']}, see `{st['log']}`)"
        mod_rows.append(f"| {mod} | {state} | {st['seconds']:.0f} |" if st else f"| {mod} | {state} | |")
        if not md_path.is_file():
            continue
        text = md_path.read_text()
        stale = st is None or st["rc"] != 0
        for t in target_rows(text):
            note = (f"report of {date}" if not status else f"from an earlier run ({date})") if stale else ""
            summary.append(f"| {mod} | {t['target']} | {t['value']} | {t['goal']} | **{t['verdict']}** | {note} |")
        bodies.append(f"<a id=\"{mod}\"></a>\n\n" + demote(text)
                      + (f"\n\n> note: this section is from an earlier run ({date}), not from this one.\n"
                         if stale else ""))
    n_pass = sum(1 for s in summary if "**PASS**" in s)
    n_fail = sum(1 for s in summary if "**FAIL**" in s)
    lines = [f"# hudi_layout conn benchmark{' (quick)' if quick else ''}", "",
             f"- run started: {run_date}",
             f"- size: {f'{rows:,} rows' if rows else 'each module default'}"
             + (" (quick)" if quick else ""),
             f"- machine: {m['nproc']} cores, {m['ram_gib']} GiB RAM, {m['platform']} (shared: timings are noisy, "
             f"ratios are measured within one run)",
             f"- command: `{command_line()}`",
             f"- git commit: `{git_commit()}`", "",
             *(["> Stitched with `--report-only`: nothing was run by this command; each section is its module's "
                "latest report (date in the note column and in each section).", ""] if not status else []),
             "## Summary of targets", "",
             f"{n_pass} PASS, {n_fail} FAIL.", "",
             "| module | target | value | goal | verdict | note |", "| --- | --- | ---: | --- | --- | --- |",
             *summary, "",
             "## Modules", "", "| module | status | seconds |", "| --- | --- | ---: |", *mod_rows, "",
             "Sections: " + ", ".join(f"[{TITLES[m_]}](#{m_})" for m_ in MODULES), ""]
    out = RESULTS_DIR / ("REPORT_quick.md" if quick else "REPORT.md")
    out.write_text("\n".join(lines) + "\n\n" + "\n\n".join(bodies) + "\n")
    (RESULTS_DIR / out.with_suffix(".json").name).write_text(json.dumps(
        {"run_started": run_date, "rows": rows, "quick": quick, "modules": status,
         "summary": {"pass": n_pass, "fail": n_fail}}, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=None, help="conn rows for every conn benchmark (default: each "
                   "module's own: 10M, or its quick size with --quick)")
    p.add_argument("--quick", action="store_true", help="smoke-test sizes (reports named *_quick)")
    p.add_argument("--only", default=None, help=f"comma list of modules to run ({', '.join(MODULES)})")
    p.add_argument("--skip", default=None, help="comma list of modules not to run")
    p.add_argument("--index-files", type=int, default=None, help="files for bench_index (default its own)")
    p.add_argument("--report-only", action="store_true", help="run nothing; stitch the existing reports")
    p.add_argument("--work-dir", default=None, help=f"scratch folder (default {WORK_DIR})")
    p.add_argument("--master", default=None)
    args = p.parse_args(argv)
    mods = MODULES
    if args.only:
        mods = [m_.strip() for m_ in args.only.split(",") if m_.strip()]
    if args.skip:
        skip = {m_.strip() for m_ in args.skip.split(",")}
        mods = [m_ for m_ in mods if m_ not in skip]
    bad = [m_ for m_ in mods if m_ not in MODULES]
    if bad:
        p.error(f"unknown modules {bad}; expected {MODULES}")
    started = time.time()
    status: dict[str, dict[str, Any]] = {}
    log_dir = Path(args.work_dir) if args.work_dir else WORK_DIR
    log_dir.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        for mod in mods:
            cmd = module_argv(mod, args.rows, args.quick, args)
            lp = log_dir / f"run_all_{mod}.log"
            log(f"{mod}: {' '.join(cmd[1:])} (log: {lp})")
            t0 = time.time()
            with open(lp, "w") as fh:
                rc = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT).returncode
            secs = time.time() - t0
            rel = lp.relative_to(ROOT) if lp.is_relative_to(ROOT) else lp
            status[mod] = {"rc": rc, "seconds": round(secs, 1), "log": str(rel), "command": " ".join(cmd[1:])}
            log(f"{mod}: exit {rc} after {secs:.0f} s")
    out = stitch(args.rows, args.quick, status, started)
    log(f"report: {out}")
    return 0 if all(s["rc"] == 0 for s in status.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
