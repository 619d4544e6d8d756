"""Names → agents and checks, for an environment provider: a reference agent's name or
a ``module:callable``, and ``default`` or the import path of checks. Each name is
checked where it is given (``onrecord run``), so a worker never meets a bad one."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from onrecord._exceptions import describe
from onrecord.episode import OutcomeCheck
from onrecord.errors import InputError
from onrecord.runner._provider import EnvironmentProvider
from onrecord.runner._registry import import_object
from onrecord.runner._slips import (
    agent_class_problem,
    check_function_problem,
    item_problem,
    spelling_hint,
)

__all__ = ["load_agent", "load_checks", "resolve_agent"]


def resolve_agent(provider: EnvironmentProvider, name: str) -> str:
    """Check that ``name`` is a reference agent of the provider or an importable
    ``module:callable``; returns it unchanged."""
    references = provider.reference_agents()
    if not isinstance(name, str) or not name.strip():
        # The names to choose from, so the next command is the right one.
        choices = (
            f"one of this environment's reference agents {sorted(references)} or "
            if references
            else ""
        )
        raise InputError(f"an agent is required: {choices}'module:callable'")
    if name in references:
        return name
    if ":" in name:
        agent = import_object(name)
        if not callable(agent):
            raise InputError(f"agent {name!r} is not callable")
        if problem := agent_class_problem(name, agent):
            raise InputError(problem)
        return name
    close = difflib.get_close_matches(name, list(references), n=3)
    hint = spelling_hint(name) or (
        f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    )
    listed = (
        f"the reference agents of this environment are {sorted(references)}; otherwise give "
        if references
        else "this environment has no reference agents; give "
    )
    raise InputError(f"unknown agent {name!r}: {listed}'module:callable'{hint}")


def load_agent(provider: EnvironmentProvider, name: str) -> Any:
    """The agent object ``name`` stands for."""
    references = provider.reference_agents()
    return references[name] if name in references else import_object(name)


def load_checks(provider: EnvironmentProvider, names: Sequence[str]) -> list[OutcomeCheck]:
    """Checks from ``"default"`` (the provider's) and import paths of an OutcomeCheck, a
    list of them, or a zero-argument function returning either."""
    checks: list[OutcomeCheck] = []
    for name in names or ("default",):
        if name != "default" and ":" not in name:
            raise _not_checks(name, provider)
        checks += provider.default_checks() if name == "default" else _imported_checks(name)
    seen: set[str] = set()
    for check in checks:
        if check.name in seen:
            raise InputError(
                f"two checks are named {check.name!r}; check names must be unique across --checks"
            )
        seen.add(check.name)
    if not checks:
        raise InputError(
            "no checks to run: this environment has no default checks; pass "
            "--checks package.module:CHECKS"
        )
    return checks


def _not_checks(name: str, provider: EnvironmentProvider) -> InputError:
    """``--checks NAME`` that is neither ``default`` nor an import path: often the name of
    one of the environment's checks, which ``--checks`` does not pick one by one."""
    try:
        own = ", ".join(check.name for check in provider.default_checks()) or "none"
    except Exception:  # the provider's own failure is reported where the run meets it
        own = "(could not be listed)"
    return InputError(
        f"--checks {name!r} is neither 'default' (the environment's checks: {own}) nor an "
        f"import path 'package.module:CHECKS'{spelling_hint(name)}; to grade with some of "
        "the environment's checks only, give them all (--checks default) and name the ones "
        "that decide in the policy"
    )


def _imported_checks(path: str) -> list[OutcomeCheck]:
    found = import_object(path)
    if callable(found) and not isinstance(found, OutcomeCheck):
        slip = check_function_problem(path, found, OutcomeCheck)
        if slip is not None:
            raise InputError(slip)
        try:
            found = found()
        except Exception as exc:
            if isinstance(found, type) and issubclass(found, OutcomeCheck):  # not a factory
                raise InputError(item_problem(path, found, OutcomeCheck, "is")) from exc
            raise InputError(f"the check factory {path!r} raised {describe(exc)}") from exc
    items = [found] if isinstance(found, OutcomeCheck) else found
    if isinstance(items, Sequence) and not isinstance(items, str):
        for item in items:
            if not isinstance(item, OutcomeCheck):
                raise InputError(item_problem(path, item, OutcomeCheck))
    else:
        raise InputError(
            f"checks {path!r} must be an OutcomeCheck, a list of them, or a "
            "function returning one of those"
        )
    return list(items)
