"""Terminal tables for the remittance suite (rich). Each is a ``SplitTable``: at 80
columns a plain table cut agent names and check names to "claims_don…", "expected_c…"."""

from __future__ import annotations

from collections import Counter

from rich.markup import escape

from onrecord._tables import SplitTable
from onrecord.domains.remittance._suite import GRADERS, SuiteResult

__all__ = ["ablation_table", "suite_table"]


def suite_table(result: SuiteResult) -> SplitTable:
    """Agent × decision: tasks accepted / rejected / indeterminate, the failing checks,
    and whether every task got the decision the agent must get: ✓ or ✗ beside the
    decision (nothing when none is expected). In a column of its own, it made the table
    too wide for 100 columns by one column: a "part 2 of 2" of "yes" eight times."""
    table = SplitTable(
        "agent",
        "decision",
        "accept",
        "reject",
        "indet.",
        "failing checks (tasks)",
        keys=1,
        title="remittance posting: agents × decisions (✓ every task decided as it must be, ✗ not)",
    )
    for name, outcome in result.outcomes.items():
        counts = Counter(outcome.task_decisions.values())
        failing = Counter(c for checks in outcome.failing_checks.values() for c in checks)
        checks = ", ".join(f"{c} ({n})" for c, n in sorted(failing.items())) or "—"
        table.add_row(
            escape(name),  # an agent's name is the caller's: "[/]" must print, not crash
            outcome.decision.decision + _expected_mark(result, name),
            str(counts["accept"]),
            str(counts["reject"]),
            str(counts["indeterminate"]),
            checks,
        )
    return table


def _expected_mark(result: SuiteResult, name: str) -> str:
    """`` ✓`` when every task of agent ``name`` got the decision it must get, `` ✗``
    when one did not, nothing when no decision is expected of the agent."""
    wants = result.expected.get(name)
    if wants is None:
        return ""
    decisions = result.outcomes[name].task_decisions
    return " ✓" if all(decisions[t] == w for t, w in wants.items()) else " [red]✗[/red]"


def ablation_table(result: SuiteResult) -> SplitTable:
    """Per agent: episodes each grader accepts (and how many of those violate the full
    contract), and each grader's decision over the agent's whole report."""
    table = SplitTable(
        "agent",
        "episodes",
        *(f"{g}: accepted (violating) → decision" for g in GRADERS),
        keys=1,
        title="ablation: what weaker graders accept",
    )
    for row in result.ablation():
        cells = [f"{row[g]} ({row[f'{g}_violating']}) → {row[f'{g}_decision']}" for g in GRADERS]
        table.add_row(escape(row["agent"]), str(row["episodes"]), *cells)
    return table
