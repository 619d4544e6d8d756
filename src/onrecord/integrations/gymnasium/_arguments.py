"""The callables ``capture_episode`` is handed, refused up front when they cannot be
called as capture calls them, naming the argument and the fix.

``factory`` and ``observe`` are called with no arguments. ``gym.make`` itself as the
factory (for ``lambda: gym.make("CartPole-v1")``), an observer class (whose new instance
is no state, or which needs the environment), or a function with a required parameter,
were accepted and recorded as a setup error, or an observer error at every read, in
every episode.
"""

from __future__ import annotations

import inspect
from inspect import CO_VARARGS
from types import FunctionType, MethodType
from typing import Any

import gymnasium as gym

from onrecord.errors import InputError

__all__ = ["require_callables"]

_ROLES = {
    "factory": "a function that takes no arguments and returns a fresh gymnasium.Env",
    "interact": "your agent loop, called as interact(env, observation, info)",
    "observe": "a function that takes no arguments and returns the state as portable JSON",
}

# gym.make and gym.make_vec need the environment's id: the factory is a function that
# calls one of them with it.
_MAKERS = {gym.make: "gym.make", gym.make_vec: "gym.make_vec"}
# Classes whose instance is portable JSON: an observer may be one (observe=dict).
_PORTABLE = (dict, list, tuple, str, int, float)


def require_callables(**given: Any) -> None:
    """Each of ``factory``, ``interact``, ``observe`` given is callable, and the factory
    and observer can be called with no arguments."""
    for name, value in given.items():
        if not callable(value):
            raise InputError(f"{name} must be {_ROLES[name]}, got {type(value).__name__}")
    for name in ("factory", "observe"):
        if name in given:
            problem = _no_argument_problem(name, given[name])
            if problem is not None:
                raise InputError(problem)


def _no_argument_problem(name: str, value: Any) -> str | None:
    """Why ``value`` cannot be ``name``, called with no arguments; None if it can, or
    when its signature cannot be read (its calls will tell)."""
    maker = next((label for maker, label in _MAKERS.items() if value is maker), None)
    if name == "factory" and maker is not None:
        return (
            f"{name} is {maker} itself, which needs the environment's id: pass a function "
            f'that calls it, e.g. {name}=lambda: {maker}("CartPole-v1")'
        )
    if name == "observe" and isinstance(value, type) and not issubclass(value, _PORTABLE):
        # Its instance would be the state read: an object with no JSON form, an observer
        # error at every read (``observe=dict``, a state of {}, is an observer of nothing).
        instance = (
            f", or an instance of it whose __call__ returns it (observe={value.__name__}(...))"
            if "__call__" in vars(value)
            else ""
        )
        return (
            f"observe is the class {value.__name__}: capture calls observe() after reset "
            f"and after every step to read the state, and a new {value.__name__} is no "
            f"state; pass a function that returns the state as portable JSON{instance}, "
            "e.g. observe=lambda: {'state': list(env.unwrapped.state)}"
        )
    if _plainly_needs_no_arguments(value):
        return None
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind()
    except TypeError:
        label = getattr(value, "__name__", type(value).__name__)
        parameters = ", ".join(signature.parameters)  # annotations left out: names suffice
        return (
            f"{name} must be {_ROLES[name]}, but {label}({parameters}) needs arguments: "
            f"wrap it in a function that takes none, e.g. {name}=lambda: {label}(...)"
        )
    return None


def _plainly_needs_no_arguments(value: Any) -> bool:
    """Whether a plain function or bound method can be called with no arguments, read
    off its code object: the usual factory and observer. ``inspect.signature`` costs
    ~25 µs each, a tenth of a short episode's capture. False means "ask inspect" (which
    also follows ``__wrapped__`` and ``__signature__``), never "cannot"."""
    bound = 0
    if type(value) is MethodType:
        value, bound = value.__func__, 1
    if type(value) is not FunctionType:
        return False
    if "__wrapped__" in value.__dict__ or "__signature__" in value.__dict__:
        return False
    code = value.__code__
    positional = code.co_argcount
    if bound and not (positional or code.co_flags & CO_VARARGS):
        return False  # a method with no parameter for its instance
    if positional - len(value.__defaults__ or ()) - bound > 0:
        return False
    keyword_only = code.co_varnames[positional : positional + code.co_kwonlyargcount]
    defaults = value.__kwdefaults__ or {}
    return all(name in defaults for name in keyword_only)
