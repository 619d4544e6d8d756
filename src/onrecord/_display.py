"""Results as tables in rich and in notebooks: what ``__rich__`` of a report, a
decision, a comparison or an episode's evidence returns.

A notebook or ``rich.print`` showed only the dataclass repr (``PolicyDecision(decision=
'reject', reasons=(...), outcomes=(RequirementOutcome(...`` on one line). The tables are
``onrecord show``'s own: its printers write to a console, so each is run on a console
of the width rich gives the object and what it printed is handed back as text. The
HTML fragments (``_repr_html_``) are in ``onrecord._display_html``.

Imported only when an object is displayed: ``import onrecord`` loads none of rich.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

if TYPE_CHECKING:
    from onrecord.compare import Comparison
    from onrecord.episode import EpisodeEvidence
    from onrecord.policy import PolicyDecision
    from onrecord.report import EvaluationReport

__all__ = ["Printed", "comparison_view", "decision_view", "evidence_view", "report_view"]


class Printed:
    """A renderable of what ``draw`` prints on a console: ``show``'s printers choose
    their layout (wide, narrow, stacked) by the console's width, so they are run at the
    width rich renders this at, on a console of the same colour system."""

    def __init__(self, draw: Callable[[Console], None]) -> None:
        self._draw = draw

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from onrecord._tables import ReadableConsole

        # In the caller's encoding: drawn in UTF-8, an ASCII console got its boxes as
        # "\u250f" escapes and rows with "≥" one column wider than their border.
        inner = ReadableConsole(
            file=_Buffer(console.encoding),
            width=options.max_width,
            color_system=console.color_system,  # type: ignore[arg-type]
            force_terminal=console.color_system is not None,
            force_jupyter=False,
            # Record text (a case id, a reason) is the agent's: ":warning:" prints as written.
            emoji=False,
            legacy_windows=False,
        )
        self._draw(inner)
        output = inner.file.getvalue()  # type: ignore[attr-defined]
        yield Text.from_ansi(output.rstrip("\n"), no_wrap=True, overflow="ignore")


class _Buffer(io.StringIO):
    """Text written for a stream of ``encoding``: rich picks its boxes by it (ASCII ones
    where the encoding has no box characters), ``ReadableConsole`` its symbols."""

    def __init__(self, encoding: str) -> None:
        super().__init__()
        self._encoding = encoding

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


def report_view(report: EvaluationReport) -> Printed:
    """``onrecord show REPORT``: the summary line, the checks' table, pass^k, coverage
    issues, then every measure (a notebook has no ``--all-measures`` to ask for them)."""

    def draw(console: Console) -> None:
        from onrecord.cli._measure_table import render_report_measures

        render_report_measures(console, report, every=True)

    return Printed(draw)


def decision_view(decision: PolicyDecision) -> Printed:
    """``onrecord gate``'s decision: the verdict, what decided it, one row per
    requirement, then each reason."""

    def draw(console: Console) -> None:
        from onrecord.cli._render import render_decision

        render_decision(console, decision)

    return Printed(draw)


def comparison_view(comparison: Comparison) -> Printed:
    """``onrecord compare``'s tables: per check the paired counts, the McNemar p and
    each side's pass rate; per measure the bootstrap interval of B − A."""

    def draw(console: Console) -> None:
        from onrecord.cli._render import render_comparison

        render_comparison(console, comparison)

    return Printed(draw)


def evidence_view(evidence: EpisodeEvidence) -> Printed:
    """A short summary of one episode (``onrecord show EVIDENCE`` prints its steps)."""

    def draw(console: Console) -> None:
        from onrecord._tables import fitted_table
        from onrecord.cli._render import cell

        table = fitted_table("episode", "", title="episode evidence")
        for label, value in evidence_rows(evidence):
            table.add_row(label, cell(value))
        console.print(table)

    return Printed(draw)


def evidence_rows(evidence: EpisodeEvidence) -> list[tuple[str, str]]:
    """The summary's (label, value) rows, shared by the terminal and the HTML views:
    case, how it ended, attempts, measures, coverage issues, failures, digest."""
    rows = [
        ("case", str(evidence.case.get("case_id", ""))),
        ("ended", evidence.ended),
        ("attempts", str(len(evidence))),
    ]
    rows += [(f"measure {name}", f"{value:g}") for name, value in evidence.measures.items()]
    issues = evidence.coverage_issues
    rows.append(("coverage issues", str(len(issues)) if issues else "none"))
    rows += [("coverage", issue) for issue in issues[:_LISTED]]
    failures = evidence.failures()
    rows.append(("failures", str(len(failures)) if failures else "none"))
    rows += [("failure", _failure(failure)) for failure in failures[:_LISTED]]
    rows.append(("sha256", evidence.digest))
    return rows


_LISTED = 10
"""Coverage issues and failures a summary lists (each list is counted in full)."""


def _failure(failure: dict[str, object]) -> str:
    """``step 3: RuntimeError: boom`` (where it happened, then the error)."""
    where = f"{failure.get('phase')} {failure.get('index', '')}".strip()
    read = failure.get("read")
    error = failure.get("type") or failure.get("error") or ""
    message = failure.get("message", "")
    detail = ": ".join(str(part) for part in (error, message) if part)
    return f"{where}{f' ({read})' if read else ''}: {detail}" if detail else where
