"""A tool whose result holds an unawaited coroutine (``{"x": client.get()}``,
``[client.get()]``) fails as one returning a coroutine alone does: a ``tool_error``
naming the coroutine's JSON path, its writes rolled back, every coroutine closed (no
"never awaited" warning, an error under this suite's ``-W error``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.notes_tools import AWAIT_ADVICE, failed_call, notes_world

TAIL = f", not a value: {AWAIT_ADVICE}"


async def _client_get(body: str) -> dict[str, Any]:
    return {"got": body}


class _Items(list[Any]):
    def __iter__(self) -> Iterator[Any]:  # the tool's own code: not run by the search
        raise AssertionError("iterated")


@pytest.mark.parametrize(
    ("shape", "where"),
    [
        (lambda body: {"x": _client_get(body)}, " at $.result.x"),
        (lambda body: [1, _client_get(body)], " at $.result[1]"),
        (lambda body: {"a": ({"b": [_client_get(body)]},)}, " at $.result.a[0].b[0]"),
        (lambda body: {"odd key": _Items([_client_get(body)])}, ' at $.result["odd key"][0]'),
        (
            lambda body: {"x": [_client_get(body)], "y": {_client_get(body)}},
            " at $.result.x[0] (and 1 more)",
        ),
        (lambda body: {_client_get(body): 1}, " at $.result (a key)"),
    ],
)
def test_a_coroutine_nested_in_the_result_is_a_tool_error_naming_its_path(
    shape: Callable[[str], Any], where: str
) -> None:
    assert failed_call(shape) == (
        f"add_note: TypeError: the tool returned a coroutine (_client_get){where}{TAIL}"
    )


def test_a_result_not_json_for_another_reason_keeps_its_portability_error() -> None:
    world = notes_world(lambda body: {"x": [object()]})
    try:
        event = world.call("add_note", {"text": "hello"})
        assert event["error"]["message"].startswith(
            "add_note: PortabilityError: $.result.x[0] holds a builtins.object"
        )
    finally:
        world.close()


def test_a_cyclic_result_is_searched_once() -> None:
    def cyclic(body: str) -> Any:
        items: list[Any] = [1]
        items.append(items)
        return {"items": items, "late": _client_get(body)}

    world = notes_world(cyclic)
    try:
        message = world.call("add_note", {"text": "x"})["error"]["message"]
        assert "(_client_get) at $.result.late," in message
    finally:
        world.close()
