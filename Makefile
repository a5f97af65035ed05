# Two commands do everything on a fresh machine (Debian, Python 3.11, root):
#   make demo   - set up, then run the main job on a built-in sample
#   make test   - set up, then run every test (unit + Spark integration)
PY := .venv/bin/python
ROWS ?= 2000000
BENCH_ROWS ?= 10000000

.PHONY: setup demo test test-fast bench clean readme-image

setup:
	@bash scripts/bootstrap.sh

demo: setup
	$(PY) -m hudi_layout.tools.demo --rows $(ROWS)

# The README's picture: the demo's query drawn over the layouts after / before clustering (run `make demo` first)
readme-image: setup
	$(PY) -m hudi_layout.tools.cli report demo-output/conn --compare demo-output/conn_as_ingested \
	  --label hilbert --compare-label "as ingested" --columns src_port,dst_port \
	  --where "src_port BETWEEN 1000 AND 1999 AND dst_port BETWEEN 20000 AND 20999" --out demo-output/readme
	cp demo-output/readme/query_files.png docs/images/demo_query_files.png

test: setup
	@bash scripts/run_tests.sh

test-fast: setup
	$(PY) -m pytest -q -m "not integration" tests

bench: setup
	$(PY) -m bench.run_all --rows $(BENCH_ROWS)

clean:
	rm -rf .venv build *.egg-info .pytest_cache
