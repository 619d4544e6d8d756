"""``start_run`` in a running event loop (a notebook) with an agent known to be async
without building it refuses before making the run directory, and each of the two ways
out its message names, run exactly as written, completes the run."""

from __future__ import annotations

import asyncio
import functools
import re
from pathlib import Path
from typing import Any

import pytest

from onrecord.errors import InputError
from onrecord.runner import ProcessPoolExecutor, agent_factory, plan_run, start_run


class Finisher:
    """A tool-world agent class: its instances are an async act."""

    def __init__(self, brief: Any) -> None:
        self.brief = brief

    async def __call__(self, observation: Any) -> Any:
        await asyncio.sleep(0)
        return {"tool": "finish", "arguments": {"message": "done"}}


@agent_factory
def build_finisher(context: Any) -> Finisher:
    return Finisher(context.case.input)


def build_unannotated(brief: Any) -> Any:
    return Finisher(brief)


@functools.cache  # a protocol is immutable; planning remittance builds its provider
def _protocol(agent: str) -> Any:
    if agent == "to_goal":  # the async interact of the run-limit tests
        return plan_run("frozenlake", "tests.runner.test_async_run_limits:to_goal", seeds=[0])
    return plan_run("remittance", f"{__name__}:{agent}", tasks=["full-01"])


def _refused_in_a_loop(run: Path, protocol: Any) -> str:
    async def notebook() -> str:
        with pytest.raises(InputError) as refused:
            start_run(run, protocol)
        return str(refused.value)

    message = asyncio.run(notebook())
    assert not run.exists()  # refused before the directory was made
    return message


@pytest.mark.parametrize("agent", ["to_goal", "Finisher", "build_finisher"])
def test_a_known_async_agent_is_refused_before_the_run_directory_is_made(
    agent: str, tmp_path: Path
) -> None:
    message = _refused_in_a_loop(tmp_path / "run", _protocol(agent))
    assert f"the run in {tmp_path / 'run'} was not started: its agent is async" in message
    assert "nothing was written" in message


def _ways_out(message: str) -> list[str]:
    ways = re.findall(r"`([^`]+)`", message)
    assert len(ways) == 2, message
    return ways


@pytest.mark.parametrize("way", [0, 1])
def test_each_way_out_the_message_names_completes_the_run(way: int, tmp_path: Path) -> None:
    run, protocol = tmp_path / "run", _protocol("Finisher")
    written = _ways_out(_refused_in_a_loop(run, protocol))[way]
    names = {
        "asyncio": asyncio,
        "start_run": start_run,
        "ProcessPoolExecutor": ProcessPoolExecutor,
        "protocol": protocol,
    }

    async def notebook() -> Any:  # run as written, in the loop that refused it
        if written.startswith("await "):
            return await eval(written.removeprefix("await "), names)
        return eval(written, names)

    result = asyncio.run(notebook())
    assert result.complete
    assert result.errors == ()
    assert len((run / "episodes.jsonl").read_bytes().splitlines()) == 1
