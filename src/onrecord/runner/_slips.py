"""Slips in what a user names or hands the runner, turned into the exact fix: a dot where
the colon of ``module:name`` goes (``my_models.LinearDelta``), a class where an instance
was meant, a factory that returns the environment's class instead of an environment.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

__all__ = [
    "agent_class_problem",
    "check_function_problem",
    "colon_spelling",
    "item_problem",
    "spelling_hint",
]


def colon_spelling(path: str) -> str | None:
    """``"pkg.mod:Name"`` for the dotted ``"pkg.mod.Name"`` when a leading part imports as
    a module and the rest is an attribute of it; None otherwise (or when it has a colon)."""
    parts = path.split(".")
    if ":" in path or len(parts) < 2 or not all(part.isidentifier() for part in parts):
        return None
    for cut in range(len(parts) - 1, 0, -1):  # the longest module first: pkg.mod before pkg
        try:
            target: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # not a module (or a broken one): try a shorter split
            continue
        for part in parts[cut:]:
            target = getattr(target, part, _MISSING)
        if target is not _MISSING:
            return f"{'.'.join(parts[:cut])}:{'.'.join(parts[cut:])}"
    return None


def spelling_hint(path: str) -> str:
    """``"; did you mean 'pkg.mod:Name'? ..."`` for a dotted path that has that spelling."""
    spelled = colon_spelling(path)
    if spelled is None:
        return ""
    return f"; did you mean {spelled!r}? (a colon, not a dot, goes before the name)"


_MISSING = object()


def agent_class_problem(name: str, agent: Any) -> str | None:
    """Why the class ``agent`` cannot be an agent, or None. A class IS an agent where it is
    called the way an agent is: with the task's input (a tool world's builder), with an
    ``AgentContext`` (an ``agent_factory``), or as ``interact(env, observation, info)``.
    One whose constructor takes none of those (``GymAgent`` with a ``__call__``, named
    without its parentheses) failed every episode with "takes no arguments"."""
    if not isinstance(agent, type):
        return None
    try:
        signature = inspect.signature(agent)
    except (TypeError, ValueError):  # no signature to read: the episodes will tell
        return None
    if any(_binds(signature, count) for count in (1, 3)):
        return None
    module = name.partition(":")[0]
    return (
        f"agent {name!r} is the class {agent.__name__}, and {agent.__name__}{signature} "
        "cannot be called the way an agent is (interact(env, observation, info), or with "
        "the task's input in a tool world): name an instance instead (e.g. "
        f"AGENT = {agent.__name__}() in {module}, then --agent {module}:AGENT), or a "
        "function marked @agent_factory that returns one"
    )


def _binds(signature: inspect.Signature, count: int) -> bool:
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def item_problem(path: str, item: Any, kind: type, verb: str = "holds") -> str:
    """What an item of ``--checks PATH`` (``verb="is"``: PATH itself) that is not a
    ``kind`` instance is, and the fix."""
    what = kind.__name__
    if isinstance(item, type):
        return (
            f"checks {path!r} {verb} the class {item.__name__}, not an {what}: list "
            f"instances ({what}(name, version, evaluate) or one built by @outcome_check)"
        )
    if callable(item):
        label = getattr(item, "__name__", type(item).__name__)
        return (
            f"checks {path!r} {verb} the function {label}, not an {what}: wrap it as "
            f"{what}({label!r}, 'v1', {label}) or decorate it with "
            f"@outcome_check({label!r}, 'v1')"
        )
    return (
        f"checks {path!r} holds a {type(item).__name__}, not an {what}; it must be an "
        f"{what}, a list of them, or a function returning one of those"
    )


def check_function_problem(path: str, found: Any, kind: type) -> str | None:
    """The fix for ``--checks mod:f`` where ``f(subject)`` is a check's own function (it
    takes the episode), not a factory of checks (which takes nothing); None otherwise.
    Called with no arguments it was reported as "the check factory raised TypeError:
    reached() missing 1 required positional argument: 'subject'"."""
    if isinstance(found, type):
        return None
    try:
        signature = inspect.signature(found)
    except (TypeError, ValueError):  # no signature to read: calling it will tell
        return None
    if _binds(signature, 0) or not _binds(signature, 1):
        return None
    label = getattr(found, "__name__", type(found).__name__)
    return (
        f"{item_problem(path, found, kind, 'is')} ({label}{signature} grades an episode; "
        "--checks names checks, or a function that takes no arguments and returns them)"
    )
