"""hudi_layout benchmarks (see bench/README.md). Run as modules: ``python -m bench.bench_curves --quick``."""
