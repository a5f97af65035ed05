#!/usr/bin/env bash
# Runs mypy on the package, ruff over the package, tests and benchmarks, then the whole suite. Fails when
# pytest collects or runs no test (exit code 5 is turned into a failure, and a run that passes fewer than
# MIN_PASSED tests fails too), so "no tests ran" can never pass silently.
set -uo pipefail
cd "$(dirname "$0")/.."
MIN_PASSED=${MIN_PASSED:-50}
# Types first: the package ships py.typed, so mypy (configured in pyproject.toml) must be clean.
if ! .venv/bin/python -m mypy hudi_layout; then
  echo "error: mypy found type errors in hudi_layout" >&2
  exit 1
fi
# Lint (ruff, configured in pyproject.toml) over the package, its tests and the benchmarks (about a second).
if ! .venv/bin/python -m ruff check hudi_layout tests bench; then
  echo "error: ruff found problems (ruff check --fix fixes the simple ones)" >&2
  exit 1
fi
log=$(mktemp)
.venv/bin/python -m pytest -p no:cacheprovider -q "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" = "5" ]; then echo "error: pytest ran no tests" >&2; exit 1; fi
if [ "$rc" != "0" ]; then exit "$rc"; fi
passed=$(grep -Eo '[0-9]+ passed' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
if [ "${passed:-0}" -lt "$MIN_PASSED" ]; then
  echo "error: only ${passed:-0} tests passed (expected at least $MIN_PASSED); refusing to report success" >&2
  exit 1
fi
exit 0
