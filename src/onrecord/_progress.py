"""Progress on stderr, shared by the command line and the Python API: the episode bar of
``onrecord run`` and ``regrade`` (``ConsoleProgress``, also ``start_run(...,
progress=True)``), the steps of ``onrecord worldmodel run`` and ``ledger run`` (also
``progress=True`` of their Python entry points) and the count of ``onrecord verify RUN``
and of ``onrecord demo`` (on stdout there); plain lines where no bar is drawn. (Not
under ``cli``: the runner and the experiments use it, and must not import the command
line.)"""

from __future__ import annotations

import importlib.util
import sys
import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

# From their own module: ``onrecord.runner``'s Progress came from ``_run``, which imports
# every environment's code (Gymnasium too), and verify, show, gate and compare import this.
from onrecord.runner._job import JobResult
from onrecord.runner._job import Progress as RunProgress

__all__ = ["ConsoleProgress", "CountProgress", "StepProgress", "note"]


LINE_INTERVAL = 10.0
"""Seconds between the plain progress lines written where no bar is drawn."""


def _live(console: Console) -> bool:
    """Whether ``console`` redraws a bar: a terminal that is not ``TERM=dumb``, or a
    Jupyter notebook where rich can draw one (it needs ipywidgets there, and only warns
    without them: plain lines instead, each its own output)."""
    if console.is_jupyter:
        return _has_widgets()
    return console.is_terminal and not console.is_dumb_terminal


def _has_widgets() -> bool:
    try:
        return importlib.util.find_spec("ipywidgets") is not None
    except (ImportError, ValueError):  # a module in sys.modules without a spec
        return "ipywidgets" in sys.modules


NARROW = 100
"""Terminal columns below which the episode bar is abbreviated (``_episode_columns``)."""


def _episode_columns(console: Console) -> list[ProgressColumn]:
    """The bar's columns. On a terminal narrower than ``NARROW`` columns the label goes,
    the bar halves and the counts are abbreviated: whole, they cut the elapsed and
    remaining times to ``0:00:…`` at 80 columns."""
    narrow = console.width < NARROW
    names = ("fail", "inc", "err") if narrow else ("failed", "incomplete", "errors")
    counts = (
        f"[red]{names[0]} {{task.fields[failed]}}[/] · [yellow]{names[1]} "
        f"{{task.fields[incomplete]}}[/] · [magenta]{names[2]} {{task.fields[errors]}}"
    )
    label = [] if narrow else [TextColumn("[bold]episodes")]
    return [
        *label,
        BarColumn(bar_width=14 if narrow else 40),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]} ep/s"),
        TextColumn(counts),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]


class _Lines:
    """The plain lines written instead of a bar (a CI log, a file, ``TERM=dumb``): text
    without markup or control characters, and at most one every ``LINE_INTERVAL``
    seconds unless the caller has a reason (a start, an end)."""

    def __init__(self, console: Console, *, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled and not _live(console)
        self.last = time.perf_counter()

    def due(self) -> bool:
        """Whether ``LINE_INTERVAL`` seconds have passed since the last line."""
        return time.perf_counter() - self.last >= LINE_INTERVAL

    def write(self, text: str) -> None:
        if not self.enabled:
            return
        self.last = time.perf_counter()
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)


def note(console: Console, text: str) -> None:
    """``text`` as a plain line where no bar or spinner is drawn (a CI log, a file,
    ``TERM=dumb``): there a spinner shows nothing, and the log stayed silent until the
    results. Nothing where one is drawn: the bar or spinner says it."""
    _Lines(console, enabled=True).write(text)


