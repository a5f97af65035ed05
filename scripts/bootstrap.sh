#!/usr/bin/env bash
# Prepare a fresh Debian machine: Java 17 (for Spark) if missing, a .venv with the package and its extras.
# Idempotent: re-running only re-checks. Used by `make demo`, `make test`, `make bench` and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v java >/dev/null 2>&1; then
  if [ "$(id -u)" != "0" ]; then
    echo "error: Java is missing and this is not root; install Java 17 (e.g. 'sudo apt-get install openjdk-17-jre-headless') and re-run." >&2
    exit 1
  fi
  echo "==> installing Java 17 with apt"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.hudi_layout-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "==> installing hudi_layout and its test/bench extras into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -U pip 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,bench]" 2>&1 | grep -v "^WARNING: Location" || true
  # the project folder on sys.path too: Spark's discovery of Python data sources (modules named pyspark_*,
  # in every new session) lists sys.path, where the editable install's import hook does not show
  # pyspark_hudi_layout, and spark.newSession() then did not know the format
  HUDI_LAYOUT_ROOT="$(pwd)" .venv/bin/python -c "import os, pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()['purelib'], 'hudi_layout_project.pth').write_text(os.environ['HUDI_LAYOUT_ROOT'] + '\n')"
  .venv/bin/python -c "import hudi_layout, pyspark, pyarrow, fastavro, xxhash, hudi" 
  touch "$stamp"
fi
