"""The dependency rule, enforced: layers (import-linter contract in pyproject.toml), no import cycle between
modules, no pyspark below the spark layer at runtime, and docs/ARCHITECTURE.md's table = the contract."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
PURE_PACKAGES = ("errors", "progress", "options", "format", "table", "curves", "metadata", "skipping", "scan", "writer",
                 "clustering", "compaction")


def _contract_layers() -> list[list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    return [[m.strip() for m in line.split("|")] for line in layers]


def test_import_linter_contracts_are_kept() -> None:
    """``lint-imports`` with the project's contracts (run in a subprocess: it reads its own settings)."""
    import importlinter  # noqa: F401 - a test dependency; a missing install must fail, not skip
    code = "from importlinter.cli import lint_imports_command; lint_imports_command(['--no-cache'])"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"an import breaks a contract of pyproject.toml:\n{done.stdout}\n{done.stderr}"
    assert "0 broken" in done.stdout, done.stdout


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; returns the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_cycle_between_modules() -> None:
    import grimp  # a test dependency; a missing install must fail, not skip
    g = grimp.build_graph("hudi_layout", exclude_type_checking_imports=True, cache_dir=None)
    graph = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    cycles = _strongly_connected(graph)
    assert not cycles, f"import cycles: {cycles}"


def test_strongly_connected_finds_a_cycle() -> None:
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _strongly_connected({"a": {"b"}, "b": set()}) == []


def test_pure_packages_do_not_import_pyspark() -> None:
    """Import every module of the pure packages in a fresh interpreter: pyspark must not be loaded."""
    code = (
        "import importlib, pkgutil, sys\n"
        f"for name in {PURE_PACKAGES!r}:\n"
        "    mod = importlib.import_module('hudi_layout.' + name)\n"
        "    for info in pkgutil.walk_packages(getattr(mod, '__path__', []), mod.__name__ + '.'):\n"
        "        importlib.import_module(info.name)\n"
        "loaded = sorted(m for m in sys.modules if m == 'pyspark' or m.startswith('pyspark.'))\n"
        "print(len([m for m in sys.modules if m.startswith('hudi_layout.')]))\n"
        "assert not loaded, loaded[:5]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) > 50  # the walk really imported the packages


def test_architecture_doc_lists_the_contract_layers() -> None:
    """docs/ARCHITECTURE.md's dependency table has one row per layer, in contract order, same packages."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    start = text.index("<!-- layers:begin -->")
    end = text.index("<!-- layers:end -->")
    rows = [line for line in text[start:end].splitlines() if line.startswith("|") and "`hudi_layout" in line]
    documented = [sorted(re.findall(r"`(hudi_layout[\w.]*)`", row.split("|")[2])) for row in rows]
    assert documented == [sorted(layer) for layer in _contract_layers()]
