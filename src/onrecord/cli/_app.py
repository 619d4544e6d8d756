"""The ``onrecord`` command: its commands and ``main``. Each subcommand lives in its own
module listed in ``COMMAND_MODULES``; a module exposes ``register(subparsers)``. The
parser itself is built in ``onrecord.cli._parser``.

Here rather than in ``onrecord.cli.main`` (which re-exports it): the package imports
``main`` from this module, and had it imported ``onrecord.cli.main`` instead,
``python -m onrecord.cli.main`` would warn that the module was already imported.

Light on purpose: the console script imports this module before ``main()`` runs, and a
Ctrl-C during that import is a Python traceback (nothing is there yet to catch it), so
argparse and every command's dependencies (numpy, gymnasium, rich, ...) are imported
inside ``main()``. ``tests/core/test_cli_startup.py`` holds it to that."""

from __future__ import annotations

import sys

# ``TYPE_CHECKING = False``, not typing's: the same to type checkers, without importing
# typing (and with it re) before ``main()``.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
del TYPE_CHECKING

__all__ = [
    "COMMANDS",
    "COMMAND_MODULES",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "build_parser",
    "main",
    "print_error",
    "refusal",
]

# Each command, with the one-line help its module's ``register`` gives it: ``onrecord
# --help`` lists them all, and that should not import every command (and all they need)
# to print one line each. ``tests/core/test_cli_startup.py`` checks that these lines are
# the modules' own.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("verify", "verify saved records: evidence, reports, decisions, run directories, ..."),
    ("show", "print a saved record as tables"),
    ("gate", "decide accept / reject / indeterminate for a report"),
    ("compare", "paired comparison of two reports (McNemar, bootstrap)"),
    ("demo", "run the built-in demonstration and write its reports"),
    ("ledger", "the invoice ledger experiment (real SQLite fixture)"),
    ("run", "run an agent over tasks × seeds × repeats into a run directory"),
    ("report", "write a self-contained HTML report of a run"),
    ("regrade", "re-grade a saved run with (improved) checks; lists changed verdicts"),
    ("check", "run named checks on a saved tool-world episode"),
    ("worldmodel", "world-model experiment: run it, or replay a saved run offline"),
)
COMMAND_MODULES: tuple[str, ...] = tuple(f"onrecord.cli.{name}" for name, _ in COMMANDS)

# Exit codes: 0 accept / success, 1 reject, 2 indeterminate, 3 bad input or tampering.
EXIT_ERROR = 3
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every registered subcommand."""
    from onrecord.cli._parser import command_parser

    return command_parser({name for name, _ in COMMANDS})


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    # Commands that write report their own Ctrl-C (what is left and how to continue);
    # anywhere else — importing, verifying, printing tables — it was a Python traceback.
    # Every import but this module's is inside: a Ctrl-C in the first fraction of a
    # second, while numpy and the rest import, is caught here too.
    words = sys.argv[1:] if argv is None else list(argv)
    from onrecord.cli._encoding import tolerant_streams  # codecs and sys: loaded already

    # First: an error message on stderr, or argparse's, is readable on any terminal.
    tolerant_streams()
    try:
        return _main(words)
    except KeyboardInterrupt:
        # Which command, for a CI log running several: "onrecord gate: interrupted".
        print(f"{_prog(words)}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _prog(words: Sequence[str]) -> str:
    """``onrecord COMMAND`` for the first word that names a command, else ``onrecord``:
    read without argparse, which may not be imported yet."""
    names = {name for name, _ in COMMANDS}
    command = next((word for word in words if not word.startswith("-")), None)
    return f"onrecord {command}" if command in names else "onrecord"


def _main(args_list: list[str]) -> int:
    from onrecord.cli._parser import command_requested

    # Only the command asked for is imported (none for ``--version`` or ``--help``); the
    # others are listed by name and help. A word that is no command imports none, and
    # argparse refuses it, listing the commands.
    requested = command_requested(args_list)
    if requested is None:  # help, version or a usage error: nothing runs to interrupt
        return _command(args_list, None)
    from onrecord.runner._interrupts import interrupt_reports_quiet, interrupts_kept

    # A Ctrl-C that lands in code which swallows it (a weakref callback or __del__
    # prints "Exception ignored ... KeyboardInterrupt" and goes on) was lost: a demo
    # interrupted there ran on to exit 0. Kept, it ends the command as interrupted, and
    # Python's report of it (a traceback under the command's output) is not printed.
    with interrupt_reports_quiet(), interrupts_kept() as noting:
        code = _command(args_list, requested)
        if code == EXIT_INTERRUPTED and noting is not None:
            noting.pending = False  # the command reported it itself
    return code


def _command(args_list: list[str], requested: str | None) -> int:
    from onrecord.cli._parser import command_parser
    from onrecord.errors import OnrecordError

    parser = command_parser(() if requested is None else (requested,))
    args = parser.parse_args(args_list)
    try:
        code: int = args.func(args)
    except (OnrecordError, OSError) as exc:
        from onrecord.runner._interrupts import raise_noted_interrupt

        raise_noted_interrupt()  # the error is what a swallowed Ctrl-C made of the command
        return _error(args.command, refusal(exc))
    return code


def refusal(exc: Exception) -> str:
    """What a command refused for ``exc`` (an ``OnrecordError`` or ``OSError``) says: the
    line after ``onrecord COMMAND: error:``, and what ``gate`` puts in its CI files."""
    from onrecord.errors import OnrecordError

    if isinstance(exc, OnrecordError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"no such file: {exc.filename}"
    if isinstance(exc, IsADirectoryError):
        return f"{exc.filename} is a directory; give the path of a saved record file"
    if isinstance(exc, OSError):  # permissions, a full disk: the file, and what went wrong
        # An OSError without a file (a refused connection, a socket timeout) is not about
        # "a file": say what it is.
        where = f"{exc.filename}: " if exc.filename else f"{type(exc).__name__}: "
        return f"{where}{exc.strerror or exc}"
    return str(exc)


def _error(command: str, message: str) -> int:
    print_error(command, message)
    return EXIT_ERROR


def print_error(command: str, message: str) -> None:
    """One refused command's (or input's) message on stderr; a path or an agent's text
    in it cannot start a line of its own (see ``_hanging``)."""
    print(f"onrecord {command}: error: {_hanging(message)}", file=sys.stderr)


def _hanging(message: str) -> str:
    """``message`` with its later lines indented and its controls shown as escapes. An
    error can quote an agent or environment ("raised RuntimeError: boom\ndecision:
    accept"): printed as is, its second line began at column 0 of the CI log, where it
    read as onrecord's own verdict."""
    from onrecord.cli._render import plain  # rich: imported only when there is an error

    lines = plain(message.replace("\r\n", "\n")).split("\n")
    return "\n  ".join(lines)
