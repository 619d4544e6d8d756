"""How an exception is described in evidence. Its ``str()`` may raise, return a
non-string or hold a lone surrogate; none of that may lose the record it belongs to."""

from __future__ import annotations

import os
import re

__all__ = [
    "describe",
    "error_record",
    "exception_text",
    "json_text",
    "naming_file",
    "shown_repr",
    "without_addresses",
]


def error_record(exc: BaseException) -> dict[str, str]:
    """The portable description of an exception kept in evidence."""
    kind = type(exc)
    return {
        "type": json_text(f"{kind.__module__}.{kind.__qualname__}"),
        "message": exception_text(exc),
    }


def describe(exc: BaseException) -> str:
    """``Type: message``, as observer errors are kept."""
    return f"{json_text(type(exc).__name__)}: {exception_text(exc)}"


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, or a note when its ``__str__`` raises or returns a non-string
    (the exception is evidence; its broken ``__str__`` must not replace it)."""
    try:
        message = str(exc)
    except Exception as failure:
        return f"<str() of this exception raised {type(failure).__name__}>"
    return json_text(without_addresses(message))


def without_addresses(text: str) -> str:
    """``text`` without the memory addresses of default reprs (``<coroutine object get
    at 0x7f...>`` becomes ``<coroutine object get>``): an address differs in every
    process and says nothing about the object, and evidence must come out the same
    when the same thing happens again."""
    return _ADDRESS.sub(">", text) if " at 0x" in text else text


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def shown_repr(value: object, limit: int) -> str:
    """``repr(value)`` as a record keeps it: at most ``limit`` characters, never raising,
    its addresses removed *before* it is cut (cut first, ``<Thing object at 0x7f3a``
    lost its ``>`` and kept half an address that differs in every process)."""
    try:
        text = repr(value)
    except Exception:  # an agent's or environment's own type whose repr() fails
        return f"<a {json_text(type(value).__name__)} whose repr() raised>"
    return json_text(without_addresses(text)[:limit])


def json_text(text: str) -> str:
    """Text JSON can hold: a lone surrogate is written as its escape (``\\ud800``)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode()
    return text


def naming_file(path: str | os.PathLike[str], exc: Exception) -> Exception:
    """``exc`` again (same type and attributes), its message led by the file it came
    from, unless it names the file already: with two files on a command line, "schema
    is 'onrecord.policy/v1'" does not say which one was wrong."""
    name = os.fspath(path)
    text = exception_text(exc)
    if name in text:
        return exc
    try:
        renamed = type(exc)(f"{name}: {text}")
    except Exception:  # an exception type whose constructor takes other arguments
        return exc
    renamed.__dict__.update(exc.__dict__)
    return renamed
