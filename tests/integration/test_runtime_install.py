"""``pip install hudi_layout`` without extras is enough for the commands that need no Spark.

A venv gets the package with its runtime dependencies only (no test / bench extras), then runs ``inspect``,
``explain``, ``report`` (pictures included: matplotlib is a runtime dependency) and ``index`` on a real
table. pyspark is left out on purpose (``--no-deps`` + the other runtime dependencies): it is the one
heavy dependency, and these commands must not need it at all. The venv is kept under the temp folder,
keyed by the dependency list, so reruns take seconds.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _runtime_dependencies() -> list[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if re.split(r"[<>=!~ \[]", d, maxsplit=1)[0].lower() != "pyspark"]


def _venv(deps: list[str]) -> Path:
    key = hashlib.sha256("\n".join([sys.version, *deps]).encode()).hexdigest()[:12]
    venv = Path(os.environ.get("TMPDIR", "/tmp")) / f"hudi_layout-runtime-venv-{key}"
    python = venv / "bin" / "python"
    if not (venv / ".ready").is_file():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        done = subprocess.run([*pip, *deps], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            pytest.skip(f"cannot install the runtime dependencies here: {done.stderr[-500:]}")
        (venv / ".ready").touch()
    return venv


def test_no_spark_commands_work_with_runtime_dependencies_only(fixture_table, tmp_path: Path) -> None:
    venv = _venv(_runtime_dependencies())
    python = venv / "bin" / "python"
    # the project itself, freshly, without dependencies (they are in the venv already, minus pyspark), from
    # a copy of what its distribution holds
    src = tmp_path / "src"
    shutil.copytree(ROOT / "hudi_layout", src / "hudi_layout", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           "--force-reinstall", str(src)], timeout=600, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    missing = subprocess.run([str(python), "-c", "import importlib.util as u; print([m for m in "
                              "('pyspark', 'pytest', 'hypothesis', 'hudi', 'deltalake') if u.find_spec(m)])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert missing == "[]", f"the venv holds more than the runtime dependencies: {missing}"
    cli = venv / "bin" / "hudi-layout"
    table = fixture_table("cow_v9_txns_simple_meta.zip")
    bare = fixture_table("cow_v9_txns_simple_nometa.zip")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    for args in (["inspect", str(table)],
                 ["explain", str(table), "WHERE region = 'us'"],
                 ["report", str(table), "--columns", "amount,txn_id", "--out", str(tmp_path / "r"),
                  "--where", "amount > 100"],
                 ["index", str(bare)],
                 ["cluster", str(table), "--columns", "amount,txn_id", "--dry-run", "-o",
                  "hoodie.metadata.enable=false"]):
        done = subprocess.run([str(cli), *args], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                              env=env)
        assert done.returncode == 0, f"{args}: {done.stderr[-2000:]}"
    assert (tmp_path / "r" / "layout_boxes.png").is_file() and (tmp_path / "r" / "query_files.png").is_file()
