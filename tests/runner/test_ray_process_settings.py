"""A local Ray cluster started by the Ray executor, and the settings of the caller's
process that a CI job relies on (one real cluster for both, started under both).

``PYTHONWARNINGS=error``: Ray's own processes inherited it, a deprecation warning ended
Ray's dashboard process, and the cluster never started ("The current node timed out
during startup", exit 3 after 30 s). The cluster now starts without it; the episodes'
tasks still run with warnings as errors, as under the other executors.

``PYTHONBREAKPOINT``: ``ray.init`` points ``breakpoint()`` at Ray's debugger for the rest
of the process. A job that set ``PYTHONBREAKPOINT=0`` (so a stray ``breakpoint()`` does
nothing) stopped at the next one after its evaluation, waiting for a debugger. The
executor puts the caller's setting back when it closes."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from onrecord.runner import RayExecutor, plan_run
from onrecord.runner._raycluster import _warnings_for_tasks_only
from tests.runner.test_workers_probe import _walk

ray = pytest.importorskip("ray", reason="pip install 'onrecord[ray]'")
pytestmark = pytest.mark.ray


def walks_if_warnings_are_errors(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """To the goal, in a process where warnings are errors; else the episode's error."""
    if "error" not in sys.warnoptions:
        raise RuntimeError(f"this task runs without PYTHONWARNINGS=error: {sys.warnoptions}")
    return _walk(env)


def test_a_cluster_started_under_a_ci_jobs_settings_keeps_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if ray.is_initialized():
        pytest.skip("a Ray cluster is already connected")
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    agent = "tests.runner.test_ray_process_settings:walks_if_warnings_are_errors"
    protocol = plan_run("frozenlake", agent, seeds=[0, 1])
    with RayExecutor(workers=2) as executor:
        during = os.environ.get("PYTHONBREAKPOINT")
        results = list(executor.run(protocol.jobs("run-settings")))
    # The cluster started, and each task had warnings as errors.
    assert [(result.error, result.outcome) for result in results] == [(None, "pass")] * 2
    assert os.environ.get("PYTHONWARNINGS") == "error"
    # Ray's own breakpoint hook while its cluster ran: what is put back matters.
    assert during != "0"
    assert not ray.is_initialized()
    assert os.environ.get("PYTHONBREAKPOINT") == "0"


@pytest.mark.parametrize(
    ("given", "tasks_get"),
    [
        (None, {"env_vars": {"PYTHONWARNINGS": "error"}}),
        (
            {"env_vars": {"FLAG": "on"}, "pip": ["x"]},
            {"env_vars": {"PYTHONWARNINGS": "error", "FLAG": "on"}, "pip": ["x"]},
        ),
        # The caller's own runtime_env setting wins over the process's.
        ({"env_vars": {"PYTHONWARNINGS": "default"}}, {"env_vars": {"PYTHONWARNINGS": "default"}}),
        ({"env_vars": None}, {"env_vars": {"PYTHONWARNINGS": "error"}}),
    ],
)
def test_the_tasks_get_the_warnings_setting_and_rays_processes_do_not(
    monkeypatch: pytest.MonkeyPatch, given: dict[str, Any] | None, tasks_get: dict[str, Any]
) -> None:
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    copy = None if given is None else dict(given)
    with _warnings_for_tasks_only(given) as tasks_env:
        assert "PYTHONWARNINGS" not in os.environ  # what Ray's processes start with
        assert tasks_env == tasks_get
    assert os.environ["PYTHONWARNINGS"] == "error"
    assert given == copy  # the caller's runtime_env is not changed


def test_without_the_setting_the_runtime_env_is_passed_as_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYTHONWARNINGS", raising=False)
    given = {"env_vars": {"FLAG": "on"}}
    with _warnings_for_tasks_only(given) as tasks_env:
        assert tasks_env is given
    assert "PYTHONWARNINGS" not in os.environ
