"""capture_episode reads whether its factory and observer take no arguments off their
code objects when they are plain functions or bound methods; it must agree with
``inspect.signature`` on every parameter list."""

from __future__ import annotations

import functools
import inspect
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from onrecord.integrations.gymnasium._arguments import (
    _no_argument_problem,
    _plainly_needs_no_arguments,
)


@st.composite
def parameter_lists(draw: st.DrawFn) -> str:
    """A def's parameter list: positional-only, positional, *args, keyword-only (each
    with or without a default), **kwargs."""
    names = iter(f"p{index}" for index in range(20))
    parts: list[str] = []
    defaulted = False  # a positional parameter without a default cannot follow one
    for kind in ("posonly", "positional"):
        for _ in range(draw(st.integers(0, 3))):
            defaulted = defaulted or draw(st.booleans())
            parts.append(f"{next(names)}=0" if defaulted else next(names))
        if kind == "posonly" and parts:
            parts.append("/")
    star = draw(st.booleans())
    keyword_only = draw(st.integers(0, 2))
    if star:
        parts.append("*args")
    elif keyword_only:
        parts.append("*")
    for _ in range(keyword_only):
        parts.append(f"{next(names)}=0" if draw(st.booleans()) else next(names))
    if draw(st.booleans()):
        parts.append("**kwargs")
    return ", ".join(parts)


def _callable_with_nothing(value: Any) -> bool:
    """inspect's reading; an unreadable signature (a method with no parameter for its
    instance) counts as callable, as capture leaves it to the calls to tell."""
    try:
        inspect.signature(value).bind()
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def _made(parameters: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(f"def made({parameters}):\n    return 0", namespace)
    return namespace["made"]


@given(parameter_lists())
def test_a_plain_function_reads_as_inspect_reads_it(parameters: str) -> None:
    function = _made(parameters)
    assert _plainly_needs_no_arguments(function) == _callable_with_nothing(function), parameters


@given(parameter_lists())
def test_a_bound_method_never_reads_as_callable_when_it_is_not(parameters: str) -> None:
    class Holder:
        method = _made(parameters)

    bound = Holder().method
    if _plainly_needs_no_arguments(bound):
        bound()  # no TypeError: it really can be called with nothing
    # Whatever the fast path says, the whole check agrees with inspect.
    assert (_no_argument_problem("observe", bound) is None) == _callable_with_nothing(bound)


def test_a_wrapped_function_is_judged_by_what_it_wraps() -> None:
    def needs_one(value: int) -> int:
        return value

    @functools.wraps(needs_one)
    def wrapper(*args: Any) -> int:
        return needs_one(*args)

    assert not _plainly_needs_no_arguments(wrapper)  # inspect decides, through __wrapped__
    problem = _no_argument_problem("observe", wrapper)
    assert problem is not None
    assert "needs_one(value) needs arguments" in problem


def test_a_method_with_no_parameter_for_its_instance_is_left_to_inspect() -> None:
    class Broken:
        def read() -> int:  # type: ignore[misc]  # no self: calling it raises TypeError
            return 0

    assert not _plainly_needs_no_arguments(Broken().read)
