"""``onrecord check NAME [NAME ...] --episode DIR``: run named checks on a saved tool-world
episode: registered envkit checks and, for an episode of a domain, the domain's own."""

from __future__ import annotations

import argparse
import importlib
import json
import math
from pathlib import Path
from typing import Any

from onrecord._close_names import closest
from onrecord._exceptions import describe
from onrecord._numbers import fixed
from onrecord._saved_episode import saved_episode_folder
from onrecord.cli._episode_checks import checks_help, episode_checks
from onrecord.cli._render import emit, plain
from onrecord.envkit import ToolEpisode, run_checks, weighted_score
from onrecord.errors import InputError

__all__ = ["register"]


_CHECKS = "(the checks there are)"
"""The epilog's stand-in until help is printed: listing the registered checks imports
the environment kit's registry, which a `check` that prints no help never needs (a
domain's checks are listed by name, ``DomainChecks.names``, without importing it)."""


class _ChecksHelp(argparse.HelpFormatter):
    """Writes the list of checks in place of ``_CHECKS`` when the help is formatted."""

    def add_text(self, text: str | None) -> None:
        super().add_text(checks_help() if text == _CHECKS else text)


def register(subparsers: Any) -> None:
    """Add the ``check`` subcommand."""
    parser = subparsers.add_parser(
        "check",
        help="run named checks on a saved tool-world episode",
        description="Run named checks on a saved episode directory and print "
        "each verdict (and a weighted score when several checks run). Exit 0 "
        "when all pass, 1 when any fails, 2 when any is not measured or errs, "
        "3 on bad input.",
        epilog=_CHECKS,
        formatter_class=_ChecksHelp,
    )
    parser.add_argument(
        "names", nargs="+", metavar="NAME", help="a check's name: registered, or the domain's"
    )
    parser.add_argument(
        "--episode",
        required=True,
        metavar="DIR",
        help="episode directory written by save_episode (or a file in it)",
    )
    parser.add_argument(
        "--import",
        dest="modules",
        action="append",
        default=[],
        metavar="MODULE",
        help="import a module that registers checks (repeatable)",
    )
    parser.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="NAME=W",
        help="weight of a check in the score (default 1; repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the episode, run the checks, print verdicts; exit code by the worst result."""
    for module in args.modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise InputError(
                f"--import {module}: {exc}; pass an importable module name (is it on PYTHONPATH?)"
            ) from exc
        except (Exception, SystemExit) as exc:  # a broken module: bad input, not a crash
            # SystemExit too: a module calling sys.exit(0) on import ended the command
            # with exit 0 ("all checks pass") before any check ran; sys.exit("msg") with 1.
            raise InputError(f"--import {module}: importing it raised {describe(exc)}") from exc
    repeated = sorted({name for name in args.names if args.names.count(name) > 1})
    if repeated:  # run twice, a check counted twice in the weighted score
        raise InputError(
            f"check {', '.join(map(repr, repeated))} is named more than once; name each once"
        )
    weights = _weights(args.weight)
    _refuse_unrun_weights(weights, args.names)
    # A file in the episode (its manifest.json) names it as `verify` and `show` take it;
    # before, the load said the file "has no manifest.json".
    episode = ToolEpisode.load(saved_episode_folder(Path(args.episode)) or args.episode)
    available = episode_checks(episode.manifest, args.modules)
    # Imported here: the runner (and gymnasium) it brings cost `check --help` ~65 ms.
    from onrecord.runner._regrade import contained

    # A check calling sys.exit() is an evaluator error, never the command's exit code.
    results = run_checks(episode, [contained(available.pick(name)) for name in args.names])
    score = weighted_score(results, weights)
    if args.json:
        emit(
            json.dumps(
                {
                    "episode": episode.digest,
                    "score": score.value,
                    "results": [result.to_dict() for result in results],
                },
                sort_keys=True,
                indent=2,
            )
        )
    else:
        for result in results:
            # A reason can quote the agent's output: terminal controls print as escapes.
            version = _version_label(result.version)
            emit(plain(f"{result.status:<15} {result.name} {version}: {result.reason}"))
        if len(results) > 1:
            value = "not measured" if score.value is None else fixed(score.value, 3)
            emit(
                f"score {value} (measured weight {score.measured_weight:g} of "
                f"{score.total_weight:g})"
            )
    statuses = {result.status for result in results}
    return 1 if "fail" in statuses else 0 if statuses == {"pass"} else 2


def _version_label(version: str) -> str:
    """``v1`` for a version number; a named version as it is (a remittance check's
    ``remittance-v4`` read ``vremittance-v4``)."""
    return f"v{version}" if version[:1].isdigit() else version


def _weights(items: list[str]) -> dict[str, float]:
    weights: dict[str, float] = {}
    for item in items:
        name, weight = _weight(item)
        if name in weights:  # before, the last one silently won
            raise InputError(f"--weight {name}=… is given more than once; give it once")
        weights[name] = weight
    if not math.isfinite(sum(weights.values())):
        # each finite, the sum not: the score would be nan, and --json invalid JSON
        raise InputError("--weight values are too large: their sum must be finite")
    return weights


def _refuse_unrun_weights(weights: dict[str, float], names: list[str]) -> None:
    """Refuse a weight for a check not named to run: it was silently ignored, so a
    misspelt ``--weight envkit/diff_satisfies_rule=5`` left that check at weight 1 and
    the printed score was not the one asked for."""
    for name in sorted(set(weights) - set(names)):
        match = closest(name, names)
        hint = f"did you mean {match!r}? " if match else ""
        raise InputError(
            f"--weight {name}=…: {name!r} is not among the checks to run ({', '.join(names)}); "
            f"{hint}weight only a check named on the command line"
        )


def _weight(item: str) -> tuple[str, float]:
    name, _, value = item.partition("=")
    try:
        weight = float(value)
    except ValueError:
        weight = math.nan
    if not math.isfinite(weight):  # nan or inf would make the score nan
        raise InputError(
            f"--weight {item!r} must look like NAME=NUMBER with a finite number, "
            "e.g. envkit/diff_satisfies_rules=2"
        )
    return name, weight
