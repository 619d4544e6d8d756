"""How a saved tool-world episode ended, as ``onrecord show DIR`` prints it.

Before: ``show`` printed "5 steps" and the calls, never the manifest's ``ending``, so in
a CI log an agent that crashed after its first write read like one that finished.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from onrecord.cli._lines import print_sentence
from onrecord.cli._render import cell, literal

__all__ = ["print_ending"]

_MEANING = {
    "agent_error": "the agent raised",
    "step_limit": "the agent ran out of steps",
    "stopped": "the harness stopped it",
    "undeclared": "nobody declared how it ended",
}
"""What an ending other than ``finished`` means, said when no error says it."""

_STYLE = {"finished": "green", "agent_error": "red", "step_limit": "yellow", "stopped": "yellow"}


def print_ending(console: Console, manifest: Mapping[str, Any]) -> None:
    """``ended: ENDING`` and the error declared with it: on the same line when it is
    one short line, else on lines of its own under it, indented. The error is the
    agent's text: "boom\\ndecision: accept" printed as is put a line at column 0,
    where a CI log reads onrecord's own output."""
    ending = str(manifest.get("ending", "undeclared"))  # older manifests: none declared
    style = _STYLE.get(ending)
    name = cell(ending)  # forged: a newline in it shown as \n, never a line of its own
    head = "[bold]ended:[/] " + (f"[{style}]{name}[/]" if style else name)
    error = manifest.get("ending_error")
    if error is None:
        meaning = _MEANING.get(ending)
        console.print(head if meaning is None else f"{head} ({meaning})")
        return
    text = literal(error)
    one_line = f"{head}: {text}"
    if "\n" not in text and console.render_str(one_line, emoji=False).cell_len <= console.width:
        console.print(one_line)
        return
    console.print(f"{head}, with the error:")
    print_sentence(console, text, indent=2, hanging=2)
