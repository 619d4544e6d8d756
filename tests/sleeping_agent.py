"""An agent module of the user's own, written for a test: the careful remittance agent,
except on the chosen seeds or repeats, where it sleeps (until an episode time limit or
a signal stops it) while a file ``slow`` is beside it; with a file ``inner`` beside it,
each episode imports a module that does not exist (a failure only the episode meets)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_sleeping_agent"]

_SOURCE = """
import importlib
from pathlib import Path
import time

from onrecord.domains.remittance._agents import ScriptedAgent
from onrecord.runner import agent_factory

HERE = Path(__file__).parent


@agent_factory
def make(context):
    slow = context.seed in SLOW_SEEDS or context.repeat in SLOW_REPEATS
    if slow and (HERE / "slow").exists():
        def act(observation):
            time.sleep(60)
        return act
    if (HERE / "inner").exists():
        importlib.import_module("no_such_module_of_the_tests")
    return ScriptedAgent("careful", context.case.input)
"""


def write_sleeping_agent(
    folder: Path, module: str, *, seeds: tuple[int, ...] = (), repeats: tuple[int, ...] = ()
) -> Path:
    """``folder`` (made) holding ``module.py``, ``--agent module:make`` with ``folder`` on
    ``PYTHONPATH``, and the ``slow`` file; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    head = f"SLOW_SEEDS = {seeds!r}\nSLOW_REPEATS = {repeats!r}\n"
    (folder / f"{module}.py").write_text(head + _SOURCE)
    (folder / "slow").write_text("")
    return folder
