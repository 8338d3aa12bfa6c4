"""Proves the drivers can run where the simulator runs them: no module in actors/drivers imports
Ray, asyncio or a clock, and nothing outside actors/core reaches into a core's private attributes,
both checked by reading the source."""
from __future__ import annotations

import re
from pathlib import Path

from tests.unit.test_tidy import forbidden_imports

REPO_ROOT = Path(__file__).resolve().parents[2]
DRIVERS_DIR = REPO_ROOT / "actors" / "drivers"
# A core's private attribute, reached through an attribute named like a core (``core``,
# ``_core``, ``replica_manager``, ``lifecycle``): ``driver.core._states``, ``self._core._parked``.
PRIVATE_REACH = re.compile(r"\b_?(core|replica_manager|lifecycle|manager|queue)\._[a-z]")


def test_drivers_import_no_ray_asyncio_or_clock():
    violations = [f"{path.relative_to(REPO_ROOT)}:{line}: imports {name}"
                  for path in sorted(DRIVERS_DIR.glob("*.py"))
                  for line, name in forbidden_imports(path.read_text(encoding="utf-8"))]
    assert sorted(DRIVERS_DIR.glob("*.py")), "no drivers found"
    assert not violations, "forbidden imports in actors/drivers:\n" + "\n".join(violations)


def test_nothing_outside_the_core_reaches_into_a_core_private_attribute():
    outside = [p for p in sorted((REPO_ROOT / "actors").glob("**/*.py")) if "core" not in p.parts]
    outside += sorted((REPO_ROOT / "tests" / "support").glob("*.py"))
    violations = []
    for path in outside:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PRIVATE_REACH.search(line):
                violations.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not violations, "reaches into a core's private attributes:\n" + "\n".join(violations)


def test_the_private_reach_pattern_catches_what_it_names():
    assert PRIVATE_REACH.search("self._core._parked")
    assert PRIVATE_REACH.search("driver.core.replica_manager._wrap_records")
    assert not PRIVATE_REACH.search("self._core.replica_manager.partitions")


def test_the_ray_shells_reach_their_cores_only_through_drivers_and_public_queries():
    # The broker shell used to read and parse logs itself through ``_core.replica_manager``.
    shells = sorted((REPO_ROOT / "actors").glob("*.py"))
    violations = [f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}"
                  for path in shells
                  for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                  if "replica_manager" in line or "self._core" in line]
    assert not violations, "shells that step or read a core past its driver:\n" + "\n".join(violations)
