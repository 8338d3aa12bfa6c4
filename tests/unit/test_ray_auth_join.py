"""Joining a Ray head that `ray start` started: raykafka's commands authenticate as `ray start`
decided (token authentication when a token exists and RAY_AUTH_MODE is unset), which
`ray.init(address=...)` alone does not do; checked in a fresh interpreter per case, since Ray
reads its configuration once per process."""
from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = """
import json, os
from orchestration.admin.detached import join_with_rays_auth
join_with_rays_auth()
print(json.dumps(os.environ.get("RAY_AUTH_MODE")))
"""


def _mode_after_join(env: dict[str, str], home) -> str | None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env={**clean, "HOME": str(home), **env},
                          capture_output=True, text=True, timeout=120, cwd=os.getcwd())
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_token_and_no_mode_means_token_authentication_as_ray_start_decides(tmp_path):
    assert _mode_after_join({"RAY_AUTH_TOKEN": "a" * 32}, tmp_path) == "token"
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("b" * 32)
    assert _mode_after_join({}, tmp_path) == "token"


def test_no_token_leaves_the_mode_unset_and_an_explicit_mode_wins(tmp_path):
    assert _mode_after_join({}, tmp_path) is None
    assert _mode_after_join({"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "a" * 32}, tmp_path) == "disabled"
