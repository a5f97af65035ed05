"""Soak run of the read-path harness: N random steps over a few tables, every answer checked against the model.

    .venv/bin/python -m bench.soak_read_paths --steps 3000 [--seed 7] [--table-steps 80] [--name soak_read_paths]

Steps are drawn with fixed weights (queries through every entry point, time travel, incremental reads,
appends (half of them through the data source writer), upserts, deletes, whole-table and partition
overwrites, partition deletes, clusterings with each strategy and method, cleans, killed writers, schema
evolution, writers lagging a schema change with ``reconcile.schema``); every ``--table-steps`` steps a new
table is started. Mismatches are recorded, not fatal, and the run ends with the number of query checks (per
entry point) and mismatches (with the question and the step log) in ``bench/results/<name>.md`` / ``.json``.
Exit status 1 when a mismatch was found.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, log, spark_session
from bench.report import md_table, write_report
from tests.harness.read_paths import METHODS, STRATEGIES, Checker, ReadPathsHarness

STEPS: tuple[tuple[str, float], ...] = (
    ("query", 0.38), ("time_travel", 0.11), ("incremental", 0.11), ("append", 0.1), ("upsert", 0.07),
    ("delete", 0.04), ("overwrite", 0.02), ("overwrite_partitions", 0.03), ("delete_partition", 0.02),
    ("cluster", 0.09), ("clean", 0.04), ("kill_a_writer", 0.04), ("evolve", 0.04), ("lagging_writer", 0.03),
    ("session_time_zone", 0.04), ("query_commit_time", 0.06), ("compact", 0.04), ("rebuild_index", 0.02),
    ("savepoint", 0.03),
)

#: the steps that are one harness method without arguments (step name: method name)
HARNESS_STEPS = {"query": "query", "time_travel": "time_travel", "incremental": "incremental",
                 "upsert": "upsert", "delete": "delete", "lagging_writer": "write_lagging",
                 "overwrite_partitions": "overwrite_partitions", "delete_partition": "delete_partition",
                 "clean": "clean", "evolve": "evolve", "kill_a_writer": "crash_writer",
                 "session_time_zone": "set_zone", "query_commit_time": "query_commit_time", "compact": "compact",
                 "rebuild_index": "rebuild_index", "savepoint": "savepoint"}


def run(spark: Any, steps: int, seed: int, table_steps: int, work: Path, checker: Checker,
        progress_every: int = 50, focus: dict[str, float] | None = None) -> dict[str, Any]:
    rng = random.Random(seed)
    names, weights = zip(*[(n, (focus or {}).get(n, w)) for n, w in STEPS])
    counts: dict[str, int] = {}
    harness: ReadPathsHarness | None = None
    tables = 0
    started = time.time()
    errors: list[str] = []
    for step in range(steps):
        if harness is None or step % table_steps == 0:
            if harness is not None:
                harness.close()
            harness = ReadPathsHarness(spark, work, rng.randrange(2**32), checker, cli_every=3)
            harness.write("append", n=rng.choice([40, 150, 300]))
            tables += 1
            if harness.merge_on_read:
                counts["tables merge-on-read"] = counts.get("tables merge-on-read", 0) + 1
        name = rng.choices(names, weights)[0]
        if name in ("time_travel", "incremental") and len(harness.model.snapshots) < 2:
            name = "append"
        counts[name] = counts.get(name, 0) + 1
        mismatches_before = len(checker.mismatches)
        try:
            if name in ("append", "overwrite"):
                harness.write(name)
            elif name == "cluster":
                strategy = rng.choice(STRATEGIES)
                counts[f"cluster {strategy}"] = counts.get(f"cluster {strategy}", 0) + 1
                harness.cluster(strategy, rng.choice(METHODS))
            else:
                getattr(harness, HARNESS_STEPS[name])()
        except Exception as e:  # noqa: BLE001 - a failing step (not a query) is reported, the run goes on
            errors.append(f"step {step} {name}: {type(e).__name__}: {str(e)[:500]}")
            log(errors[-1])
            harness.close()
            harness = None
        for m in checker.mismatches[mismatches_before:]:
            m.detail += "\nsteps of this table:\n  " + "\n  ".join(harness.log[-12:] if harness else [])
            log(f"MISMATCH {m.entry_point}: {m.question[:200]}")
        if progress_every and (step + 1) % progress_every == 0:
            log(f"step {step + 1}/{steps}: {checker.checks} checks, {len(checker.mismatches)} mismatches, "
                f"{len(errors)} failed steps, {time.time() - started:.0f} s")
    if harness is not None:
        harness.close()
    return {"steps": steps, "tables": tables, "step_counts": counts, "failed_steps": errors,
            "seconds": round(time.time() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--table-steps", type=int, default=80, help="start a new table every N steps")
    p.add_argument("--name", default="soak_read_paths", help="report name under bench/results/")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--work-dir", default=None, help="scratch folder (default: a temporary folder)")
    p.add_argument("--results-dir", default=str(RESULTS_DIR), help="where the report goes")
    p.add_argument("--focus", action="append", default=[], metavar="STEP=WEIGHT",
                   help="another weight for a step (repeatable), e.g. savepoint=0.3 to restore often")
    args = p.parse_args(argv)
    focus = {}
    for item in args.focus:
        step, _, weight = item.partition("=")
        if step not in dict(STEPS):
            p.error(f"--focus: unknown step {step!r} (steps: {', '.join(n for n, _w in STEPS)})")
        focus[step] = float(weight)
    spark = spark_session("soak_read_paths", master=args.master,
                          extra_conf={"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "3g"})
    checker = Checker(record_only=True)
    with tempfile.TemporaryDirectory(dir=args.work_dir) as work:
        info = run(spark, args.steps, args.seed, args.table_steps, Path(work), checker, focus=focus)
    data = {**info, "query_checks": checker.checks, "mismatches": len(checker.mismatches),
            "checks_per_entry_point": dict(sorted(checker.per_entry_point.items())),
            "mismatch_details": [m.__dict__ for m in checker.mismatches[:200]]}
    rows = [[k, v] for k, v in sorted(checker.per_entry_point.items())]
    sections = [
        ("Result", f"**{checker.checks} query checks, {len(checker.mismatches)} mismatches** over {args.steps} "
                   f"steps on {info['tables']} tables in {info['seconds']} s (seed {args.seed}); "
                   f"{len(info['failed_steps'])} steps failed outside a query."),
        ("Checks per entry point", md_table(["entry point", "checks"], rows)),
        ("Steps", md_table(["step", "count"], sorted(info["step_counts"].items()))),
    ]
    if checker.mismatches:
        sections.append(("Mismatches (first 20)", "\n\n".join(
            f"- **{m.entry_point}**: `{m.question[:300]}`\n\n```\n{m.detail[:1500]}\n```"
            for m in checker.mismatches[:20])))
    if info["failed_steps"]:
        sections.append(("Failed steps", "\n".join(f"- {e}" for e in info["failed_steps"][:20])))
    out = write_report(args.name, "Read paths soak: every entry point against the model", sections, data,
                       results_dir=args.results_dir)
    log(f"{checker.checks} checks, {len(checker.mismatches)} mismatches -> {out}")
    return 1 if checker.mismatches or info["failed_steps"] else 0


if __name__ == "__main__":
    sys.exit(main())
