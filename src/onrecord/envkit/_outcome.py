"""The parts of an action-log event that describe what became of a call.

Everything here ends up in canonical JSON, so every string is made UTF-8 safe: a tool
name with a lone surrogate, or an exception whose text holds one (or whose ``str``
raises), must still be logged rather than make the log write fail after the call.
"""

from __future__ import annotations

import reprlib
import sqlite3
from typing import Any

from onrecord._exceptions import describe as plain_describe
from onrecord._exceptions import describe_raised, exception_text, without_addresses
from onrecord.envkit._portable import portable
from onrecord.errors import PortabilityError

__all__ = [
    "NOT_SENT",
    "arguments",
    "describe",
    "failure",
    "message",
    "plain_name",
    "rejected",
    "safe_repr",
    "safe_text",
    "tool_label",
]

_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 8, 200, 200


def safe_text(text: str) -> str:
    """``text``, with what UTF-8 cannot hold (lone surrogates) written as escapes."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def tool_label(tool: Any) -> str:
    """How the log names the tool asked for: the name itself, or its ``repr`` when it is
    not a string UTF-8 can hold (quoted, so it never reads as a declared tool's name)."""
    tool = plain_name(tool)  # a str subclass's own __repr__ could read as any name
    if type(tool) is str and (tool.isascii() or safe_text(tool) == tool):
        return tool
    return safe_repr(tool)


def plain_name(tool: Any) -> Any:
    """A tool name as the plain ``str`` it holds; anything else as it is. A ``str``
    subclass (a ``StrEnum`` member, say) names the tool its text names: looked up as
    it is, its own ``__eq__``/``__hash__`` would decide which tool runs (one equal to
    every name runs whichever shares its hash) and its ``__repr__`` how the log names
    it, so a member naming ``finish`` ran finish but was logged under another label."""
    return str.__str__(tool) if isinstance(tool, str) and type(tool) is not str else tool


def message(exc: BaseException) -> str:
    """The message of an exception, never raising, without memory addresses: the one
    wording every record uses (``onrecord._exceptions.exception_text``)."""
    return exception_text(exc)


def safe_repr(value: Any, limit: int = 500) -> str:
    """A short ``repr`` of a value, never raising and without memory addresses (it is
    logged): a value nested too deep for ``repr`` is shown abbreviated, one whose
    ``__repr__`` raises by its type."""
    try:
        text = repr(value)
    except RecursionError:
        text = _SHORT.repr(value)
    except Exception:  # a hostile __repr__ must not lose the record
        text = f"<{type(value).__name__} whose repr cannot be shown>"
    # Addresses go before the cut: cut first, half an address could stay behind.
    return safe_text(without_addresses(text)[:limit])


def describe(exc: BaseException) -> str:
    """``Type: message (at FILE:LINE in FUNCTION)`` of what a tool raised, never raising:
    a bug in a tool names the line of the owner's code that raised it
    (``onrecord._exceptions.raised_at``)."""
    text = describe_raised(exc)
    if isinstance(exc, sqlite3.Error) and _RECURSION in text:
        return text + _RECURSION_HINT
    return text


# The world runs with recursive_triggers on (so REPLACE's displaced rows are audited);
# an owner trigger that writes its own table, harmless in the application, recurses.
_RECURSION = "too many levels of trigger recursion"
_RECURSION_HINT = (
    " (the world runs with PRAGMA recursive_triggers = ON, so a trigger that writes the "
    "table it fires on fires itself again: declare it AFTER UPDATE OF the columns it "
    "reads, or give it a WHEN its own write makes false; see docs/envkit.md)"
)


NOT_SENT: Any = object()
"""``ToolWorld.call``'s default: no arguments given at all (logged as ``{}``)."""


def arguments(value: Any) -> tuple[dict[str, Any], Any, str | None]:
    """(arguments to call with, arguments to log, problem or None)."""
    if value is NOT_SENT:
        value = {}
    elif value is None:
        # ``"arguments": null``, as models emit for a tool without parameters: a call
        # without arguments (a tool that needs some says which are missing), logged as
        # sent so the evidence shows what the model wrote.
        return {}, None, None
    try:
        plain = portable(value, "arguments")
    except PortabilityError as exc:
        return {}, {"$unportable": safe_repr(value)}, f"arguments are not JSON: {exc}"
    except Exception as exc:
        # Reading the agent's value ran its code (a Mapping whose items() raises, a str
        # whose __eq__ raises): the call is rejected like any unreadable arguments,
        # never a crash of the run.
        problem = f"arguments cannot be read: {plain_describe(exc)}"
        return {}, {"$unportable": safe_repr(value)}, problem
    if not isinstance(plain, dict):
        return (
            {},
            plain,
            f"arguments must be a JSON object of named arguments, got {type(value).__name__}",
        )
    return plain, plain, None


def rejected(kind: str, message: str) -> dict[str, Any]:
    """The outcome of a call refused before or by its tool (state unchanged)."""
    return {
        "status": "rejected",
        "result": None,
        "error": {"type": kind, "message": safe_text(message)},
    }


def failure(name: str, kind: str, message: str, result: Any = None) -> dict[str, Any]:
    """The outcome of a call that failed (``status: "error"``)."""
    return {
        "status": "error",
        "result": result,
        "error": {"type": kind, "message": safe_text(f"{name}: {message}")},
    }
