"""A tool that calls an async client without ``await`` and then fails (on the coroutine,
``response["status"]``, or raising with it, ``ValueError(client.get(x))``) is a
recorded ``tool_error`` that says so, the coroutines it left unstarted closed (no
"never awaited" warning, an error under this suite's ``-W error``), and no memory
address from a default repr reaches a recorded message."""

from __future__ import annotations

import asyncio
import gc
import inspect
import warnings
from collections.abc import Callable, Coroutine
from typing import Any

from onrecord import EvalCase
from onrecord._exceptions import describe, error_record
from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

SCHEMA = "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
ADVICE = (
    " without await: a tool must be a plain function that returns its result; await the "
    "async client outside the tool (in your agent) or use its synchronous API"
)


class Client:
    """An async SDK client, as agents' tools wrap them."""

    async def get(self, claim_id: str) -> dict[str, Any]:
        return {"status": "paid", "claim": claim_id}


client = Client()


def _world(body: Callable[[str], Any]) -> ToolWorld:
    @tool(writes=True)
    def lookup(ctx: ToolContext, claim_id: str) -> Any:
        """Write a note, then run the body, which forgets an await and fails."""
        ctx.execute("INSERT INTO notes (body) VALUES (?)", (claim_id,))
        return body(claim_id)

    world = ToolWorld(Snapshot.build("notes", SCHEMA), [lookup])
    world.reset(case=EvalCase("lookup", case_id="lookup"), seed=0, run_id="run")
    return world


def _failed_call(body: Callable[[str], Any]) -> str:
    """The message of the call's tool_error, checked to have changed and warned nothing."""
    world = _world(body)
    try:
        before = world.state_digest()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            event = world.call("lookup", {"claim_id": "c1"})
            gc.collect()  # an unclosed coroutine warns when it is collected
        assert [str(w.message) for w in caught] == []
        assert (event["status"], event["error"]["type"]) == ("error", "tool_error")
        assert world.state_digest() == before  # rolled back
        return str(event["error"]["message"])
    finally:
        world.close()


def _subscripted(claim_id: str) -> Any:
    response = client.get(claim_id)  # the mistake: no await
    return {"status": response["status"]}  # type: ignore[index]


def test_using_the_coroutine_as_a_value_is_a_tool_error_naming_the_call() -> None:
    assert _failed_call(_subscripted) == (
        "lookup: TypeError: 'coroutine' object is not subscriptable; "
        f"the tool called Client.get (a coroutine){ADVICE}"
    )


def test_raising_with_the_coroutine_records_no_memory_address() -> None:
    def raising(claim_id: str) -> Any:
        raise ValueError(client.get(claim_id))

    assert _failed_call(raising) == (
        "lookup: ValueError: <coroutine object Client.get>; "
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

    message = _failed_call(body)
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

        message = _failed_call(body)
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

    world = _world(raising)
    try:
        event = world.call("lookup", {"claim_id": "c1"})
    finally:
        world.close()
    assert event["error"]["message"] == "lookup: LookupError: no claim c1 in <object object>"


def test_described_exceptions_keep_one_rule_for_addresses() -> None:
    plain_object = object()
    exc = ValueError(plain_object, f"see {client}")
    expected = f"(<object object>, 'see <{__name__}.Client object>')"
    assert describe(exc) == f"ValueError: {expected}"
    assert error_record(exc)["message"] == expected
