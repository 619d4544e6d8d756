"""``ray.init`` points ``breakpoint()`` at Ray's debugger for the rest of the process,
over the caller's ``PYTHONBREAKPOINT``. A CI job that sets ``PYTHONBREAKPOINT=0`` (so a
stray ``breakpoint()`` does nothing) and ran an evaluation on a local Ray cluster then
stopped at the next ``breakpoint()``, waiting for a debugger. The Ray executor that
started the cluster puts the caller's setting back when it closes."""

from __future__ import annotations

import os

import pytest

from onrecord.runner import RayExecutor, plan_run

ray = pytest.importorskip("ray", reason="pip install 'onrecord[ray]'")
pytestmark = pytest.mark.ray


def test_closing_the_executor_gives_the_caller_its_breakpoint_hook_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if ray.is_initialized():
        pytest.skip("a Ray cluster is already connected")
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    protocol = plan_run("frozenlake", "walks_to_goal", seeds=[0])
    with RayExecutor(workers=1) as executor:
        during = os.environ.get("PYTHONBREAKPOINT")
        results = list(executor.run(protocol.jobs("run-hook")))
    assert [result.error for result in results] == [None]
    assert during != "0"  # Ray's own hook while its cluster ran: what is put back matters
    assert not ray.is_initialized()
    assert os.environ.get("PYTHONBREAKPOINT") == "0"
