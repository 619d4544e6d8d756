"""The public API is curated: every package lists its names in a sorted ``__all__`` and
exports exactly those (httpx's test_exported_members, adapted)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import onrecord

PACKAGES = sorted(
    {
        "onrecord",
        *(
            info.name
            for info in pkgutil.walk_packages(onrecord.__path__, "onrecord.")
            if info.ispkg and not info.name.rsplit(".", 1)[-1].startswith("_")
        ),
    }
)


def _isort_key(name: str) -> tuple[int, str]:
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return (kind, name)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_exported(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # an optional extra that is not installed
        pytest.skip(f"{name} needs an optional extra: {exc}")
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert list(exported) == sorted(exported, key=_isort_key), (
        f"{name}.__all__ is not sorted (constants, classes, functions; as ruff's RUF022)"
    )
    for item in exported:
        assert hasattr(module, item), f"{name}.__all__ names {item}, which is missing"


def test_seed_import_paths() -> None:
    from onrecord import AcceptancePolicy, CheckRequirement, EvalCase  # noqa: F401
    from onrecord.episode import (  # noqa: F401
        EpisodeEvidence,
        OutcomeCheck,
        OutcomeVerdict,
        evaluate_episode,
    )
    from onrecord.integrations.gymnasium import capture_episode  # noqa: F401


def test_agent_setup_error_is_public() -> None:
    # Recorded in evidence when an agent builder raises or builds nothing: users match
    # on it, so it is importable without reaching into a private module.
    import onrecord.runner
    from onrecord.runner._provider import AgentSetupError

    assert "AgentSetupError" in onrecord.runner.__all__
    assert onrecord.runner.AgentSetupError is AgentSetupError
