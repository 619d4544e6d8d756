"""``onrecord show`` of an episode's steps: long values shortened where it says so, and
what became of each call of a tool world's Gymnasium face.

A 3,000-character action filled ~45 lines of the step table; an error or a state was
cut at 60 characters without a word. A value longer than its column's limit is now cut
to the limit and followed by ``… (N characters)``, and the command ends with how to see
it whole (``--full``).

A ``ToolWorldEnv`` step whose call was rejected or failed is a successful *step* (the
capture status stays ``ok``: the env answered); what became of the *call* is in the
step's ``info`` (``status``) and its observation (``error``), which the step table did
not show, so every step read ``ok``. Which steps are a tool world's, and what became of
their calls, is ``onrecord._tool_steps``'s (the HTML report's episode view reads it too).
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

import orjson
from rich.console import Console
from rich.text import Text

from onrecord._step_text import NOT_SENT, OBSERVER_FAILED, not_sent, observer_failure
from onrecord._tool_steps import DONE as _DONE
from onrecord._tool_steps import tool_call, tool_calls
from onrecord.cli._lines import counted, print_phrases, print_sentence
from onrecord.cli._render import FIRST_STEPS, _styled, _table, literal, plain
from onrecord.cli._step_spec import refuse_absent_steps
from onrecord.episode import EpisodeEvidence

__all__ = [
    "ACTION",
    "ERROR",
    "STATE",
    "Cells",
    "as_json",
    "render_episode",
    "tool_call",
    "tool_calls",
]

ACTION = ERROR = 160
"""Characters of an action or an error shown before ``… (N characters)``."""
STATE = 80
"""Characters of an observed state shown (it was cut at 60, without a word)."""


class Cells:
    """Turns values into table cells, shortening (unless ``full``) and counting."""

    def __init__(self, *, full: bool) -> None:
        self.full = full
        self.shortened = 0

    def __call__(self, value: Any, limit: int) -> str | Text:
        """``value`` as literal cell text, cut after ``limit`` characters with its length."""
        text = value if isinstance(value, str) else as_json(value)
        if self.full or len(text) <= limit:
            # A Text: a whole cell needs no markup, and a cut one (below) is a Text too.
            return Text(plain(text))
        self.shortened += 1
        # A Text, not markup: a cut ending in three backslashes took the "[dim]" after it
        # for escaped text, and the closing "[/]" crashed the table (MarkupError).
        return Text(plain(text[:limit])).append(f"… ({len(text):,} characters)", style="dim")

    def notice(self, console: Console, command: str) -> None:
        """Say that values were shortened and how to see them whole."""
        if self.shortened:
            console.print(
                f"{self.shortened} long value(s) shortened, each followed by its length; "
                f"see them whole: {literal(command)} --full",
                soft_wrap=True,  # the command is copied from here: one line
            )


def as_json(value: Any) -> str:
    """A value as compact JSON, so text "1" and the number 1 read apart."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # not JSON (a record never holds one, but never crash on it)
        return str(value)


