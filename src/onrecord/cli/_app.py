"""The ``onrecord`` command: its parser and ``main``. Each subcommand lives in its own
module listed in ``COMMAND_MODULES``; a module exposes ``register(subparsers)``.

Here rather than in ``onrecord.cli.main`` (which re-exports it): the package imports
``main`` from this module, and had it imported ``onrecord.cli.main`` instead,
``python -m onrecord.cli.main`` would warn that the module was already imported."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from onrecord import __version__
from onrecord.errors import OnrecordError

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

COMMAND_MODULES: tuple[str, ...] = (
    "onrecord.cli.verify",
    "onrecord.cli.show",
    "onrecord.cli.gate",
    "onrecord.cli.compare",
    "onrecord.cli.demo",
    "onrecord.cli.ledger",
    "onrecord.cli.run",
    "onrecord.cli.report",
    "onrecord.cli.regrade",
    "onrecord.cli.check",
    "onrecord.cli.worldmodel",
)

# Exit codes: 0 accept / success, 1 reject, 2 indeterminate, 3 bad input or tampering.
EXIT_ERROR = 3
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error, and 2 means *indeterminate* here: a mistyped
    flag in a CI gate would read as a decision. Subcommand parsers inherit this class."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every registered subcommand."""
    parser = _Parser(
        prog="onrecord", description="Evaluate agents and world models by what actually happened."
    )
    parser.add_argument("--version", action="version", version=f"onrecord {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    # Commands that write report their own Ctrl-C (what is left and how to continue);
    # anywhere else — importing, verifying, printing tables — it was a Python traceback.
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("onrecord: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except OnrecordError as exc:
        print(f"onrecord {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except FileNotFoundError as exc:
        print(f"onrecord {args.command}: error: no such file: {exc.filename}", file=sys.stderr)
        return EXIT_ERROR
    except IsADirectoryError as exc:
        print(
            f"onrecord {args.command}: error: {exc.filename} is a directory; give the path "
            "of a saved record file",
            file=sys.stderr,
        )
        return EXIT_ERROR
    except OSError as exc:  # permissions, a full disk: the file, and what went wrong
        # An OSError without a file (a refused connection, a socket timeout) is not about
        # "a file": say what it is.
        where = f"{exc.filename}: " if exc.filename else f"{type(exc).__name__}: "
        print(
            f"onrecord {args.command}: error: {where}{exc.strerror or exc}",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return code
