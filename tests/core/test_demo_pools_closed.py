"""``onrecord demo`` closes the worker pool of every agent's run before going on, also
when Ctrl-C stops one. It used to drop them unclosed: on Python 3.11 an interrupted
demo then now and then ended with "Exception ignored in: <module 'threading'> ...
OSError: Bad file descriptor" under its "interrupted" line (the exit's unlocked
``_python_exit`` wrote to the wake-up pipe a pool's manager thread was closing), and a
CI job with two busy cores failed on that traceback. Real pools, two agents of eight."""

from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import ClassVar

import pytest
from rich.console import Console

from onrecord.cli import demo
from onrecord.runner import JobResult, ProcessPoolExecutor

TWO = ("careful", "skips_notes")


class _Recorded(ProcessPoolExecutor):
    """The real pool, noting whether it was closed and its manager thread then."""

    made: ClassVar[list[_Recorded]] = []

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.closed = False
        self.manager: threading.Thread | None = None
        self.made.append(self)

    def close(self) -> None:
        self.manager = self._pool._executor_manager_thread  # None once shut down
        super().close()
        self.closed = True


def test_every_pool_is_closed_and_its_threads_joined_also_when_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo, "AGENTS", TWO)
    monkeypatch.setattr(_Recorded, "made", [])
    monkeypatch.setattr(demo, "ProcessPoolExecutor", _Recorded)
    counted = demo._Counted.advance

    def ctrl_c_in_the_second_run(self: demo._Counted, result: JobResult) -> None:
        counted(self, result)
        if self.count.done == 34:  # the second agent's first episode
            raise KeyboardInterrupt

    monkeypatch.setattr(demo._Counted, "advance", ctrl_c_in_the_second_run)
    with pytest.raises(KeyboardInterrupt):
        demo._remittance_runs(tmp_path, 1, 1, Console(file=io.StringIO(), width=100))
    pools = _Recorded.made
    assert len(pools) == 2
    # The first ran to the end, the second was stopped; both are shut down and their
    # manager threads joined before the demo goes on (or exits).
    assert [pool.closed for pool in pools] == [True, True]
    assert [pool.manager is not None for pool in pools] == [True, True]
    assert not [pool.manager for pool in pools if pool.manager and pool.manager.is_alive()]
    assert (tmp_path / "careful" / "report.json").is_file()
