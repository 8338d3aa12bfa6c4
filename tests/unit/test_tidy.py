"""Proves actors.core stays a pure, sans-I/O core by parsing every module's imports with ast,
importing every module in a fresh interpreter and checking that ray, pyspark and asyncio were not
loaded, by checking that actors/__init__.py holds nothing but its docstring, and by counting the
lines of every module of actors/ and orchestration/: over 700 a pytest warning names the module,
over 1000 the test fails."""
from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
import warnings
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
ACTORS_DIR = REPO_ROOT / "actors"
CORE_DIR = ACTORS_DIR / "core"

# Top-level modules the core must not import: it takes time and randomness as arguments, does
# no I/O and never touches Ray or Spark (actors/core/__init__.py; docs/design.md).
# It reports through ``LogEvent`` effects rather than a logger, and knows nothing of the clients
# and tools outside.
FORBIDDEN_IMPORTS = frozenset({
    "ray", "asyncio", "threading", "socket", "time", "random", "os", "pyspark", "subprocess",
    "multiprocessing", "loguru", "orchestration",
})
# Modules that must not be loaded, even indirectly, by importing the whole core.
FORBIDDEN_LOADED = ("ray", "pyspark", "asyncio")
# How long a module may grow, for every module of the project's packages, not only the core. A
# class may own its whole story (ReplicaManager with its produce and fetch paths), so the bound is
# high: past MODULE_LINES_WARN a pytest warning names the module (in the run's warnings summary),
# and only past MODULE_LINES_MAX does the check fail.
MODULE_LINES_WARN = 700
MODULE_LINES_MAX = 1000
SIZE_CHECKED_DIRS = (ACTORS_DIR, REPO_ROOT / "orchestration")


def core_files() -> list[Path]:
    files = sorted(path for path in CORE_DIR.rglob("*.py") if "__pycache__" not in path.parts)
    assert files, f"no Python files under {CORE_DIR}"
    return files


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def forbidden_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) for each import of a forbidden top-level module in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue  # relative imports stay inside the project
        found += [(node.lineno, name) for name in names if name.split(".")[0] in FORBIDDEN_IMPORTS]
    return sorted(found)


def test_forbidden_import_checker_catches_every_form():
    source = (
        "import os.path\n"
        "from time import monotonic\n"
        "import json, ray\n"
        "from . import time\n"
        "import timeit\n"
        "from randomness import x\n"
        "def f():\n"
        "    import asyncio as aio\n"
        "from loguru import logger\n"
        "from orchestration.errors import KafkaError\n"
    )
    assert forbidden_imports(source) == [(1, "os.path"), (2, "time"), (3, "ray"), (8, "asyncio"),
                                         (9, "loguru"), (10, "orchestration.errors")]


def test_core_imports_nothing_forbidden():
    violations = [
        f"{path.relative_to(REPO_ROOT)}:{line}: imports {name}"
        for path in core_files()
        for line, name in forbidden_imports(path.read_text(encoding="utf-8"))
    ]
    assert not violations, "forbidden imports in actors/core:\n" + "\n".join(violations)


# Run in a fresh interpreter: imports each module given on the command line, then reports which
# failed to import and which forbidden modules ended up loaded.
IMPORT_PROBE = """
import importlib, json, sys
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as error:
        failed[name] = f"{type(error).__name__}: {error}"
forbidden = set(json.loads(FORBIDDEN))
loaded = sorted({m.split(".")[0] for m in sys.modules} & forbidden)
print(json.dumps({"failed": failed, "loaded": loaded}))
"""


def test_importing_every_core_module_loads_no_ray_pyspark_or_asyncio():
    unimportable_packages: list[str] = []
    discovered = {
        info.name
        for info in pkgutil.walk_packages(
            [str(CORE_DIR)], prefix="actors.core.", onerror=unimportable_packages.append,
        )
    }
    assert not unimportable_packages, f"packages that fail to import: {unimportable_packages}"
    # pkgutil skips directories without __init__.py; every file on disk must have been found,
    # or a module would escape this check (and the setuptools packaging) unnoticed.
    on_disk = {module_name(path) for path in core_files()} - {"actors.core"}
    missed = sorted(on_disk - discovered)
    assert not missed, f"modules pkgutil cannot reach (missing __init__.py?): {missed}"
    assert "actors.core.messages" in discovered and "actors.core.errors" in discovered

    probe = IMPORT_PROBE.replace("FORBIDDEN", repr(json.dumps(FORBIDDEN_LOADED)))
    result = subprocess.run(
        [sys.executable, "-c", probe, "actors.core", *sorted(discovered)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["loaded"] == [], f"importing actors.core loaded {report['loaded']}"
    assert report["failed"] == {}, "core modules that fail to import:\n" + "\n".join(
        f"{name}: {error}" for name, error in sorted(report["failed"].items())
    )


def test_actors_package_init_holds_only_its_docstring():
    init = ACTORS_DIR / "__init__.py"
    assert init.is_file()
    body = ast.parse(init.read_text(encoding="utf-8")).body
    assert body and ast.get_docstring(ast.Module(body=body, type_ignores=[])), "actors/__init__.py lists its rooms"
    assert len(body) == 1, "actors/__init__.py must hold nothing but its docstring (no imports, no code)"


class ModuleTooLongWarning(UserWarning):
    """A module past MODULE_LINES_WARN lines: allowed, but worth a look."""


def over_line_limits(counts: dict[str, int]) -> tuple[list[str], list[str]]:
    """(modules to warn about, modules that fail), each as "path: N lines", from line counts."""
    def named(low: int, high: float) -> list[str]:
        return [f"{name}: {count} lines" for name, count in sorted(counts.items()) if low < count <= high]
    return named(MODULE_LINES_WARN, MODULE_LINES_MAX), named(MODULE_LINES_MAX, float("inf"))


def test_line_limits_warn_past_the_lower_bound_and_fail_past_the_upper():
    counts = {"a.py": MODULE_LINES_WARN, "b.py": MODULE_LINES_WARN + 1, "c.py": MODULE_LINES_MAX,
              "d.py": MODULE_LINES_MAX + 1, "e.py": 10}
    assert over_line_limits(counts) == ([f"b.py: {MODULE_LINES_WARN + 1} lines", f"c.py: {MODULE_LINES_MAX} lines"],
                                        [f"d.py: {MODULE_LINES_MAX + 1} lines"])


def test_no_module_exceeds_the_line_limit():
    files = sorted(path for directory in SIZE_CHECKED_DIRS for path in directory.rglob("*.py")
                   if "__pycache__" not in path.parts)
    assert len(files) > len(core_files()), "the size check must see more than the core"
    counts = {str(path.relative_to(REPO_ROOT)): len(path.read_text(encoding="utf-8").splitlines()) for path in files}
    long, too_long = over_line_limits(counts)
    if long:
        warnings.warn(ModuleTooLongWarning(f"modules over {MODULE_LINES_WARN} lines: " + ", ".join(long)))
    assert not too_long, f"modules over {MODULE_LINES_MAX} lines:\n" + "\n".join(too_long)
