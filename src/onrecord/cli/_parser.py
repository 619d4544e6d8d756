"""The ``onrecord`` argument parser, built for the one command a command line asks for.

``onrecord verify FILE`` needs ``verify``'s options only; importing the other ten commands
to register theirs loaded numpy, gymnasium and rich on every call (a third of a second, in
CI jobs that call onrecord many times). The other commands are added by name and
one-line help only, which is all ``onrecord --help`` and argparse's "invalid choice"
message show of them."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Container, Sequence
from typing import Any, NoReturn

from onrecord.cli._app import COMMANDS, EXIT_ERROR

__all__ = ["command_parser", "command_requested"]


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error, and 2 means *indeterminate* here: a mistyped
    flag in a CI gate would read as a decision. Subcommand parsers inherit this class."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


class _Version(argparse.Action):
    """``--version``, looking the version up only when asked: the installed version comes
    from importlib.metadata, itself a few hundredths of a second to import."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "show program's version number and exit")
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        from onrecord import __version__

        print(f"onrecord {__version__}")
        parser.exit()


def command_requested(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names, as argparse will read it: the first word that is not
    an option (``onrecord``'s own options, ``-h`` and ``--version``, take no value, so no
    word before it is an option's). None when there is none (``--version``, ``--help``)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
    return None


def command_parser(registered: Container[str]) -> argparse.ArgumentParser:
    """The parser with the commands named in ``registered`` added by their modules, and
    the others by name and help only."""
    parser = _Parser(
        prog="onrecord", description="Evaluate agents and world models by what actually happened."
    )
    parser.add_argument("--version", action=_Version)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, help_text in COMMANDS:
        if name in registered:
            importlib.import_module(f"onrecord.cli.{name}").register(subparsers)
        else:
            # Never parsed: argparse picks the subparser of the same first non-option
            # word that ``command_requested`` found.
            subparsers.add_parser(name, help=help_text)
    return parser
