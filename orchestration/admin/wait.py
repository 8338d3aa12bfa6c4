"""Waiting for a condition from outside the cluster: poll it, bounded, and say what was awaited."""
from __future__ import annotations

import time

POLL_INTERVAL_S = 0.05


def wait_until(condition, timeout_s: float, what: str):
    """Poll ``condition`` until it returns something truthy; bounded by ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last_error = None
    while time.monotonic() < deadline:
        try:
            result = condition()
            if result:
                return result
        except Exception as exc:  # an actor restarting: keep polling
            last_error = exc
        time.sleep(POLL_INTERVAL_S)
    raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}"
                       + (f" (last error: {last_error!r})" if last_error else ""))
