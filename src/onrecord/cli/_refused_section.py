"""The Markdown section of a command refused for its inputs (exit 3): heading, what was
given, the error and the commands it names, in a block to copy.

``gate`` has written it since its CI files said why a gate was refused; ``compare``
wrote nothing when A or B could not be read at all (a missing file, a damaged report, an
interrupted run without ``report.json``), so the job's summary was empty. One layout for
both: a reader of a CI summary finds a refusal the same way whichever command made it.
"""

from __future__ import annotations

import re

from onrecord.cli._ci_facts import clean
from onrecord.cli._markdown import text

__all__ = ["MESSAGE", "named_commands", "refused_section"]

MESSAGE = 2000
"""Characters of the error shown: one quoting a long path or an agent's output is cut."""
_COMMANDS = 5
# A command the message names, as messages quote one: `onrecord run --resume runs/x`.
# "`onrecord gate`" alone names the command, not something to run.
_COMMAND = re.compile(r"`(onrecord [a-z-]+ [^`\n]+)`")


def named_commands(message: str) -> list[str]:
    """The ``onrecord`` commands ``message`` quotes (the first 5, each once), e.g. the
    resume that finishes an interrupted run: a reader copies them from the summary."""
    found = dict.fromkeys(clean(match, 500) for match in _COMMAND.findall(message))
    return list(found)[:_COMMANDS]


def refused_section(command: str, subject: str, message: str) -> str:
    """``onrecord COMMAND`` refused for ``message``; ``subject`` is Markdown already (the
    inputs as given, escaped with ``text``)."""
    from onrecord import __version__  # importlib.metadata: only when it is written

    lines = [
        f"### ⛔ onrecord {command}: refused (exit 3)",
        "",
        subject,
        "",
        text(message, MESSAGE),
        "",
    ]
    commands = named_commands(message)
    if commands:
        # A fenced block shows a command as typed (GitHub gives it a copy button); it
        # holds no backtick, so the fence cannot be closed early.
        heading = f"**Commands it names** (then {command} again):"
        lines += [heading, "", "```", *commands, "```", ""]
    lines.append(f"<sub>onrecord {__version__}</sub>")
    return "\n".join(lines) + "\n"
