"""A Ctrl-C that lands in onrecord's SQLite callbacks is raised once SQLite returns.

Python's SIGINT handler raises ``KeyboardInterrupt`` wherever the main thread is; while
a statement runs that is often inside a Python callback SQLite called: the statement
guard (the connection's authorizer) or the write gate (``_call_guard``'s SQL function).
``sqlite3`` turns an exception raised there into the statement failing ("not
authorized", "user-defined function raised exception"), so the interrupt was lost: a
world driven directly logged the call as the tool's error because of the Ctrl-C (or, if
the tool handled the failed statement, committed it) and went on.

So both callbacks catch ``KeyboardInterrupt`` (only that), note it on the guard
(``StatementGuard.interrupted``) and fail the statement, and the world raises it as soon
as its own code runs again: a call is handled as if its tool had raised it (rolled back,
logged ``interrupted``, re-raised); the other world methods (and ``save_episode``)
raise it instead of whatever the failed statement made them raise, or on returning. One
noted while no world method ran (the owner's own statements on ``world.conn``) is raised
by the next one before it does anything. The cost when no Ctrl-C comes: a ``try`` in
each callback (free in Python 3.11) and an attribute test per world method.

The same goes for the callbacks a tool or the world's owner registers on the world's
connection (SQL functions, aggregates, window functions, a progress handler, a trace
callback): ``noting`` and ``noting_class`` wrap them as they are registered, so a Ctrl-C
in a tool's own SQL function is raised too (collations need nothing: sqlite3 lets an
exception raised in one through).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from onrecord.envkit._guard import StatementGuard

__all__ = ["instead", "noting", "noting_class", "raise_noted", "raises_noted"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Guarded(Protocol):
    _guard: StatementGuard


class _Connection(Protocol):
    guard: StatementGuard | None


_C = TypeVar("_C", bound=Callable[..., object])


def noting(connection: _Connection, callback: _C | None) -> _C | None:
    """``callback`` (for SQLite to call), with a Ctrl-C inside it noted on the
    connection's guard (set now or later) before sqlite3 swallows it."""
    if callback is None:
        return None

    def noted(*args: object) -> object:
        try:
            return callback(*args)
        except KeyboardInterrupt:
            guard = connection.guard
            if guard is not None:
                guard.interrupted = True
            raise

    return noted  # type: ignore[return-value]


def noting_class(connection: _Connection, aggregate_class: Any) -> Any:
    """An aggregate or window-function class whose instances forward to
    ``aggregate_class``'s, every method called through ``noting``; a method the class
    lacks is missing from the wrapper too, so SQLite reports it as before."""
    if aggregate_class is None:
        return None
    make: Any = noting(connection, aggregate_class)

    class Noted:
        __slots__ = ("_inner",)

        def __init__(self) -> None:
            self._inner = make()

        def __getattr__(self, name: str) -> Any:
            found = getattr(self._inner, name)
            return noting(connection, found) if callable(found) else found

    return Noted


_W = TypeVar("_W", bound=_Guarded)


def raise_noted(guard: StatementGuard) -> None:
    """Raise the KeyboardInterrupt the guard noted, if any (once)."""
    if guard.interrupted:
        guard.interrupted = False
        raise KeyboardInterrupt


def instead(guard: StatementGuard, exc: BaseException) -> BaseException:
    """What to raise for ``exc``: a KeyboardInterrupt when the guard noted one (``exc``
    is then most likely the failed statement's error, kept as its cause)."""
    if not guard.interrupted:
        return exc
    guard.interrupted = False
    if isinstance(exc, KeyboardInterrupt):
        return exc
    interrupt = KeyboardInterrupt()
    interrupt.__cause__ = exc
    return interrupt


def raises_noted(
    method: Callable[Concatenate[_W, _P], _R],
) -> Callable[Concatenate[_W, _P], _R]:
    """Decorate a world method (or a function of a world) that runs statements on the
    world's connection: a Ctrl-C noted before or while it ran is raised."""

    @functools.wraps(method)
    def kept(world: _W, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        raise_noted(world._guard)
        try:
            result = method(world, *args, **kwargs)
        except BaseException as exc:
            interrupt = instead(world._guard, exc)
            if interrupt is exc:
                raise
            raise interrupt from exc
        raise_noted(world._guard)
        return result

    return kept
