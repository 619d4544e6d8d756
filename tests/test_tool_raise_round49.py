"""A tool that calls an async client without ``await`` and then fails (on the coroutine,
``response["status"]``, or raising with it, ``ValueError(client.get(x))``) is a
recorded ``tool_error`` that says so, the coroutines it left unstarted closed (no
"never awaited" warning, an error under this suite's ``-W error``), and no memory
address from a default repr reaches a recorded message."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Coroutine
from typing import Any

from onrecord._exceptions import describe, error_record
from tests.notes_tools import AWAIT_ADVICE, failed_call, notes_world

ADVICE = f" without await: {AWAIT_ADVICE}"


class Client:
    """An async SDK client, as agents' tools wrap them."""

    async def get(self, claim_id: str) -> dict[str, Any]:
        return {"status": "paid", "claim": claim_id}


client = Client()


def _subscripted(claim_id: str) -> Any:
    response = client.get(claim_id)  # the mistake: no await
    return {"status": response["status"]}  # type: ignore[index]


def _line_of(text: str) -> int:
    """The number of the line of this file that is ``text`` (a tool's error names the
    line of the tool that raised it, since round 50)."""
    with open(__file__, encoding="utf-8") as source:
        return source.read().splitlines().index(text) + 1


def test_using_the_coroutine_as_a_value_is_a_tool_error_naming_the_call() -> None:
    line = _line_of('    return {"status": response["status"]}  # type: ignore[index]')
    assert failed_call(_subscripted, name="lookup") == (
        "lookup: TypeError: 'coroutine' object is not subscriptable "
        f"(at {__file__}:{line} in _subscripted); "
        f"the tool called Client.get (a coroutine){ADVICE}"
    )


def test_raising_with_the_coroutine_records_no_memory_address() -> None:
    def raising(claim_id: str) -> Any:
        raise ValueError(client.get(claim_id))

    line = _line_of("        raise ValueError(client.get(claim_id))")
    assert failed_call(raising, name="lookup") == (
        f"lookup: ValueError: <coroutine object Client.get> (at {__file__}:{line} in raising); "
        f"the tool called Client.get (a coroutine){ADVICE}"
    )


def test_coroutines_in_a_list_and_in_deeper_frames_are_all_closed() -> None:
    created: list[Coroutine[Any, Any, Any]] = []

    def total(claim_id: str) -> Any:
        responses = [client.get(f"{claim_id}-{n}") for n in range(3)]
        created.extend(responses)
        return sum(response["amount"] for response in responses)  # type: ignore[index]

    def body(claim_id: str) -> Any:
        first = client.get(claim_id)
        created.append(first)
        return total(claim_id)

    message = failed_call(body, name="lookup")
    assert message.endswith(f"the tool called Client.get (a coroutine, and 3 more){ADVICE}")
    assert all(inspect.getcoroutinestate(c) == inspect.CORO_CLOSED for c in created)


async def _waits(gate: asyncio.Future[None]) -> None:
    await gate


def test_only_coroutines_the_tool_created_and_never_started_are_closed() -> None:
    """A started coroutine, a Task and a coroutine of the enclosing scope (a closure's,
    which outlives the call) are left to their owners; the one the tool made is closed."""
    loop = asyncio.new_event_loop()
    try:
        gate: asyncio.Future[None] = loop.create_future()
        started = _waits(gate)
        started.send(None)  # suspended at its await
        task = loop.create_task(client.get("task"))
        kept = client.get("kept")  # the enclosing scope's, awaited below

        def body(claim_id: str) -> Any:
            running, scheduled = started, task
            response = client.get(claim_id)
            return response["status"], kept, running, scheduled  # type: ignore[index]

        message = failed_call(body, name="lookup")
        assert message.endswith(f"the tool called Client.get (a coroutine){ADVICE}")
        assert inspect.getcoroutinestate(started) == inspect.CORO_SUSPENDED
        assert inspect.getcoroutinestate(kept) == inspect.CORO_CREATED
        assert loop.run_until_complete(kept) == {"status": "paid", "claim": "kept"}
        assert loop.run_until_complete(task) == {"status": "paid", "claim": "task"}
        started.close()
    finally:
        loop.close()


def test_a_default_repr_in_a_tool_error_has_no_address() -> None:
    plain_object = object()

    def raising(claim_id: str) -> Any:
        raise LookupError(f"no claim {claim_id} in {plain_object}")

    world = notes_world(raising, name="lookup")
    try:
        event = world.call("lookup", {"text": "c1"})
    finally:
        world.close()
    line = _line_of('        raise LookupError(f"no claim {claim_id} in {plain_object}")')
    assert event["error"]["message"] == (
        f"lookup: LookupError: no claim c1 in <object object> (at {__file__}:{line} in raising)"
    )


def test_described_exceptions_keep_one_rule_for_addresses() -> None:
    plain_object = object()
    exc = ValueError(plain_object, f"see {client}")
    expected = f"(<object object>, 'see <{__name__}.Client object>')"
    assert describe(exc) == f"ValueError: {expected}"
    assert error_record(exc)["message"] == expected