def render_episode(
    console: Console,
    episode: EpisodeEvidence,
    steps: Container[int] | None = None,
    *,
    full: bool = False,
    command: str = "onrecord show FILE",
) -> None:
    """Header facts, then one row per attempted step: those in ``steps``, or by default
    the first ``FIRST_STEPS`` and every attempt that did not succeed (the ones a
    reviewer looks for), with a marker where steps are left out. For a tool world's
    steps, a ``call`` column says what became of each call (the step ``status`` stays
    the capture's), its error is in ``error``, and a call that did not succeed is shown
    by default like a failed step. ``command`` is how the notices name the command."""
    refuse_absent_steps(steps, range(len(episode)))  # before a line of it is printed
    case, env = episode.case, episode.environment
    # Phrases: a case id's (a task file's) second line hangs, never at column 0.
    print_phrases(
        console,
        [
            f"[bold]episode[/] {literal(case['case_id'])}",
            f"env={literal(env['environment_id'])}",
            f"observer={literal(env['observer_id'])}",
            f"seed={literal(env['seed'])}",
            f"ended={_styled(episode.ended)}",
            f"sha256:{episode.digest[:16]}",
        ],
    )
    attempts = episode.attempts()
    transitions = episode.transitions()
    calls = tool_calls(transitions)
    # A step that reached the environment has its reward (what tells a goal from a hole
    # when both terminate); a refused or raising one has none.
    rewards = {transition["index"]: transition["reward"] for transition in transitions}

    def by_default(attempt: dict[str, Any]) -> bool:
        call = calls.get(attempt["index"])
        return bool(
            attempt["index"] < FIRST_STEPS
            or attempt["status"] != "ok"
            or (call is not None and call["status"] not in _DONE)
        )

    shown = [
        attempt
        for attempt in attempts
        if (attempt["index"] in steps if steps is not None else by_default(attempt))
    ]
    headers = ("step", "status", "call") if calls else ("step", "status")
    table = _table(*headers, "action", "reward", "error", "state")
    gap = ("",) * (len(headers) - 2 + 4)
    cell = Cells(full=full)
    previous = -1
    for attempt in shown:
        if attempt["index"] != previous + 1:
            table.add_row("…", counted(attempt["index"] - previous - 1, "step"), *gap)
        previous = attempt["index"]
        call = calls.get(attempt["index"])
        error = attempt["error"]["message"] if attempt["error"] else ""
        if call is not None and call["status"] not in _DONE:
            error = error or call["error"]
        status = [_styled(attempt["status"])]
        if calls:
            status.append(_styled(call["status"]) if call is not None else "")
        table.add_row(
            str(attempt["index"]),
            *status,
            _action(attempt, cell),
            as_json(rewards[attempt["index"]]) if attempt["index"] in rewards else "",
            cell(error, ERROR),
            _state(attempt, cell),
        )
    if previous + 1 < len(attempts):
        table.add_row("…", counted(len(attempts) - previous - 1, "step"), *gap)
    console.print(table)
    if calls:
        console.print(_call_summary(calls))
    if steps is None and len(shown) < len(attempts):
        # ``command`` names the user's file: "[bold]" in it was read as markup, and a
        # line cut where COLUMNS ends could not be pasted.
        numbers = [attempt["index"] for attempt in attempts]
        spec = next_steps(numbers, {attempt["index"] for attempt in shown})
        console.print(f"more: {literal(command)} --steps {spec} (or --steps all)", soft_wrap=True)
    cell.notice(console, command)
    for issue in episode.coverage_issues:
        # As a sentence: an agent's error message quoted in it printed its lines at
        # column 0, so "boom\ndecision: accept" read as a verdict in a CI log.
        print_sentence(console, f"[yellow]coverage:[/] {literal(issue)}")


def _action(attempt: Mapping[str, Any], cell: Cells) -> str | Text:
    """The action as JSON (text "1" and the number 1 read apart), or ``not sent``."""
    if not_sent(attempt):
        return Text(NOT_SENT, style="dim")
    return cell(as_json(attempt["action"]), ACTION)


def _state(attempt: Mapping[str, Any], cell: Cells) -> str | Text:
    """The observed state as JSON, or why there is none: the observer's own error."""
    failure = observer_failure(attempt)
    if failure is None:
        return cell(as_json(attempt["state"]), STATE)
    shown = cell(failure, ERROR)
    shown = shown if isinstance(shown, Text) else Text(shown)
    shown.stylize("yellow", 0, len(OBSERVER_FAILED))
    return shown


MORE_STEPS = 60
"""How many steps the "more:" hint suggests printing next."""


def next_steps(numbers: list[int], shown: Container[int]) -> str:
    """The ``--steps`` range of up to ``MORE_STEPS`` steps from the first one left out,
    ending at the episode's last: the hint read "--steps 100-160" whatever the episode,
    which skipped steps 40-99 and, for a 61-step episode, showed nothing at all."""
    first = next(i for i, number in enumerate(numbers) if number not in shown)
    last = min(first + MORE_STEPS, len(numbers)) - 1
    return f"{numbers[first]}-{numbers[last]}"


def _call_summary(calls: Mapping[int, Mapping[str, str]]) -> str:
    """``tool calls: 4 ok, 3 rejected, 1 error`` over every step, shown or not."""
    counts: dict[str, int] = {}
    for call in calls.values():
        counts[call["status"]] = counts.get(call["status"], 0) + 1
    order = sorted(counts, key=lambda status: (status not in _DONE, status))
    return "tool calls: " + ", ".join(f"{counts[status]} {_styled(status)}" for status in order)
