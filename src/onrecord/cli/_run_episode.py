"""``onrecord show RUN --episode CASE#REPEAT``: one episode of a run, in the terminal.

The verdicts it was graded with (check, status, reason, and the evidence of those not
passed: ``_verdict_evidence``) and what happened: the recorded steps of a Gymnasium
episode, or the tool calls of a tool-world episode. Before, only the HTML report showed
one episode of a run.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Container, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from onrecord._natural import natural_key
from onrecord.cli._ending import print_ending
from onrecord.cli._episode_view import Cells, next_steps, render_episode
from onrecord.cli._lines import print_phrases, print_sentence
from onrecord.cli._render import FIRST_STEPS, _styled, _table, cell, literal
from onrecord.cli._row_history import render_row_history
from onrecord.cli._step_spec import call_numbers, refuse_absent_steps
from onrecord.cli._verdict_evidence import render_evidence
from onrecord.episode import EPISODE_SCHEMA
from onrecord.errors import InputError
from onrecord.runner._sealed import saved_evidence

__all__ = [
    "ALL_NOT_PASSED",
    "path_word",
    "render_not_passed",
    "render_run_episode",
    "render_tool_calls",
]

_TEXT = 80
"""Characters of arguments, a result or an error shown before ``… (N characters)``."""


def render_run_episode(
    console: Console,
    run: Path,
    wanted: str,
    steps: Container[int] | None,
    *,
    full: bool = False,
    regrade: tuple[Path, Any] | None = None,
    all_evidence: bool = False,
) -> None:
    """Find ``wanted`` (``case_id#repeat``, or a case id when it ran once) in the run
    directory ``run`` (verified already) and print it; ``full``: long values whole.
    ``regrade``: (its directory, its report), whose verdicts are shown instead of those
    the episode was graded with when recorded. The evidence of the verdicts not passed
    is printed under them; ``all_evidence``: that of every verdict."""
    from onrecord.runner import RunStore

    store = RunStore.open(run)
    records = {record.key: record for record in store.records()}
    key = _key(wanted, records)
    record = None if key is None else records[key]
    if record is None:
        _refuse_ambiguous(wanted, records)
        first = sorted(records, key=lambda key: (natural_key(key[0]), key[1]))[:8]
        known = ", ".join(f"{case}#{repeat}" for case, repeat in first)
        raise InputError(
            f"--episode {wanted!r}: {run} recorded no such episode; give CASE#REPEAT, "
            f"e.g. {known or '(none recorded yet)'}"
        )
    data = record.data
    saved = store.saved_episode(record)
    evidence = saved_evidence(saved) if saved.evidence.get("schema") == EPISODE_SCHEMA else None
    # Before anything is printed: a --steps naming no step of this episode is refused.
    refuse_absent_steps(
        steps, range(len(evidence)) if evidence is not None else call_numbers(saved.action_log)
    )
    # Phrases: a case id's (a task file's) second line hangs, never at column 0.
    print_phrases(
        console,
        [
            f"[bold]episode[/] {literal(data['case_id'])}#{data['repeat']}",
            f"seed {literal(data['seed'])}",
            f"sha256:{str(data['digest'])[:16]}",
        ],
    )
    _print_tool_ending(console, saved.evidence)
    trial, named = data["trial"], run
    if regrade is not None:
        named, trial = regrade[0], _regraded(regrade[1], record.key)
        console.print(f"verdicts of the regrade {cell(named.name)}")
    # Quoted: the hints under the tables are pasted (a path or case id with spaces).
    command = f"onrecord show {path_word(named)} {_episode_option(wanted)}"
    _verdicts(console, trial)
    render_evidence(
        console, trial.get("results", ()), every=all_evidence, full=full, command=command
    )
    if evidence is not None:  # with its side-file blobs (image observations)
        render_episode(console, evidence, steps, full=full, command=command)
    else:
        shown = render_tool_calls(console, saved.action_log, steps, full=full, command=command)
        render_row_history(
            console, saved.evidence, shown, full=full, command=command, chosen=steps is not None
        )


def _print_tool_ending(console: Console, evidence: Mapping[str, Any]) -> None:
    """A tool world's episode: how it ended, as ``show DIR`` of a saved episode says it
    (the run's record names the error ``agent_error``). Before, only a coverage issue
    said it, and nothing said ``finished``. Other evidence (a Gymnasium episode's, a
    custom provider's) has no such ending."""
    from onrecord.runner._toolworld import TOOL_EPISODE_SCHEMA

    if evidence.get("schema") == TOOL_EPISODE_SCHEMA:
        print_ending(
            console, {"ending": evidence["ending"], "ending_error": evidence.get("agent_error")}
        )


def _regraded(report: Any, key: tuple[str, int]) -> dict[str, Any]:
    """The trial of ``report`` (a regrade's, verified against the run) for ``key``."""
    for trial in report.trials:
        if (str(trial.case["case_id"]), trial.repeat) == key:
            result: dict[str, Any] = trial.to_dict()
            return result
    # A regrade grades every episode recorded when it ran; a resume records more.
    raise InputError(
        f"--episode {key[0]}#{key[1]}: the regrade has no verdicts for it (recorded after "
        "the regrade ran); show it from the run directory, or re-grade the run again"
    )


def path_word(path: Path | str) -> str:
    """``path`` quoted for the shell, with ``./`` before one that starts with ``-``
    (``Path('./-run')`` prints as ``-run``, which a pasted command took for an option)."""
    text = str(path)
    return shell_quote(f"./{text}" if text.startswith("-") else text)


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Characters a quoted word would print raw: a newline, a tab, terminal controls."""


def shell_quote(text: str) -> str:
    """``shlex.quote(text)``, or for text holding a newline or another control character
    bash's ``$'…'`` with escapes: quoted as is, a regrade named "v2\\ndecision: accept"
    put "decision: accept'" at column 0 of a CI log, the hint still pastes whole."""
    if not _UNPRINTABLE.search(text):
        return shlex.quote(text)
    body = text.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + _UNPRINTABLE.sub(_escape, body) + "'"


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    named = {"\n": "\\n", "\t": "\\t"}.get(match.group())
    return named or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def _episode_option(wanted: str) -> str:
    """``--episode WORD``, or ``--episode=WORD`` for a case id starting with ``-``: the
    command line refused ``--episode -dash#0`` ("expected one argument")."""
    word = _shell_word(wanted)
    return f"--episode={word}" if wanted.startswith("-") else f"--episode {word}"


def _shell_word(text: str) -> str:
    """``text`` quoted for the shell, but an episode such as ``frozenlake/goal#0`` as it
    is: a ``#`` inside a word starts no comment, and the quotes only made it harder to
    read (``shlex.quote`` quotes every ``#``)."""
    unquoted = text.replace("#", "")
    if text[:1] != "#" and unquoted and shlex.quote(unquoted) == unquoted:
        return text
    return shell_quote(text)


def _key(wanted: str, records: Mapping[tuple[str, int], Any]) -> tuple[str, int] | None:
    case, hash_sign, repeat = wanted.rpartition("#")
    # ASCII digits only: str.isdigit() also holds for '²', which int() refuses
    # (`--episode 'case#²'` ended in a traceback and exit 1, a CI gate's "reject").
    if hash_sign and repeat.isascii() and repeat.isdigit() and (case, int(repeat)) in records:
        return (case, int(repeat))
    runs = [key for key in records if key[0] == wanted]
    return runs[0] if len(runs) == 1 else None  # a case id alone, when unambiguous


def _refuse_ambiguous(wanted: str, records: Mapping[tuple[str, int], Any]) -> None:
    """A case id alone that ran several times: say so and name its episodes (it was
    refused as "recorded no such episode", though the run recorded it several times)."""
    repeats = sorted(repeat for case, repeat in records if case == wanted)
    if len(repeats) > 1:
        shown = ", ".join(f"{wanted}#{repeat}" for repeat in repeats[:8])
        more = f" and {len(repeats) - 8} more" if len(repeats) > 8 else ""
        raise InputError(
            f"--episode {wanted!r}: the case ran {len(repeats)} times; give one episode "
            f"as CASE#REPEAT: {shown}{more}"
        )


def _verdicts(console: Console, trial: Mapping[str, Any]) -> None:
    table = _table("check", "version", "status", "reason")
    for result in trial.get("results", ()):
        table.add_row(
            cell(result["name"]),
            cell(result["version"]),
            _styled(result["status"]),
            literal(result["reason"]),
        )
    console.print(table)
    for issue in trial.get("coverage_issues", ()):
        # Hanging: an agent's multi-line error message cannot print a line of its own.
        print_sentence(console, f"coverage: {literal(issue)}", indent=2, hanging=4)


def render_tool_calls(
    console: Console,
    events: Any,
    steps: Container[int] | None,
    *,
    full: bool = False,
    command: str = "onrecord show FILE",
) -> set[int]:
    """A tool world's action log, one row per call (by default the first ``FIRST_STEPS``
    and every call that did not succeed); long values shortened unless ``full``. Returns
    the step numbers shown."""
    table = _table("step", "tool", "status", "arguments", "result or error")
    events = list(events)
    cell = Cells(full=full)
    shown: set[int] = set()
    numbers = call_numbers(events)
    refuse_absent_steps(steps, numbers)
    for index, (number, event) in enumerate(zip(numbers, events, strict=True)):
        # By default, as for Gymnasium steps, the first FIRST_STEPS calls and every call
        # that did not succeed: an episode of 100,000 calls printed every one of them.
        # --steps selects by the step number the table shows (the world's, from 1), not
        # by position: `--steps 5` printed the row labelled 6.
        wanted = number in steps if steps is not None else _shown_by_default(index, event)
        if not wanted:
            continue
        shown.add(number)
        table.add_row(
            str(number),
            literal(event.get("tool")),
            _styled(str(event.get("status"))),
            cell(event.get("arguments"), _TEXT),
            cell(_outcome(event), _TEXT),
        )
    console.print(table)
    if steps is None and len(shown) < len(events):
        console.print(
            f"{len(events) - len(shown)} successful calls after the first {FIRST_STEPS} left "
            f"out; more: {literal(command)} --steps {next_steps(numbers, shown)} "
            "(or --steps all)",
            soft_wrap=True,  # the command is copied from here: one line
        )
    cell.notice(console, command)
    return shown


def _outcome(event: Any) -> Any:
    """The result of a call that succeeded, else its error as ``type: message``."""
    if event.get("status") == "ok":
        return event.get("result")
    error = event.get("error")
    if isinstance(error, Mapping) and set(error) == {"type", "message"}:
        return f"{error['type']}: {error['message']}"
    return error


def _shown_by_default(index: int, event: Any) -> bool:
    return index < FIRST_STEPS or event.get("status") != "ok"


_tool_calls = render_tool_calls  # its earlier name (tests import it)


_LISTED = 10
"""Episodes not passed that ``show RUN`` lists before saying how many more there are."""

ALL_NOT_PASSED = "--all-not-passed"
"""The ``show`` option that lists every episode not passed."""


def render_not_passed(
    console: Console,
    shown: Path,
    report: Any,
    *,
    every: bool = False,
    title: str = "episodes not passed",
) -> int:
    """The episodes of ``report`` that did not pass (failed first, then incomplete, each
    in the report's order) with the checks each did not pass, and the command that shows
    one: ``show RUN`` printed rates and a decision, and the way to the failures themselves
    was only in the HTML report. ``shown`` is the run or regrade directory the commands
    name; the first ``_LISTED`` unless ``every``. Returns how many did not pass."""
    names = report.check_names
    outcomes = [(trial, trial.outcome_among(names)) for trial in report.trials]
    listed = [item for item in outcomes if item[1] == "fail"]
    listed += [item for item in outcomes if item[1] == "incomplete"]
    if not listed:
        return 0
    table = _table("episode", "outcome", "checks not passed", title=title)
    for trial, outcome in listed if every else listed[:_LISTED]:
        missing = [f"{name} (no result)" for name in names if trial.result(name) is None]
        not_passed = [r.name for r in trial.results if r.status != "pass"] + missing
        # Every check may pass and the episode still be incomplete (it never called
        # finish): the cell was empty, saying nothing of why. Its coverage issues say.
        not_passed = not_passed or [f"coverage: {issue}" for issue in trial.coverage_issues]
        table.add_row(
            literal(f"{trial.case['case_id']}#{trial.repeat}"),
            _styled(outcome),
            literal(", ".join(not_passed)),
        )
    console.print(table)
    more = len(listed) - _LISTED
    if more > 0 and not every:
        # In the terminal: the HTML report it named is no help in a CI log.
        console.print(
            f"… {more} more not passed; every one: "
            f"{literal(f'onrecord show {path_word(shown)} {ALL_NOT_PASSED}')}",
            soft_wrap=True,  # the command is copied from here: one line
        )
    first = listed[0][0]
    episode = _episode_option(f"{first.case['case_id']}#{first.repeat}")
    console.print(
        f"see one: {literal(f'onrecord show {path_word(shown)} {episode}')}",
        soft_wrap=True,  # the command is copied from here: one line
    )
    return len(listed)
