"""``progress=`` of the Python entry points made of named steps (``run_experiment``,
``replay``, ``run_ledger_experiment``): each step on stderr as their command shows it.
(Apart from ``_progress``: rich is imported only when progress is shown, and these
entry points are called far more often without.)"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

__all__ = ["Step", "shown_steps"]

Step = Callable[[str], None]
"""Called with a label after each step."""


@contextlib.contextmanager
def shown_steps(step: Step | None, progress: bool, name: str, total: int) -> Iterator[Step]:
    """``step`` (or nothing) and, with ``progress``, each step on stderr as the command
    line shows it: a bar on a terminal, plain lines elsewhere (``NAME 3/17 · LABEL done ·
    1 s``)."""
    if not progress:
        yield step or (lambda _label: None)
        return
    from rich.console import Console

    from onrecord._progress import StepProgress

    with StepProgress(Console(stderr=True), name, total) as bar:

        def both(label: str) -> None:
            bar.step(label)
            if step is not None:
                step(label)

        yield both
