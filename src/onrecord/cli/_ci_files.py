"""Where ``gate --junit-xml`` and ``--markdown`` (and ``compare --markdown``) write: a
file, checked before anything runs, or stdout for ``-``.

A CI job that gates a release must not learn only at the end that its report path was
wrong, nor find a half-written file: a path through a file is refused up front (exit 3,
nothing written), a missing directory is made when the document is written (as pytest's
``--junitxml`` does, so ``--junit-xml reports/gate.xml`` works on a fresh checkout), JUnit
XML is written atomically, and Markdown is appended in one write because
``$GITHUB_STEP_SUMMARY`` is a file that every step of a job appends to.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from onrecord._canonical import atomic_write_bytes
from onrecord.cli._output_path import output_path
from onrecord.cli._render import _silence_stdout
from onrecord.errors import InputError

__all__ = [
    "STDOUT",
    "CiOutput",
    "ci_output",
    "record_output",
    "refuse_inputs",
    "refuse_same_file",
    "stderr_notice",
]

STDOUT = "-"
"""The file name that means stdout (the document replaces the terminal tables there)."""


@dataclass(frozen=True)
class CiOutput:
    """A checked destination of one output option."""

    option: str
    """The option, e.g. ``--junit-xml``: errors name it."""
    path: Path | None
    """The file, or None for stdout."""

    @property
    def to_stdout(self) -> bool:
        """Whether the document goes to stdout (``-``)."""
        return self.path is None

    def replace(self, data: bytes) -> None:
        """Write ``data`` whole, atomically (a reader never sees half a file)."""
        if self.path is None:
            _write_stdout(data)
        elif self.path.exists() and not self.path.is_file():  # /dev/stdout, a pipe
            self.path.write_bytes(data)
        else:
            atomic_write_bytes(self.path, data)

    def append(self, text: str) -> None:
        """Append ``text``, after a blank line when the file has content, in one write:
        another command appending to the same summary cannot interleave with it."""
        data = text.encode()
        if self.path is None:
            _write_stdout(data)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        regular = self.path.is_file()  # not /dev/stdout or a pipe: no seek, no fsync
        with self.path.open("ab") as handle:
            handle.write(_separator(_tail(self.path) if regular else b"") + data)
            handle.flush()
            if regular:
                os.fsync(handle.fileno())


def ci_output(value: str | None, option: str, suffix: str) -> CiOutput | None:
    """The destination ``value`` names (None when the option was not given). Refused
    (``InputError``, exit 3) before anything runs: a path through a file (its directory
    could never be made), a directory given as the file, and whatever ``output_path``
    refuses (a saved record, a file inside a manifest-pinned directory). A missing
    directory is made when the document is written, not here: bad input leaves nothing
    behind. A file with ``suffix`` in a run directory may be replaced: no record of a
    run has that suffix."""
    if value is None:
        return None
    if value == STDOUT:
        return CiOutput(option, None)
    return CiOutput(option, output_path(value, option, views=(".html", suffix)))


def record_output(value: str | None, option: str) -> CiOutput | None:
    """Where ``gate --output`` / ``compare --json`` save their record: a file (its
    directory made as needed, checked by ``output_path``), or stdout for ``-`` (it was
    written to a file named "-", unlike the CI options' ``-``)."""
    if value is None:
        return None
    if value == STDOUT:
        return CiOutput(option, None)
    return CiOutput(option, output_path(value, option))


def refuse_same_file(outputs: Sequence[tuple[str, Path | CiOutput | None]]) -> None:
    """Two output options naming the same file (one would replace the other), or two
    sending their document to stdout (they would be mixed), are refused."""
    seen: dict[Path | None, str] = {}
    for option, output in outputs:
        if output is None:
            continue
        path = output.path if isinstance(output, CiOutput) else output
        key = None if path is None else path.resolve()
        if key in seen:
            where = "stdout (-)" if path is None else f"the same file {path}"
            raise InputError(f"{seen[key]} and {option} both name {where}; give two file names")
        seen[key] = option


def refuse_inputs(
    outputs: Sequence[tuple[str, Path | CiOutput | None]],
    inputs: Sequence[tuple[str, str]],
    changed: str,
) -> None:
    """An output naming an input file is refused before anything is written (``changed``
    says what writing it would change, e.g. "the input being gated"). ``gate --markdown
    policy.toml`` appended the summary to the hand-written policy (the next gate could
    not read it); ``compare A B --html A`` replaced an unreadable A, the evidence its
    error said to restore, with the page saying so, and ``--markdown A`` appended to a
    decision given as A by mistake. A saved report or run record is refused already, by
    ``output_path``: these are the inputs it lets through."""
    for option, output in outputs:
        path = output.path if isinstance(output, CiOutput) else output
        if path is None or not path.exists():
            continue
        for name, value in inputs:
            if Path(value).exists() and os.path.samefile(path, value):
                raise InputError(
                    f"{option} {path} is the {name} file: writing it would change "
                    f"{changed}; give another file name"
                )


def _tail(path: Path) -> bytes:
    """The last two bytes of a file."""
    with path.open("rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - 2))
        return handle.read()


def _separator(end: bytes) -> bytes:
    """What makes the text already in a file end in a blank line (so a heading appended
    after it starts a block of its own), given its last two bytes."""
    if not end or end == b"\n\n":
        return b""
    return b"\n" if end.endswith(b"\n") else b"\n\n"


def stderr_notice(text: str) -> None:
    """A ``wrote FILE`` line kept off stdout while stdout carries a document."""
    print(text, file=sys.stderr, flush=True)


def _write_stdout(data: bytes) -> None:
    # Bytes, not text: the document is UTF-8 whatever the locale (an ASCII locale would
    # otherwise turn "≥" into an escape inside the XML or Markdown).
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:  # `| head`: the decision's exit code still stands
        _silence_stdout()
