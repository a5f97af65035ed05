"""Fixtures shared by the unit tests (tests/unit/) and the Spark end-to-end tests (tests/integration/).

The real-Hudi fixtures live in ``../shared`` beside the project (CI has it; a user's clone may not).
Tests that need them use the ``shared_dir`` / ``fixture_tables`` / ``hfile_fixtures`` fixtures and are
skipped with a clear reason when the folder is missing.
"""

from __future__ import annotations

import importlib.util
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent
SHARED_DIR = PROJECT_ROOT.parent / "shared"


def _require_shared() -> Path:
    if not (SHARED_DIR / "fixtures").is_dir():
        pytest.skip(f"needs the shared fixtures folder {SHARED_DIR} (not present in this checkout)")
    return SHARED_DIR


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return _require_shared()


@pytest.fixture(scope="session")
def shared_rows_digest(shared_dir: Path) -> Callable[[Any], str | None]:
    """``rows_digest`` of ``../shared/tools/rows_digest.py``: the digest EXPECTED.json was made with."""
    spec = importlib.util.spec_from_file_location("shared_rows_digest", shared_dir / "tools" / "rows_digest.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.rows_digest


@pytest.fixture(scope="session")
def expected_tables(shared_dir: Path) -> dict[str, dict[str, Any]]:
    """EXPECTED.json keyed by zip file name."""
    entries = json.loads((shared_dir / "fixtures" / "hudi-tables" / "EXPECTED.json").read_text())
    return {e["zip"]: e for e in entries}


def unzip_table(zip_path: Path, dest: Path, table_dir: str) -> Path:
    """Extract one fixture zip under ``dest`` and return the table's base path."""
    with zipfile.ZipFile(zip_path) as zf:
        members = [m for m in zf.namelist() if not m.startswith("__MACOSX")]
        zf.extractall(dest, members)
    candidates = [p for p in dest.rglob("hoodie.properties") if p.parent.name == ".hoodie"]
    bases = sorted({p.parent.parent for p in candidates if ".hoodie/metadata" not in str(p)}, key=lambda p: len(str(p)))
    for base in bases:
        if base.name == table_dir:
            return base
    if not bases:
        raise FileNotFoundError(f"no Hudi table inside {zip_path}")
    return bases[0]


@pytest.fixture()
def fixture_table(shared_dir: Path, expected_tables: dict[str, dict[str, Any]], tmp_path: Path):
    """Factory: ``fixture_table("cow_v9_txns_simple_meta.zip")`` -> fresh extracted copy (safe to modify)."""

    def make(zip_name: str) -> Path:
        entry = expected_tables[zip_name]
        dest = tmp_path / zip_name.removesuffix(".zip")
        dest.mkdir()
        return unzip_table(shared_dir / "fixtures" / "hudi-tables" / zip_name, dest, entry["table_dir"])

    return make


@pytest.fixture(scope="session")
def hfile_fixtures(shared_dir: Path) -> list[Path]:
    return sorted((shared_dir / "fixtures" / "hfile").glob("*.hfile"))


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test run (created only when a test asks for it)."""
    pytest.importorskip("pyspark")
    from hudi_layout.spark.session import get_spark

    session = get_spark(app_name="hudi_layout-tests", master="local[2]", ui=False,
                        extra_conf={"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()
