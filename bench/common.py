"""Shared helpers for every benchmark in ``bench/``.

API (stable, used by bench_curves / bench_ingest / bench_index and the later bench_clustering /
bench_skipping / run_all):

* ``ROOT``, ``RESULTS_DIR`` (committed reports), ``WORK_DIR`` (git-ignored scratch: ``bench/results/work``).
* ``bench_arg_parser(description, default_rows, quick_rows=200_000)`` → ``argparse.ArgumentParser`` with
  ``--rows``, ``--quick``, ``--repeat``, ``--work-dir``, ``--keep``, ``--master``; then
  ``rows_of(args)`` gives the effective row count (``--rows`` wins, else quick/full default).
* ``spark_session(app, extra_conf=None, master=None)`` → SparkSession via
  ``hudi_layout.spark.session.get_spark`` (UI off).
* ``timed(fn, *a, **kw)`` → ``(seconds, result)``; ``Stopwatch`` context manager (``.seconds``);
  ``median(xs)``.
* ``fresh_dir(path)`` removes and recreates a directory; ``dir_size(path)``; ``parquet_files(path)``.
* ``footer_minmax(path_or_files, columns)`` → ``{column: (mins, maxs)}`` (lists of Python values), read
  from parquet footers only (no data pages); ``overlap_counts(mins, maxs, points)`` → numpy array with,
  for each point, the number of files whose ``[min, max]`` contains it; ``box_overlap(...)`` the same
  for multi-column points.
* ``machine_info()``, ``git_commit()``, ``command_line()`` (also written into every report by
  ``bench.report.write_report``).
* ``warmup_input(path, max_files=10)`` → a few files of a parquet folder (cheap untimed warm-up);
  ``read_parquet(spark, path_or_files)``.
* ``log(msg)`` prints a timestamped line to stderr (flushes; good for ``nohup`` logs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
WORK_DIR = RESULTS_DIR / "work"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- arguments -------------------------------------------------------------------------------------------

def bench_arg_parser(description: str, default_rows: int, quick_rows: int = 200_000) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--rows", type=int, default=None,
                   help=f"rows / size of the run (default {default_rows:,}; {quick_rows:,} with --quick)")
    p.add_argument("--quick", action="store_true", help="small smoke-test run (about a minute)")
    p.add_argument("--repeat", type=int, default=None, help="timed repetitions per variant (median reported)")
    p.add_argument("--work-dir", default=str(WORK_DIR), help="scratch folder for generated data")
    p.add_argument("--keep", action="store_true", help="keep generated outputs (inputs are always cached)")
    p.add_argument("--master", default=None, help="Spark master (default local[*])")
    p.add_argument("--name", default=None, help="report name under bench/results/ (default: the benchmark's own)")
    p.set_defaults(_default_rows=default_rows, _quick_rows=quick_rows)
    return p


def rows_of(args: argparse.Namespace) -> int:
    if args.rows is not None:
        return int(args.rows)
    return int(args._quick_rows if args.quick else args._default_rows)


# -- Spark -----------------------------------------------------------------------------------------------

def spark_session(app: str, extra_conf: Mapping[str, str] | None = None, master: str | None = None):
    from hudi_layout.spark.session import get_spark

    return get_spark(app, master=master, ui=False, extra_conf=extra_conf)


# -- timing ----------------------------------------------------------------------------------------------

def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


class Stopwatch:
    def __enter__(self) -> Stopwatch:
        self._t0 = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self._t0


def median(xs: Iterable[float]) -> float:
    xs = list(xs)
    return float(statistics.median(xs)) if xs else float("nan")


# -- files -----------------------------------------------------------------------------------------------

def fresh_dir(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if p.exists():
        shutil.rmtree(p)
    p.mkdir(parents=True)
    return p


def remove(path: str | os.PathLike[str]) -> None:
    shutil.rmtree(path, ignore_errors=True)


def dir_size(path: str | os.PathLike[str]) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass
    return total


def parquet_files(path: str | os.PathLike[str], *, skip_hidden_dirs: bool = True) -> list[str]:
    """All ``*.parquet`` files under ``path`` (skipping ``.hoodie`` and other hidden folders)."""
    out = []
    for dirpath, dirs, files in os.walk(path):
        if skip_hidden_dirs:
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        out.extend(os.path.join(dirpath, f) for f in files if f.endswith(".parquet") and not f.startswith("."))
    return sorted(out)


# -- per-file statistics -----------------------------------------------------------------------------------

def footer_minmax(path_or_files: str | os.PathLike[str] | Sequence[str], columns: Sequence[str]
                  ) -> dict[str, tuple[list[Any], list[Any]]]:
    """Per-file ``(mins, maxs)`` of ``columns`` from the parquet footers (metadata only). Files with a
    row group lacking statistics get ``None`` (treated as overlapping everything)."""
    import pyarrow.parquet as pq

    files = parquet_files(path_or_files) if isinstance(path_or_files, (str, os.PathLike)) else list(path_or_files)
    out: dict[str, tuple[list[Any], list[Any]]] = {c: ([], []) for c in columns}
    for f in files:
        md = pq.ParquetFile(f).metadata
        names = [md.schema.column(i).name for i in range(md.num_columns)]
        if md.num_rows == 0:
            continue
        for c in columns:
            ci = names.index(c)
            lo = hi = None
            for rg in range(md.num_row_groups):
                st = md.row_group(rg).column(ci).statistics
                if st is None or not st.has_min_max:
                    lo = hi = None
                    break
                lo = st.min if lo is None or st.min < lo else lo
                hi = st.max if hi is None or st.max > hi else hi
            out[c][0].append(lo)
            out[c][1].append(hi)
    return out


def _as_sorted_array(values: list[Any]) -> np.ndarray:
    if values and isinstance(values[0], (bytes, str)):
        return np.array(values, dtype=object)
    return np.array(values)


def overlap_counts(mins: Sequence[Any], maxs: Sequence[Any], points: Sequence[Any]) -> np.ndarray:
    """For each point, how many files have ``min <= point <= max`` (files without stats always count)."""
    n_files = len(mins)
    unknown = sum(1 for a, b in zip(mins, maxs) if a is None or b is None)
    lo = sorted(a for a, b in zip(mins, maxs) if a is not None and b is not None)
    hi = sorted(b for a, b in zip(mins, maxs) if a is not None and b is not None)
    import bisect

    out = np.empty(len(points), np.int64)
    for i, p in enumerate(points):
        # files with min <= p minus files with max < p
        out[i] = bisect.bisect_right(lo, p) - bisect.bisect_left(hi, p) + unknown
    assert (out <= n_files).all()
    return out


def box_overlap(stats: Mapping[str, tuple[Sequence[Any], Sequence[Any]]], points: Sequence[Mapping[str, Any]]
                ) -> np.ndarray:
    """For each multi-column point, the number of files whose box contains it on every column."""
    cols = list(stats)
    n = len(stats[cols[0]][0])
    out = np.empty(len(points), np.int64)
    for i, p in enumerate(points):
        ok = np.ones(n, bool)
        for c in cols:
            mins, maxs = stats[c]
            v = p[c]
            ok &= np.fromiter(((a is None or a <= v) and (b is None or v <= b) for a, b in zip(mins, maxs)),
                              bool, n)
        out[i] = int(ok.sum())
    return out


# -- environment -----------------------------------------------------------------------------------------

def machine_info() -> dict[str, Any]:
    ram = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    ram = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    import platform

    return {"nproc": os.cpu_count(), "ram_gib": ram, "python": platform.python_version(),
            "platform": platform.platform(), "hostname": platform.node()}


def git_commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "hudi_layout"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return sha + (" (hudi_layout/ has uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def command_line() -> str:
    argv = list(sys.argv)
    if argv and argv[0].endswith(".py"):
        mod = Path(argv[0]).resolve()
        try:
            rel = mod.relative_to(ROOT).with_suffix("")
            argv[0] = "-m " + ".".join(rel.parts)
        except ValueError:
            pass
    return "python " + " ".join(argv)


def library_versions() -> dict[str, str]:
    out = {}
    for name in ("pyspark", "pyarrow", "numpy", "hudi"):
        try:
            mod = __import__(name)
            out[name] = getattr(mod, "__version__", "?")
        except ImportError:
            pass
    return out


def warmup_input(input_path: str, max_files: int = 10) -> list[str] | str:
    """A few files of a parquet input folder (for a cheap untimed warm-up run; ``spark.read.parquet(*x)``)."""
    files = parquet_files(input_path)
    return files[:max_files] if files else input_path


def read_parquet(spark: Any, path_or_files: str | Sequence[str]) -> Any:
    """``spark.read.parquet`` of a folder or of a list of files."""
    paths = [path_or_files] if isinstance(path_or_files, (str, os.PathLike)) else list(path_or_files)
    return spark.read.parquet(*[str(p) for p in paths])


# -- streams of small upserts (bench_small_files, bench_timeline_growth) ------------------------------------

class UpsertStream:
    """Batches of ``updates`` stored keys and ``inserts`` new keys, and the model of the table they leave.

    ``make_row(key, round, value)`` builds a row; the model starts as rows ``0 .. rows-1`` of round 0."""

    def __init__(self, rows: int, make_row: Callable[[int, int, int], tuple[Any, ...]], *, seed: int,
                 value_range: int, first_values: Callable[[int], int]) -> None:
        self.rng = np.random.default_rng(seed)
        self.make_row = make_row
        self.value_range = value_range
        self.model = {i: make_row(i, 0, first_values(i)) for i in range(rows)}
        self.next_id = rows

    def initial_rows(self) -> list[tuple[Any, ...]]:
        return [self.model[i] for i in sorted(self.model)]

    def batch(self, round_no: int, updates: int, inserts: int) -> list[tuple[Any, ...]]:
        """The next batch (round ``round_no``), applied to the model."""
        stored = self.rng.choice(sorted(self.model), updates, replace=False).tolist()
        keys = [int(i) for i in stored] + list(range(self.next_id, self.next_id + inserts))
        self.next_id += inserts
        out = [self.make_row(k, round_no, int(self.rng.integers(0, self.value_range))) for k in keys]
        for row in out:
            self.model[row[0]] = row
        return out

    def read_as_model(self, spark: Any, path: str | os.PathLike[str], columns: Sequence[str]) -> bool:
        """Whether ``hudi_layout.read`` and hudi-rs both read the table as the model, each key once."""
        import hudi_layout
        from tests.helpers.integration import hudi_rs_read

        want = sorted(self.model.values())
        ours = sorted(tuple(x) for x in hudi_layout.read(str(path), spark=spark).select(*columns).collect())
        theirs = sorted(tuple(d[c] for c in columns) for d in hudi_rs_read(str(path)).select(list(columns))
                        .to_pylist())
        return ours == want and theirs == want
