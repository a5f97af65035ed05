# Two commands do everything on a fresh machine (Debian, Python 3.11, root):
#   make demo   - set up, then run the main job on a built-in sample
#   make test   - set up, then run every test (unit + Spark integration)
PY := .venv/bin/python
ROWS ?= 2000000
BENCH_ROWS ?= 10000000

.PHONY: setup demo test test-fast bench clean

setup:
	@bash scripts/bootstrap.sh

demo: setup
	$(PY) -m hudi_layout.tools.demo --rows $(ROWS)

test: setup
	@bash scripts/run_tests.sh

test-fast: setup
	$(PY) -m pytest -q -m "not integration" tests

bench: setup
	$(PY) -m bench.run_all --rows $(BENCH_ROWS)

clean:
	rm -rf .venv build *.egg-info .pytest_cache
