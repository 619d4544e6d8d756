"""How an exception is described in evidence. Its ``str()`` may raise, return a
non-string or hold a lone surrogate; none of that may lose the record it belongs to."""

from __future__ import annotations

import functools
import os
import re
from types import TracebackType

__all__ = [
    "describe",
    "describe_raised",
    "error_record",
    "exception_text",
    "json_text",
    "naming_file",
    "raised_at",
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


def describe_raised(exc: BaseException) -> str:
    """``Type: message (at FILE:LINE in FUNCTION)``, as a bug in the user's code is kept
    (a tool's ``tool_error``, a check's evaluator error): ``describe`` and ``raised_at``."""
    return describe(exc) + raised_at(exc)


def raised_at(exc: BaseException) -> str:
    """`` (at FILE:LINE in FUNCTION)``: the innermost frame of ``exc``'s traceback in
    code that is not onrecord's, so a bug in a tool or a check can be found.

    The standard library is passed over (a failed ``json.loads`` is the user's line that
    called it), and installed packages too while the user's own code has a frame. Empty
    when no frame is left, and for an interrupt (``KeyboardInterrupt``, a timeout): where
    one lands differs every time, and this text is recorded. The file is named as the
    traceback names it, with no address or time, so the same bug reads the same."""
    if not isinstance(exc, Exception):
        return ""
    frames = [frame for frame in _frames(exc.__traceback__) if not _is_own(frame[0])]
    own_code = [frame for frame in frames if not _is_library(frame[0], packages=True)]
    found = own_code or [frame for frame in frames if not _is_library(frame[0], packages=False)]
    if not found:
        return ""
    file, line, function = found[-1]
    at = file if line is None else f"{file}:{line}"
    return json_text(f" (at {at} in {function})")


def _frames(traceback: TracebackType | None) -> list[tuple[str, int | None, str]]:
    frames: list[tuple[str, int | None, str]] = []
    while traceback is not None:
        code = traceback.tb_frame.f_code
        frames.append((code.co_filename, traceback.tb_lineno, code.co_name))
        traceback = traceback.tb_next
    return frames


def _is_own(file: str) -> bool:
    return file.startswith(_OWN)


_OWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


def _is_library(file: str, *, packages: bool) -> bool:
    """Whether ``file`` is the standard library's or, with ``packages``, an installed
    package's (the base Python's ``site-packages`` lies inside its standard library)."""
    if any(folder in file for folder in _INSTALLED):
        return packages
    return file.startswith(("<frozen ", *_standard_library()))


_INSTALLED = tuple(f"{os.sep}{name}{os.sep}" for name in ("site-packages", "dist-packages"))


@functools.cache
def _standard_library() -> tuple[str, ...]:
    import sysconfig  # here: only a raising tool or check needs it, never start-up

    paths = sysconfig.get_paths()
    return tuple(sorted({os.path.join(paths[key], "") for key in ("stdlib", "platstdlib")}))


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
