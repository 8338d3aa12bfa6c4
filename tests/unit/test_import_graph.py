"""Proves actors/ and orchestration/ have no import circles, by building their import graph with
ast (top-level, function-level and TYPE_CHECKING imports alike) and searching it for cycles."""
from __future__ import annotations

import ast
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("actors", "orchestration")


def project_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module under the project's packages."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = path.relative_to(REPO_ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules that ``name`` imports anywhere in its source, in any form.

    ``from package import name`` counts as an import of ``package.name`` when that is a module,
    and of ``package`` otherwise. Imports inside functions and under ``if TYPE_CHECKING:`` count
    too: deferring an import hides a circle from the interpreter, not from the reader.
    """
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                found.add(submodule if submodule in known else module)
    return {module for module in found if module in known and module != name}


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    known = set(modules)
    return {name: imported_modules(name, path, known) for name, path in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = lowlink[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                lowlink[node] = min(lowlink[node], lowlink[successor])
            elif successor in on_stack:
                lowlink[node] = min(lowlink[node], index[successor])
        if lowlink[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)


def test_cycle_finder_sees_a_circle_and_ignores_a_chain():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_import_resolution_sees_deferred_and_relative_imports(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from . import a\n")
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.b import B\n"
        "def f():\n"
        "    from .c import g\n"
    )
    (package / "a.py").write_text(source)
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c"}
    assert imported_modules("pkg.a", package / "a.py", known) == {"pkg.b", "pkg.c"}
    assert imported_modules("pkg", package / "__init__.py", known) == {"pkg.a"}


def test_the_graph_covers_both_packages():
    graph = import_graph()
    assert "actors.core.controller.controller" in graph
    assert any(name.startswith("orchestration.") for name in graph)


def test_actors_and_orchestration_have_no_import_circles():
    cycles = find_cycles(import_graph())
    assert not cycles, "import circles (each line is one group of modules that import each other):\n" + (
        "\n".join(" <-> ".join(cycle) for cycle in cycles)
    )


def test_every_first_party_import_names_something_that_exists():
    """Function-level imports are not run by importing a module, so a module moved to another room
    can leave one behind that only fails when its function runs (say, `raykafka load run`)."""
    import ast
    import importlib
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    first_party = ("actors", "orchestration", "tests", "benchmarks")
    missing = []
    for package in first_party:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                        and node.module.split(".")[0] in first_party):
                    continue
                where = f"{path.relative_to(root)}:{node.lineno}"
                if importlib.util.find_spec(node.module) is None:
                    missing.append(f"{where} {node.module}")
                    continue
                module = importlib.import_module(node.module)
                for alias in node.names:
                    if alias.name != "*" and not hasattr(module, alias.name) and \
                            importlib.util.find_spec(f"{node.module}.{alias.name}") is None:
                        missing.append(f"{where} {node.module}.{alias.name}")
    assert not missing, "imports of names that do not exist:\n" + "\n".join(missing)
