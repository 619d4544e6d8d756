"""Refuse, before any episode runs, a policy that names a check the run does not grade."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from onrecord._policy_rules import matched_names
from onrecord.episode import OutcomeCheck
from onrecord.errors import InputError
from onrecord.policy import AcceptancePolicy

__all__ = ["refuse_unmatched_requirements"]


def refuse_unmatched_requirements(
    policy: AcceptancePolicy | None, checks: Sequence[OutcomeCheck]
) -> None:
    """An ``InputError`` when a requirement of ``policy`` (one the user gave: ``None``
    is the environment's own) matches none of ``checks``. Graded anyway, such a
    requirement is undecided in every report, so a mistyped name (or a check name
    without its ``envkit/`` prefix) costs a whole run of agent calls and ends
    indeterminate; refused here, it costs nothing and names the fix."""
    if policy is None:
        return
    names = [check.name for check in checks]
    known = set(names)
    unmatched = [
        req.check for req in policy.requirements if not matched_names(req.check, names, known)
    ]
    if not unmatched:
        return
    hints = [_hint(pattern, names) for pattern in unmatched]
    raise InputError(
        f"the policy requires {', '.join(hints)}, but no check this run grades with "
        f"matches it; the run's checks: {', '.join(map(repr, names))}. Write each "
        "requirement as its check is named, or grade with that check too (--checks)"
    )


def _hint(pattern: str, names: Sequence[str]) -> str:
    """``'pattern'``, with the closest check names when some are close (a typo, or a
    name without the prefix the check has, as ``diff_satisfies_rules`` for
    ``envkit/diff_satisfies_rules``)."""
    suffixed = [name for name in names if name.rsplit("/", 1)[-1] == pattern]
    near = suffixed or difflib.get_close_matches(pattern, names, n=2, cutoff=0.75)
    if not near:
        return repr(pattern)
    return f"{pattern!r} (did you mean {' or '.join(map(repr, near))}?)"
