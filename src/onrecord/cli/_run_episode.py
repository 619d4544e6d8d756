"""``onrecord show RUN --episode CASE#REPEAT``: one episode of a run, in the terminal.

The verdicts it was graded with (check, status, reason) and what happened: the recorded
steps of a Gymnasium episode, or the tool calls of a tool-world episode. Before, only the
HTML report showed one episode of a run.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console

from onrecord.cli._render import _styled, _table, literal, render_episode
from onrecord.episode import EPISODE_SCHEMA, EpisodeEvidence
from onrecord.errors import InputError

__all__ = ["render_run_episode"]

_TEXT = 80


def render_run_episode(
    console: Console, run: Path, wanted: str, steps: Container[int] | None
) -> None:
    """Find ``wanted`` (``case_id#repeat``, or a case id when it ran once) in the run
    directory ``run`` (verified already) and print it."""
    from onrecord.runner import RunStore

    store = RunStore.open(run)
    records = {record.key: record for record in store.records()}
    record = records.get(_key(wanted, records))  # type: ignore[arg-type]
    if record is None:
        known = ", ".join(f"{case}#{repeat}" for case, repeat in sorted(records)[:8])
        raise InputError(
            f"--episode {wanted!r}: {run} recorded no such episode; give CASE#REPEAT, "
            f"e.g. {known or '(none recorded yet)'}"
        )
    data = record.data
    console.print(
        f"[bold]episode[/] {literal(data['case_id'])}#{data['repeat']}  seed "
        f"{literal(data['seed'])}  sha256:{str(data['digest'])[:16]}"
    )
    _verdicts(console, data["trial"])
    saved = store.saved_episode(record)
    if saved.evidence.get("schema") == EPISODE_SCHEMA:
        render_episode(console, EpisodeEvidence.from_dict(dict(saved.evidence)), steps)
    else:
        _tool_calls(console, saved.action_log, steps)


def _key(wanted: str, records: Mapping[tuple[str, int], Any]) -> tuple[str, int] | None:
    case, hash_sign, repeat = wanted.rpartition("#")
    if hash_sign and repeat.isdigit() and (case, int(repeat)) in records:
        return (case, int(repeat))
    runs = [key for key in records if key[0] == wanted]
    return runs[0] if len(runs) == 1 else None  # a case id alone, when unambiguous


def _verdicts(console: Console, trial: Mapping[str, Any]) -> None:
    table = _table("check", "version", "status", "reason")
    for result in trial.get("results", ()):
        table.add_row(
            literal(result["name"]),
            literal(result["version"]),
            _styled(result["status"]),
            literal(result["reason"]),
        )
    console.print(table)
    for issue in trial.get("coverage_issues", ()):
        console.print(f"  coverage: {literal(issue)}")


def _tool_calls(console: Console, events: Any, steps: Container[int] | None) -> None:
    table = _table("step", "tool", "status", "arguments", "result or error")
    for index, event in enumerate(events):
        if steps is not None and index not in steps:
            continue
        outcome = event.get("error") if event.get("status") != "ok" else event.get("result")
        table.add_row(
            str(event.get("step", index)),
            literal(event.get("tool")),
            _styled(str(event.get("status"))),
            literal(_short(event.get("arguments"))),
            literal(_short(outcome)),
        )
    console.print(table)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "…"
