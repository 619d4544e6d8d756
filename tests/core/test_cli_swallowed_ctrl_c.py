"""A Ctrl-C that lands where Python swallows it still ends the command as interrupted.

CI caught `onrecord demo` exiting 0 after a Ctrl-C: the signal arrived while a weakref
callback of importlib ran, Python printed "Exception ignored in: ... KeyboardInterrupt"
and the demo went on to the end. Here the same thing happens on purpose, in-process:
a weakref callback raises the SIGINT, exactly where the interpreter swallows it."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord.cli import demo
from onrecord.cli.main import main
from onrecord.episode import evaluate_episodes
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from onrecord.runner import RunStore
from onrecord.runner._interrupts import interrupts_kept

HERE = "tests.core.test_cli_swallowed_ctrl_c"


class _Anything:
    pass


def ctrl_c_swallowed() -> None:
    """Deliver SIGINT inside a weakref callback: its KeyboardInterrupt is "ignored"."""
    thing = _Anything()
    keep = weakref.ref(thing, lambda _ref: signal.raise_signal(signal.SIGINT))
    del thing  # the callback runs here, and Python swallows what it raised
    gc.collect()
    assert keep() is None


@pytest.fixture(autouse=True)
def ignored(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The "Exception ignored" reports, collected (pytest would fail the test on them)."""
    seen: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: seen.append(report.exc_type.__name__))
    yield seen
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_swallowing_is_real(ignored: list[str]) -> None:
    ctrl_c_swallowed()  # no KeyboardInterrupt here: only a report
    assert ignored == ["KeyboardInterrupt"]


def test_a_demo_that_swallowed_a_ctrl_c_says_interrupted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    ignored: list[str],
) -> None:
    def finishes_anyway(out: Path, args: Any) -> int:
        ctrl_c_swallowed()
        return 0  # before: the demo's exit code, as though nothing had happened

    monkeypatch.setattr(demo, "_run", finishes_anyway)
    out = tmp_path / "demo-output"
    assert main(["demo", "--output-dir", str(out)]) == 130
    err = capsys.readouterr().err
    assert f"onrecord demo: interrupted: {out} is incomplete" in err
    assert err.count("interrupted") == 1, err  # said once, by the demo
    assert (out / demo.MARKER).is_file()
    assert ignored == []  # before: Python's "Exception ignored" traceback under it


def test_a_demo_stops_in_the_run_whose_progress_swallowed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Real runs of the reference agents; the parent swallows the Ctrl-C while it counts
    # the first agent's first episode. Before: all eight agents' runs went on to their
    # end, then exit 0.
    real = demo._Counted.advance
    swallowed: list[bool] = []

    def advance(self: demo._Counted, result: Any) -> None:
        if not swallowed:
            swallowed.append(True)
            ctrl_c_swallowed()
        real(self, result)

    monkeypatch.setattr(demo._Counted, "advance", advance)
    out = tmp_path / "demo-output"
    code = main(["demo", "--output-dir", str(out), "--repeats", "1", "--workers", "1"])
    assert code == 130, capsys.readouterr().err
    ran = sorted(path.name for path in (out / "remittance").iterdir())
    assert ran == [next(iter(demo.AGENTS))]
    # It stopped right after the episode it was counting, as a Ctrl-C not swallowed does.
    assert len(list(RunStore.open(out / "remittance" / ran[0]).records())) == 1
    assert not list(out.glob("*.html"))


@pytest.mark.parametrize("outcome", ["verified", "refused"])
def test_any_command_that_swallowed_a_ctrl_c_exits_130(
    outcome: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import onrecord.cli.verify as verify_command

    task = frozenlake_task()
    episode = run_gym_task(task, FROZENLAKE_AGENTS["walks_to_goal"](), seed=1)
    report = evaluate_episodes([episode], list(task.checks)).save_json(tmp_path / "r.json")
    real = verify_command.run

    def run(args: Any) -> int:
        ctrl_c_swallowed()
        return real(args)

    monkeypatch.setattr(verify_command, "run", run)
    target = report if outcome == "verified" else tmp_path / "missing.json"
    assert main(["verify", str(target)]) == 130  # before: 0, or 3 for the missing file
    captured = capsys.readouterr()
    assert captured.err.strip() == "onrecord verify: interrupted"


# A sitecustomize that makes Python swallow a Ctrl-C the first time MODULE is looked up
# for import (by the command, while it loads): no timing, no signal from outside.
_SITECUSTOMIZE = """\
import os, signal, sys, weakref

class _Thing:
    pass

class _SwallowedCtrlC:
    target = os.environ["ONRECORD_TEST_SWALLOW_AT"]

    def find_spec(self, name, path=None, target=None):
        if name == self.target:
            sys.meta_path.remove(self)
            print(f"swallowed at {name}", file=sys.stderr, flush=True)
            thing = _Thing()
            ref = weakref.ref(thing, lambda _ref: signal.raise_signal(signal.SIGINT))
            del thing
        return None

sys.meta_path.insert(0, _SwallowedCtrlC())
"""


def test_the_installed_command_ends_as_interrupted_without_pythons_report(
    tmp_path: Path,
) -> None:
    (tmp_path / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    task = frozenlake_task()
    episode = run_gym_task(task, FROZENLAKE_AGENTS["walks_to_goal"](), seed=1)
    report = evaluate_episodes([episode], list(task.checks)).save_json(tmp_path / "r.json")
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [str(Path(sys.executable).parent / "onrecord"), "verify", str(report)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        # rich: imported by the command while it loads (NumPy no longer is, to verify)
        env={**os.environ, "PYTHONPATH": path, "ONRECORD_TEST_SWALLOW_AT": "rich"},
    )
    assert "swallowed at rich" in done.stderr  # the Ctrl-C came, inside the command
    # Before: exit 0 under "Exception ignored in: ... Traceback ... KeyboardInterrupt".
    assert done.returncode == 130, done.stderr
    assert "onrecord verify: interrupted" in done.stderr
    assert "Traceback" not in done.stderr
    assert "Exception ignored" not in done.stderr


def walks(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """FrozenLake's goal path; the Ctrl-C lands (not swallowed) in seed 1's episode."""
    if env.np_random_seed == 1:
        signal.raise_signal(signal.SIGINT)
    for action in (1, 1, 2, 2, 1, 2):
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "finished"
    return "gave up"


def test_a_command_that_reports_its_own_interrupt_is_not_reported_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    args = ["run", "frozenlake", "--agent", f"{HERE}:walks", "--seeds", "0-2"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert "interrupted; finished episodes are saved" in err
    assert "onrecord run: interrupted" not in err  # the command's own words only
    assert [record.key[1] for record in RunStore.open(out).records()] == [0]


def test_nested_guards_raise_once() -> None:
    # The inner guard raises on leaving; the outer one does not raise it again.
    with interrupts_kept() as outer:
        with pytest.raises(KeyboardInterrupt), interrupts_kept() as inner:
            ctrl_c_swallowed()
        assert inner is outer is not None
        assert not outer.pending
    # An interrupt the block itself reported and returned from: the caller clears it.
    with interrupts_kept() as noting:
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            assert noting is not None
            noting.pending = False
    with pytest.raises(KeyboardInterrupt), interrupts_kept():
        ctrl_c_swallowed()
