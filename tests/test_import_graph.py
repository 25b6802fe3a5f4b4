"""No import circle inside a package: the graph is read from the source with `ast`, so every
import counts, including those under `TYPE_CHECKING` and those made lazily inside a function
(a lazy import that undoes a layer is a circle in disguise)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: str, root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of `package` it imports anywhere in its source. `from a import b`
    points at `a.b` when that is a module, else at `a`. A package's `__init__` is not counted
    as imported by its submodules' importers: Python runs it, but these load names lazily."""
    files = {module_name(p, root): p for p in (root / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: from the module's package, up `level - 1` more
                    base = name.split(".")[: len(name.split(".")) - node.level + is_package]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.add(submodule if submodule in files else source)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path that ends where it starts, or None."""
    done: set[str] = set()
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(node: str) -> list[str] | None:
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt in on_stack:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in done and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        on_stack.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (cycle := visit(start)):
            return cycle
    return None


@pytest.mark.parametrize(
    "package",
    [
        "harness",
        "evals",
        "flows",
    ],
)
def test_no_import_circle_in_the_package(package: str) -> None:
    cycle = find_cycle(import_graph(package))
    assert cycle is None, f"import circle in {package}: {' -> '.join(cycle or [])}"


def test_the_graph_sees_type_checking_and_lazy_imports_and_finds_a_circle(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
    )
    (pkg / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    graph = import_graph("pkg", tmp_path)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"}}
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
    (pkg / "c.py").write_text("import json\n")
    assert find_cycle(import_graph("pkg", tmp_path)) is None


def subpackage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded onto the package's first level (`evals.run.cell` counts as
    `evals.run`): a circle here is two subpackages each reaching into the other, even when no
    two modules do. The package's own `__init__` is left out: it only names the public API."""
    top = next(iter(graph)).split(".")[0]

    def fold(module: str) -> str:
        return ".".join(module.split(".")[:2])

    folded: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if module == top:
            continue
        here = fold(module)
        folded.setdefault(here, set()).update(fold(t) for t in targets if t != top)
        folded[here].discard(here)
    return folded


@pytest.mark.parametrize("package", ["evals", "flows"])
def test_the_subpackages_import_one_way(package: str) -> None:
    cycle = find_cycle(subpackage_graph(import_graph(package)))
    assert cycle is None, f"subpackages of {package} import both ways: {' -> '.join(cycle or [])}"


def test_a_circle_between_subpackages_is_found_without_a_module_circle(tmp_path: Path) -> None:
    for folder in ("pkg", "pkg/low", "pkg/high"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "pkg/low/a.py").write_text("")
    (tmp_path / "pkg/low/b.py").write_text("from pkg.high import c\n")
    (tmp_path / "pkg/high/c.py").write_text("from pkg.low import a\n")
    graph = import_graph("pkg", tmp_path)
    assert find_cycle(graph) is None
    assert find_cycle(subpackage_graph(graph)) == ["pkg.high", "pkg.low", "pkg.high"]
