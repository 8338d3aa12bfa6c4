"""Proves actors/, orchestration/ and benchmarks/ hold no dead code, by running vulture over them with
the reviewed whitelist ci/vulture_whitelist.py and failing on any name it finds unused, and by
checking that every whitelisted name still exists in those packages."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("actors", "orchestration", "benchmarks")
WHITELIST = REPO_ROOT / "ci" / "vulture_whitelist.py"
# Vulture's lowest confidence: every unused function, method, attribute, property, variable and
# import it can see, not only the certain ones.
MIN_CONFIDENCE = 60


def test_vulture_finds_no_dead_code():
    result = subprocess.run(
        [sys.executable, "-m", "vulture", *PACKAGES, str(WHITELIST.relative_to(REPO_ROOT)),
         "--min-confidence", str(MIN_CONFIDENCE)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode in (0, 3), f"vulture failed to run:\n{result.stderr}"
    findings = result.stdout.strip()
    assert not findings, (
        "vulture finds code nothing uses; delete it, or, if something does use it (called by name, "
        f"a protocol, a wire field), list it with its reason in {WHITELIST.relative_to(REPO_ROOT)}:\n"
        + findings)


def whitelisted_names() -> set[str]:
    tree = ast.parse(WHITELIST.read_text(encoding="utf-8"))
    return {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "_"}


def test_every_whitelisted_name_still_exists():
    names = whitelisted_names()
    assert len(names) > 20, "the whitelist was not read"
    source = "\n".join(path.read_text(encoding="utf-8") for package in PACKAGES
                       for path in (REPO_ROOT / package).rglob("*.py") if "__pycache__" not in path.parts)
    gone = sorted(name for name in names if not re.search(rf"\b{re.escape(name)}\b", source))
    assert not gone, f"whitelisted in {WHITELIST.relative_to(REPO_ROOT)} but no longer in the code: {gone}"
