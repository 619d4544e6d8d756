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


class BarProgress(RunProgress):
    """A rich progress bar on stderr (nothing when stderr is not a terminal)."""

    def __init__(self, console: Console, *, enabled: bool = True) -> None:
        self.console = console
        self.failed = self.incomplete = self.errors = self.done_now = 0
        self._started = time.perf_counter()
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
            disable=not enabled or not console.is_terminal,
            transient=False,
        )
        self._task = self._bar.add_task("run", total=0, rate="-", failed=0, incomplete=0, errors=0)

    def start(self, total: int, done: int) -> None:
        self._started = time.perf_counter()
        self._bar.update(self._task, total=total, completed=done)
        self._bar.start()

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