class ConsoleProgress(RunProgress):
    """The episode bar of ``onrecord run``: episodes done of the total, episodes per
    second, failed, incomplete and errors so far, elapsed and remaining time, drawn on
    ``console`` (default: a rich ``Console`` on ``sys.stderr``). Where no bar can be drawn
    (stderr is a CI log or a file, or ``TERM=dumb``) it writes a plain line at the start,
    at most one every ``LINE_INTERVAL`` seconds and one at the end: no control
    characters, and a long run no longer leaves the log silent until the summary (CI
    systems end a job that prints nothing for some minutes). ``enabled=False`` writes
    nothing. One object can follow several runs in turn: ``start`` resets the counts."""

    def __init__(self, console: Console | None = None, *, enabled: bool = True) -> None:
        # Console(stderr=True) looks sys.stderr up on every write: a stream replaced
        # later (pytest's capture, a notebook's) is the one written to.
        console = console or Console(stderr=True, soft_wrap=True)
        self.console = console
        self.failed = self.incomplete = self.errors = self.done_now = 0
        self.total = self.done_before = 0
        self._started = time.perf_counter()
        self._lines = _Lines(console, enabled=enabled)
        self._bar = Progress(
            *_episode_columns(console),
            console=console,
            disable=not enabled or not _live(console),
            transient=False,
        )
        self._task = self._bar.add_task("run", total=0, rate="-", failed=0, incomplete=0, errors=0)

    def start(self, total: int, done: int) -> None:
        self._started = self._lines.last = time.perf_counter()
        self.failed = self.incomplete = self.errors = self.done_now = 0
        self.total, self.done_before = total, done
        self._bar.update(
            self._task, total=total, completed=done, rate="-", failed=0, incomplete=0, errors=0
        )
        self._bar.start()
        self._line()

    def advance(self, result: JobResult) -> None:
        self.done_now += 1
        if result.error is not None:
            self.errors += 1
        elif result.outcome == "fail":
            self.failed += 1
        elif result.outcome == "incomplete":
            self.incomplete += 1
        self._bar.update(
            self._task,
            advance=1,
            rate=f"{self.rate:.1f}",
            failed=self.failed,
            incomplete=self.incomplete,
            errors=self.errors,
        )
        if self._lines.due():
            self._line()

    def _line(self) -> None:
        self._lines.write(
            f"episodes {self.done_before + self.done_now}/{self.total} · {self.rate:.1f} ep/s "
            f"· failed {self.failed} · incomplete {self.incomplete} · errors {self.errors} "
            f"· {self.elapsed:.0f} s"
        )

    @property
    def rate(self) -> float:
        """Episodes per second in this invocation."""
        return self.done_now / max(time.perf_counter() - self._started, 1e-9)

    @property
    def elapsed(self) -> float:
        """Seconds since start."""
        return time.perf_counter() - self._started

    def stop(self) -> None:
        # rich's Live draws no last frame in a notebook: the bar stayed at its last
        # automatic refresh (0/3 on a run shorter than one), not at the count reached.
        self._bar.refresh()
        self._bar.stop()
        self._line()


class StepProgress:
    """Progress of a command made of ``total`` named steps (``onrecord worldmodel run``):
    a transient bar on a terminal. Where no bar is drawn (a CI log, a file, ``TERM=dumb``)
    a plain line ``NAME 5/17 · heldout forecasts done · 3 s`` after the first step, at
    most one every ``LINE_INTERVAL`` seconds, and one after the last step (or the step
    reached when stopped early): before, such a log stayed silent until the results."""

    def __init__(self, console: Console, name: str, total: int, *, enabled: bool = True) -> None:
        self.name, self.total = name, total
        self.done = self._shown = 0
        self.label = ""
        self._started = time.perf_counter()
        self._lines = _Lines(console, enabled=enabled)
        self._bar = Progress(
            console=console, transient=True, disable=not enabled or not _live(console)
        )
        self._task = self._bar.add_task(name, total=total)

    def __enter__(self) -> StepProgress:
        self._started = self._lines.last = time.perf_counter()
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def step(self, label: str) -> None:
        """One step, ``label``, is done."""
        self.done += 1
        self.label = label
        self._bar.update(self._task, advance=1, description=label)
        if self._shown == 0 or self.done >= self.total or self._lines.due():
            self._line()

    def stop(self) -> None:
        """Remove the bar; a last line when the log has not shown the step reached."""
        self._bar.stop()
        if self.done > self._shown:
            self._line()

    def _line(self) -> None:
        self._shown = self.done
        # A step more than planned reads 18/18, not 18/17.
        self._lines.write(
            f"{self.name} {self.done}/{max(self.total, self.done)} · {self.label} done · "
            f"{time.perf_counter() - self._started:.0f} s"
        )


class CountProgress:
    """A count towards a total (``onrecord verify RUN``: its episodes): a transient bar on
    a terminal; where none is drawn, a plain line ``NAME 0/2970 · 0 s`` on ``start``, at
    most one every ``LINE_INTERVAL`` seconds, and one on ``stop`` with the count reached
    (the work ``stop`` ends may include more than the count: its time is in that line)."""

    def __init__(self, console: Console, name: str, *, enabled: bool = True) -> None:
        self.name = name
        self.done = self.total = 0
        self.running = False
        self._started = time.perf_counter()
        self._lines = _Lines(console, enabled=enabled)
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            disable=not enabled or not _live(console),
        )
        self._task = self._bar.add_task(name, total=0)

    def start(self, total: int) -> None:
        self._started = time.perf_counter()
        self.done, self.total, self.running = 0, total, True
        self._bar.update(self._task, total=total, completed=0, description=self.name)
        self._bar.start()
        self._line()

    def advance(self) -> None:
        self.done += 1
        self._bar.update(self._task, advance=1)
        if self._lines.due():
            self._line()

    def phase(self, label: str) -> None:
        """Name what is being done after the count (on the bar only: it is brief)."""
        self._bar.update(self._task, description=f"{self.name} · {label}")

    def stop(self) -> None:
        """Remove the bar and write the last line, once, if ``start`` was called."""
        if self.running:
            self.running = False
            self._bar.stop()
            self._line()

    def _line(self) -> None:
        self._lines.write(
            f"{self.name} {self.done}/{self.total} · {time.perf_counter() - self._started:.0f} s"
        )
