"""Progress from the Python API: ``start_run``, ``resume_run`` and ``regrade_run`` take
``progress=True`` for the bar of ``onrecord run`` (plain lines where no bar is drawn, as
in a CI log or a notebook without widgets), a ``Progress`` object of the caller's, or
None/False (the default) for nothing. Real runs of the real environments, in-process and
in worker processes; stderr replaced by streams without a file descriptor, as Jupyter's."""

from __future__ import annotations

import io
import re
import sys
import types
import warnings
from collections.abc import Iterator
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from onrecord.runner import (
    ConsoleProgress,
    Executor,
    InProcessExecutor,
    JobResult,
    ProcessPoolExecutor,
    Progress,
    plan_run,
    regrade_run,
    resume_run,
    start_run,
)


class _OutStream:
    """Like ipykernel's ``OutStream`` for ``sys.stderr``: text is written, but there is
    no file descriptor (no ``fileno`` at all) and it is not a terminal."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def getvalue(self) -> str:
        return "".join(self.parts)


@pytest.fixture(autouse=True)
def _no_forced_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the environment running the tests says about colour and terminals."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "JUPYTER_COLUMNS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["inprocess", "process"])
def executor(request: pytest.FixtureRequest) -> Iterator[Executor]:
    if request.param == "inprocess":
        yield InProcessExecutor()
        return
    with ProcessPoolExecutor(2) as pool:
        yield pool


def _cartpole() -> Any:
    return plan_run("cartpole", "balances", seeds=[0, 1, 2], repeats=1)


def _lines(text: str) -> list[str]:
    assert not {c for c in text if ord(c) < 32 and c != "\n"}, repr(text)  # no ANSI codes
    return text.splitlines()


@pytest.mark.parametrize("stream", [io.StringIO, _OutStream])
def test_progress_true_writes_the_run_bar_lines_on_a_stderr_without_a_descriptor(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    executor: Executor,
    stream: type[io.StringIO] | type[_OutStream],
) -> None:
    err = stream()
    monkeypatch.setattr(sys, "stderr", err)
    result = start_run(tmp_path / "run", _cartpole(), executor=executor, progress=True)
    assert result.complete
    assert result.exit_code == 0
    lines = _lines(err.getvalue())
    # A line at the start and one at the end, the count reaching the total.
    assert lines[0].startswith("episodes 0/3 · "), lines
    assert lines[-1].startswith("episodes 3/3 · "), lines
    assert "· failed 0 · incomplete 0 · errors 0 · " in lines[-1]
    assert all(line.startswith("episodes ") for line in lines)


@pytest.mark.parametrize("quiet", [None, False])
def test_no_progress_writes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    quiet: bool | None,
) -> None:
    err = _OutStream()
    monkeypatch.setattr(sys, "stderr", err)
    start_run(tmp_path / "run", _cartpole(), progress=quiet)
    regrade_run(tmp_path / "run", name="again", progress=quiet)
    assert err.getvalue() == ""
    assert capsys.readouterr() == ("", "")
    start_run(tmp_path / "default", _cartpole())  # the default is silent too
    assert err.getvalue() == ""


def test_a_console_of_ones_own_draws_the_bar_on_a_terminal(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system="standard")
    start_run(tmp_path / "run", _cartpole(), progress=ConsoleProgress(console))
    drawn = out.getvalue()
    assert "\x1b[" in drawn  # a live bar, not plain lines
    assert "episodes" in drawn
    assert "3/3" in drawn
    assert "episodes 0/3 · " not in drawn  # no plain line beside the bar


@pytest.mark.parametrize("width", [80, 120])
def test_the_bar_keeps_its_times_whole_on_an_80_column_terminal(tmp_path: Path, width: int) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=width, color_system=None)
    start_run(tmp_path / "run", _cartpole(), progress=ConsoleProgress(console))
    final = [line for line in out.getvalue().replace("\r", "\n").splitlines() if "3/3" in line]
    assert final, out.getvalue()
    last = final[-1]
    assert "…" not in last  # the elapsed and remaining times were cut to 0:00:…
    assert re.search(r"\d:\d\d:\d\d\s+\d:\d\d:\d\d\s*$", last), last
    words = ("fail 0 · inc 0 · err 0", "failed 0 · incomplete 0 · errors 0")
    assert words[width >= 100] in last


class _Events(Progress):
    def __init__(self) -> None:
        self.events: list[Any] = []

    def start(self, total: int, done: int) -> None:
        self.events.append(("start", total, done))

    def advance(self, result: JobResult) -> None:
        self.events.append(("advance", result.outcome))

    def stop(self) -> None:
        self.events.append(("stop",))


def test_a_progress_of_ones_own_still_hears_every_episode(
    tmp_path: Path, executor: Executor
) -> None:
    events = _Events()
    start_run(tmp_path / "run", _cartpole(), executor=executor, progress=events)
    assert events.events == [("start", 3, 0), *[("advance", "pass")] * 3, ("stop",)]
    graded = _Events()
    regrade_run(tmp_path / "run", name="again", progress=graded)
    assert graded.events == events.events


class _Interrupting(Progress):
    def __init__(self, after: int) -> None:
        self.left = after

    def advance(self, result: JobResult) -> None:
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt


def test_regrade_run_with_progress_true(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    protocol = plan_run("remittance", "careful", tasks=["full-01", "full-02"], repeats=1)
    start_run(tmp_path / "run", protocol)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    regrade = regrade_run(tmp_path / "run", name="again", progress=True)
    assert not regrade.changes
    lines = _lines(err.getvalue())
    assert lines[0].startswith("episodes 0/2 · "), lines
    assert lines[-1].startswith("episodes 2/2 · "), lines


def test_resume_run_with_progress_true_counts_from_what_was_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    protocol = plan_run("frozenlake", "walks_to_goal", seeds=list(range(8)), repeats=1)
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C after 3 episodes
        start_run(tmp_path / "run", protocol, progress=_Interrupting(after=3))
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    result = resume_run(tmp_path / "run", progress=True)
    assert result.complete
    lines = _lines(err.getvalue())
    assert lines[0].startswith("episodes 3/8 · "), lines
    assert lines[-1].startswith("episodes 8/8 · "), lines


def test_one_console_progress_follows_two_runs(tmp_path: Path) -> None:
    out = io.StringIO()
    progress = ConsoleProgress(Console(file=out))
    start_run(tmp_path / "a", _cartpole(), progress=progress)
    start_run(tmp_path / "b", _cartpole(), progress=progress)
    lines = _lines(out.getvalue())
    # The second run counts its own episodes, not 6/3.
    assert lines[-1].startswith("episodes 3/3 · "), lines
    assert progress.done_now == 3


def _fake_notebook(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[object]]:
    """IPython's ``display`` and ipywidgets' ``Output``, as far as rich uses them."""
    shown: list[Any] = []
    widgets: list[object] = []

    class Output:
        def __init__(self) -> None:
            widgets.append(self)

        def __enter__(self) -> Output:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def clear_output(self, wait: bool = False) -> None:
            pass

    for name, attributes in {
        "IPython": {},
        "IPython.display": {"display": shown.append},
        "ipywidgets": {"Output": Output},
    }.items():
        module = types.ModuleType(name)
        module.__spec__ = ModuleSpec(name, None)
        for key, value in attributes.items():
            setattr(module, key, value)
        monkeypatch.setitem(sys.modules, name, module)
    return shown, widgets


def test_in_a_notebook_with_widgets_rich_draws_the_bar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown, widgets = _fake_notebook(monkeypatch)
    console = Console(file=io.StringIO(), force_jupyter=True)
    start_run(tmp_path / "run", _cartpole(), progress=ConsoleProgress(console))
    assert widgets, "no live widget: the notebook got plain lines instead of the bar"
    texts = [text for item in shown if (text := getattr(item, "text", ""))]
    assert "3/3" in texts[-1], texts
    assert not any(text.startswith("episodes 0/3 · ") for text in texts)


def test_in_a_notebook_without_widgets_plain_lines_and_no_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown, _ = _fake_notebook(monkeypatch)
    monkeypatch.delitem(sys.modules, "ipywidgets")
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *rest: None)
    console = Console(file=io.StringIO(), force_jupyter=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start_run(tmp_path / "run", _cartpole(), progress=ConsoleProgress(console))
    # rich warns 'install "ipywidgets" for Jupyter support' when it tries a bar there.
    assert not [w for w in caught if "ipywidgets" in str(w.message)]
    texts = [text for item in shown if (text := getattr(item, "text", ""))]
    assert texts[-1].startswith("episodes 3/3 · "), texts
