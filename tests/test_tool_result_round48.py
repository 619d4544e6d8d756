"""A tool result holding an awaitable anywhere (a coroutine in a dataclass or another
object, an ``asyncio`` Future or Task, any object with ``__await__``) is a recorded
``tool_error`` saying the tool returned an awaitable and where, every coroutine in it
closed (no "never awaited" warning, an error under this suite's ``-W error``) and the
world unchanged: as a coroutine returned alone or in a dict already was."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.notes_tools import AWAIT_ADVICE, failed_call

TAIL = f", not a value: {AWAIT_ADVICE}"


async def _client_get(body: str) -> dict[str, Any]:
    return {"got": body}


@dataclass
class Reply:
    body: Any


class Holder:
    """A plain object keeping the reply as an attribute."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply


class Slotted:
    __slots__ = ("reply", "unset")

    def __init__(self, reply: Any) -> None:
        self.reply = reply

    def __getattribute__(self, name: str) -> Any:  # the tool's code: not run by the search
        raise AssertionError(f"read {name}")


class Pending:
    """An awaitable that is not a coroutine (an SDK's lazy response)."""

    def __await__(self) -> Generator[None, None, int]:
        yield
        return 1


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.mark.parametrize(
    ("shape", "where"),
    [
        (lambda body: Reply(_client_get(body)), " at $.result.body"),
        (lambda body: {"x": [Reply(_client_get(body))]}, " at $.result.x[0].body"),
        (lambda body: {"x": Holder(_client_get(body))}, " at $.result.x.reply"),
        (lambda body: [Slotted(_client_get(body))], " at $.result[0].reply"),
        (lambda body: Holder(Reply(_client_get(body))), " at $.result.reply.body"),
    ],
)
def test_a_coroutine_inside_an_object_is_a_tool_error_naming_its_path(
    shape: Callable[[str], Any], where: str
) -> None:
    message = failed_call(shape)
    assert (
        message == f"add_note: TypeError: the tool returned a coroutine (_client_get){where}{TAIL}"
    )


def test_awaitables_that_are_not_coroutines_are_named_by_type(
    loop: asyncio.AbstractEventLoop,
) -> None:
    assert failed_call(lambda body: loop.create_future()) == (
        f"add_note: TypeError: the tool returned an awaitable (_asyncio.Future){TAIL}"
    )
    assert failed_call(lambda body: {"later": [Pending()]}) == (
        "add_note: TypeError: the tool returned an awaitable "
        f"({__name__}.Pending) at $.result.later[0]{TAIL}"
    )


def test_a_task_in_the_result_is_named_and_left_to_its_loop(
    loop: asyncio.AbstractEventLoop,
) -> None:
    tasks: list[asyncio.Task[Any]] = []

    def scheduled(body: str) -> Any:
        tasks.append(loop.create_task(_client_get(body)))
        return Reply(tasks[0])

    message = failed_call(scheduled)
    assert f"returned an awaitable (_asyncio.Task) at $.result.body{TAIL}" in message
    assert loop.run_until_complete(tasks[0]) == {"got": "hello"}  # not cancelled by us


def test_a_cycle_of_objects_is_searched_once() -> None:
    def cyclic(body: str) -> Any:
        holder = Holder(None)
        holder.reply = [holder, Reply(_client_get(body))]
        return holder

    assert " at $.result.reply[1].body," in failed_call(cyclic)
