"""Helpers for the clustering / skipping integration tests (generated tables, readers, digests, subprocesses).

Readers compared by the tests:

* :func:`ours_arrow` — ``hudi_layout.read(path, spark=spark).toArrow()`` (Spark types);
* :func:`slices_arrow` — pyarrow over ``HudiTable.file_slices()`` (parquet types, meta columns kept);
* :func:`hudi_rs_arrow` — hudi-rs snapshot read (independent implementation).

Digests are only compared between reads by the same reader (Spark and parquet print some values
differently), before vs after a change.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.helpers.integration import hudi_rs_read, hudi_rs_slices, our_slices, rows_digest, timeline_files

# the names the clustering / skipping tests use for the shared readers of helpers.py
hudi_rs_arrow = hudi_rs_read
hudi_rs_slice_names = hudi_rs_slices
our_slice_names = our_slices

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def sorted_by(table: pa.Table, names: list[str]) -> pa.Table:
    return table.select(sorted(names))


# ------------------------------------------------------------------------------------------------ readers

def slices_arrow(path: str | os.PathLike[str]) -> pa.Table:
    """Every latest base file read with pyarrow (meta columns kept), one table."""
    from hudi_layout import HudiTable

    tables = [pq.read_table(s.base_file_path) for s in HudiTable(str(path)).file_slices()]
    if not tables:
        return pa.table({})
    # partition columns may be stored in the file or not; unify by promoting schemas
    return pa.concat_tables(tables, promote_options="default")


def ours_arrow(spark: Any, path: str | os.PathLike[str], where: Any = None) -> pa.Table:
    import hudi_layout

    return hudi_layout.read(str(path), where, spark=spark).toArrow()


def all_readers(spark: Any, path: str | os.PathLike[str]) -> dict[str, pa.Table]:
    return {"ours": ours_arrow(spark, path), "pyarrow-slices": slices_arrow(path),
            "hudi-rs": hudi_rs_arrow(path)}


def digests(spark: Any, path: str | os.PathLike[str]) -> dict[str, tuple[int, str | None]]:
    return {k: (t.num_rows, rows_digest(t)) for k, t in all_readers(spark, path).items()}


# ------------------------------------------------------------------------------------------------ timeline

def timeline_dir(path: str | os.PathLike[str]) -> Path:
    hoodie = Path(path) / ".hoodie"
    return hoodie / "timeline" if (hoodie / "timeline").is_dir() else hoodie


def completed_replacecommits(path: str | os.PathLike[str]) -> list[str]:
    """Requested times of completed replacecommits (v8/v9 ``T_C.replacecommit``)."""
    out = []
    for name in timeline_files(path):
        stem, _, action = name.partition(".")
        if action == "replacecommit":
            out.append(stem.split("_")[0])
    return sorted(out)


def pending_clusterings(path: str | os.PathLike[str]) -> list[str]:
    done = set(completed_replacecommits(path))
    out = set()
    for name in timeline_files(path):
        stem, _, action = name.partition(".")
        if action in ("clustering.requested", "clustering.inflight") and stem not in done:
            out.add(stem)
    return sorted(out)


# ------------------------------------------------------------------------------------------------ data

_PREFIX = "customer/region=europe-west/segment=enterprise/account-"


def typed_table(n: int = 2000, seed: int = 7, n_parts: int = 3) -> pa.Table:
    """Rows with nulls, negatives, NaN/±inf, decimals, dates and pre-1970 timestamps, long shared prefixes."""
    rng = np.random.default_rng(seed)
    ids = [f"k{i:06d}" for i in range(n)]

    def with_nulls(values: list[Any], frac: float = 0.05) -> list[Any]:
        mask = rng.random(len(values)) < frac
        return [None if m else v for v, m in zip(values, mask)]

    i32 = with_nulls([int(v) for v in rng.integers(-50_000, 50_000, n)])
    i64 = with_nulls([int(v) for v in rng.integers(-(2**62), 2**62, n)])
    dbl_raw = rng.normal(0, 1e6, n)
    specials = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0]
    for j, s in enumerate(specials * 8):
        dbl_raw[(j * 37) % n] = s
    dbl = with_nulls([float(v) for v in dbl_raw])
    dec = with_nulls([Decimal(int(v)).scaleb(-3) for v in rng.integers(-10**9, 10**9, n)])
    days = with_nulls([dt.date(1900, 1, 1) + dt.timedelta(days=int(v)) for v in rng.integers(0, 73_000, n)])
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    ts = with_nulls([epoch + dt.timedelta(microseconds=int(v))
                     for v in rng.integers(-2_200_000_000_000_000, 2_500_000_000_000_000, n)])
    strs = with_nulls([_PREFIX + f"{int(v):08d}" + ("x" * int(v % 5)) for v in rng.integers(0, 10**8, n)])
    flag = with_nulls([bool(v) for v in rng.integers(0, 2, n)])
    part = [f"p{int(v)}" for v in rng.integers(0, n_parts, n)]
    return pa.table({
        "id": pa.array(ids, pa.string()),
        "i32": pa.array(i32, pa.int32()),
        "i64": pa.array(i64, pa.int64()),
        "dbl": pa.array(dbl, pa.float64()),
        "dec": pa.array(dec, pa.decimal128(12, 3)),
        "day": pa.array(days, pa.date32()),
        "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "name": pa.array(strs, pa.string()),
        "flag": pa.array(flag, pa.bool_()),
        "part": pa.array(part, pa.string()),
    })


def grid_table(side: int = 64, seed: int = 3) -> pa.Table:
    """``side`` x ``side`` integer grid (x, y), one row per cell, shuffled."""
    rng = np.random.default_rng(seed)
    xs, ys = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    order = rng.permutation(side * side)
    x = xs.ravel()[order].astype(np.int32)
    y = ys.ravel()[order].astype(np.int32)
    return pa.table({"id": pa.array([f"g{a:03d}_{b:03d}" for a, b in zip(x, y)]), "x": x, "y": y,
                     "v": rng.random(side * side)})


def write_options(name: str, key: str = "id", partition: str | None = None, **extra: Any) -> dict[str, str]:
    opts = {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": key}
    if partition:
        opts["hoodie.datasource.write.partitionpath.field"] = partition
    opts.update({k: str(v) for k, v in extra.items()})
    return opts


def write_arrow(spark: Any, table: pa.Table, path: str | os.PathLike[str], options: dict[str, str], *,
                files: int = 8, mode: str = "append") -> None:
    """Write ``table`` through ``hudi_layout.write`` as about ``files`` randomly filled files."""
    from pyspark.sql import functions as F

    import hudi_layout

    df = spark.createDataFrame(table).repartition(files, F.rand(seed=11))
    hudi_layout.write(df, str(path), options, mode=mode)


def table_bytes(path: str | os.PathLike[str]) -> int:
    from hudi_layout import HudiTable

    return sum(s.size_bytes for s in HudiTable(str(path)).file_slices())


def column_spans(path: str | os.PathLike[str], columns: list[str]) -> dict[str, list[tuple[Any, Any]]]:
    """Per latest base file, each column's [min, max] (from the data, not the footer)."""
    from hudi_layout import HudiTable

    out: dict[str, list[tuple[Any, Any]]] = {c: [] for c in columns}
    for s in HudiTable(str(path)).file_slices():
        t = pq.read_table(s.base_file_path, columns=columns)
        for c in columns:
            arr = t.column(c).to_numpy()
            out[c].append((arr.min(), arr.max()))
    return out


# ------------------------------------------------------------------------------------------------ processes

def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for a child Python that imports hudi_layout from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PROJECT_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.update(extra)
    return env


def start_python(code: str, *args: str, log: Path, **env: str) -> subprocess.Popen[bytes]:
    """Start ``python -c code args...`` in its own session (so ``os.killpg`` takes its JVM too)."""
    with open(log, "wb") as fh:  # the child keeps its own copy of the descriptor
        return subprocess.Popen([sys.executable, "-c", code, *args], stdout=fh, stderr=subprocess.STDOUT,
                                cwd=str(PROJECT_ROOT), env=subprocess_env(**env), start_new_session=True)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group of ``proc`` (driver, JVM, and the Python workers left in it) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


def wait_for(cond: Any, timeout: float, interval: float = 0.05, proc: subprocess.Popen[bytes] | None = None) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        if proc is not None and proc.poll() is not None:
            return bool(cond())
        time.sleep(interval)
    return False


def tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except FileNotFoundError:
        return ""
