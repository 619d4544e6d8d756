"""What a step shows where it has no action or no state: ``onrecord show`` and the HTML
report's timeline both read it from here, so they say the same.

An action refused before it reached the environment has no encoding (``None``), and a
step whose observer raised has no state (``None``, the error in ``observer_error``):
"None" / "null" in their place said nothing of why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NOT_SENT", "OBSERVER_FAILED", "not_sent", "observer_failure"]

NOT_SENT = "not sent"
OBSERVER_FAILED = "observer failed"


def not_sent(attempt: Mapping[str, Any]) -> bool:
    """Whether the attempt's action never reached the environment (it has no encoding)."""
    return attempt["action"] is None and attempt["status"] != "ok"


def observer_failure(attempt: Mapping[str, Any]) -> str | None:
    """``observer failed: ERROR`` where the observer raised instead of giving a state."""
    error = attempt.get("observer_error")
    return f"{OBSERVER_FAILED}: {error}" if error else None
