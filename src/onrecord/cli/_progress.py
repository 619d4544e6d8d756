"""The progress bar of ``onrecord run``: episodes done, rate, failures so far."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from onrecord.runner import JobResult
from onrecord.runner import Progress as RunProgress

__all__ = ["BarProgress"]


LINE_INTERVAL = 10.0
"""Seconds between the plain progress lines written where no bar is drawn."""


class BarProgress(RunProgress):
    """A rich progress bar on stderr. Where no bar can be drawn (stderr is a CI log or a
    file, or ``TERM=dumb``) it writes a plain line at the start, at most one every
    ``LINE_INTERVAL`` seconds and one at the end: no control characters, and a long run
    no longer leaves the log silent until the summary (CI systems end a job that prints
    nothing for some minutes)."""

    def __init__(self, console: Console, *, enabled: bool = True) -> None:
        self.console = console
        self.failed = self.incomplete = self.errors = self.done_now = 0
        self.total = self.done_before = 0
        self._started = self._last_line = time.perf_counter()
        live = console.is_terminal and not console.is_dumb_terminal
        self._lines = enabled and not live
        self._bar = Progress(
            TextColumn("[bold]episodes"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} ep/s"),
            TextColumn(
                "[red]failed {task.fields[failed]}[/] · [yellow]incomplete "
                "{task.fields[incomplete]}[/] · [magenta]errors {task.fields[errors]}"
            ),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not enabled or not live,
            transient=False,
        )
        self._task = self._bar.add_task("run", total=0, rate="-", failed=0, incomplete=0, errors=0)

    def start(self, total: int, done: int) -> None:
        self._started = self._last_line = time.perf_counter()
        self.total, self.done_before = total, done
        self._bar.update(self._task, total=total, completed=done)
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
        if time.perf_counter() - self._last_line >= LINE_INTERVAL:
            self._line()

    def _line(self) -> None:
        if not self._lines:
            return
        self._last_line = time.perf_counter()
        self.console.print(
            f"episodes {self.done_before + self.done_now}/{self.total} · {self.rate:.1f} ep/s "
            f"· failed {self.failed} · incomplete {self.incomplete} · errors {self.errors} "
            f"· {self.elapsed:.0f} s",
            markup=False,
            highlight=False,
            soft_wrap=True,
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
        self._bar.stop()
        self._line()
