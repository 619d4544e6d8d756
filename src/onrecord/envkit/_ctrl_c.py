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
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from onrecord.envkit._guard import StatementGuard

__all__ = ["instead", "raise_noted", "raises_noted"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Guarded(Protocol):
    _guard: StatementGuard


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
