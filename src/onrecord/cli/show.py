"""``onrecord show FILE``: a readable table of a saved record."""

from __future__ import annotations

import argparse
from collections.abc import Container
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from onrecord._saved_episode import refuse_episode_given_as, saved_episode_folder
from onrecord.cli._ending import print_ending
from onrecord.cli._episode_view import render_episode
from onrecord.cli._measure_table import ALL_MEASURES, render_report_measures
from onrecord.cli._partial import folder_why
from onrecord.cli._progress import CountProgress, add_no_progress
from onrecord.cli._record_views import render_bundle
from onrecord.cli._records import Bundle, load_any
from onrecord.cli._render import make_console, render_forecasts, render_policy
from onrecord.cli._row_history import render_row_history
from onrecord.cli._run_episode import (
    ALL_NOT_PASSED,
    path_word,
    render_run_episode,
    render_tool_calls,
)
from onrecord.cli._show_run import regrade_of, render_regrade_directory, render_run_directory
from onrecord.cli._step_spec import call_numbers, parse_steps, refuse_absent_steps
from onrecord.cli._verdict_evidence import ALL_EVIDENCE
from onrecord.episode import EpisodeEvidence
from onrecord.errors import InputError
from onrecord.policy import AcceptancePolicy
from onrecord.report import EvaluationReport

if TYPE_CHECKING:
    from onrecord.envkit import ToolEpisode

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``show`` subcommand."""
    parser = subparsers.add_parser(
        "show",
        help="print a saved record as tables",
        description="Verify a saved record (any kind `onrecord verify` reads) and print "
        "it as tables.",
    )
    parser.add_argument("file", metavar="FILE")
    parser.add_argument(
        "--steps",
        metavar="SPEC",
        help="an episode's steps to print: 'all', one step '42' or a range '100-160' "
        "(default: the first 40 and every attempt that did not succeed)",
    )
    parser.add_argument(
        "--episode",
        metavar="CASE#REPEAT",
        help="with a run or regrade directory: one episode's verdicts and steps or tool calls",
    )
    parser.add_argument(
        ALL_NOT_PASSED,
        action="store_true",
        help="with a run or regrade directory: list every episode not passed (by "
        "default the first 10)",
    )
    parser.add_argument(
        ALL_EVIDENCE,
        action="store_true",
        help="with --episode: print the evidence of every check (by default only of "
        "those that did not pass)",
    )
    parser.add_argument(
        ALL_MEASURES,
        action="store_true",
        help="with a report, run or regrade directory: list every measure (by default "
        "the first 20)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="print actions, errors, states, arguments, results and evidence whole (by "
        "default a long one is cut and followed by its length)",
    )
    add_no_progress(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Render whichever record the file holds."""
    steps = parse_steps(args.steps)
    # A run directory is verified whole first: seconds for thousands of episodes.
    progress = CountProgress(
        Console(stderr=True), "episodes verified", enabled=not args.no_progress
    )
    record = load_any(args.file, progress)
    console = make_console()
    path = Path(args.file)
    command = f"onrecord show {path_word(args.file)}"
    run_dir = path if (path / "run.json").is_file() else None
    regrade_run = regrade_of(path) if (path / "changes.json").is_file() else None
    if args.all_not_passed and not (isinstance(record, Bundle) and (run_dir or regrade_run)):
        refuse_episode_given_as(path, "show --all-not-passed")
        raise InputError(f"{ALL_NOT_PASSED} needs a run or regrade directory, not {args.file}")
    if args.all_measures and (args.episode is not None or not _has_report(record)):
        raise InputError(
            f"{ALL_MEASURES} needs a report, run or regrade directory (without --episode), "
            f"not {args.file}"
        )
    if args.all_evidence and args.episode is None:
        raise InputError(f"{ALL_EVIDENCE} needs --episode CASE#REPEAT")
    if args.episode is not None:
        if not isinstance(record, Bundle) or (run_dir is None and regrade_run is None):
            _refuse_one_episode(path, record)
            raise InputError(
                f"--episode needs a run directory (or RUN/regrades/NAME), not {args.file}"
            )
        # A regrade's episode: the run's saved evidence, with the regrade's verdicts.
        regrade = None if regrade_run is None else (path, _report(record))
        render_run_episode(
            console,
            run_dir or regrade_run or path,
            args.episode,
            steps,
            full=args.full,
            regrade=regrade,
            all_evidence=args.all_evidence,
        )
    elif isinstance(record, Bundle):
        # What stopped a partial run's missing episodes (timed out, ...) for its reason.
        directory = (run_dir or regrade_run) is not None and _has_report(record)
        why = folder_why(path, _report(record)) if directory else ""
        episode = _tool_episode(Path(args.file))
        if episode is not None:  # before anything is printed
            refuse_absent_steps(steps, call_numbers(episode.actions))
        render_bundle(console, record, all_measures=args.all_measures, command=command, why=why)
        if run_dir is not None:  # its failures, whether complete, and its regrades
            render_run_directory(console, path, record, every=args.all_not_passed)
        elif regrade_run is not None:
            render_regrade_directory(console, path, record, every=args.all_not_passed)
        if episode is not None:  # its calls and row changes, as `--episode` shows a run's
            print_ending(console, episode.manifest)
            shown = render_tool_calls(
                console, episode.actions, steps, full=args.full, command=command
            )
            layouts = {name: {"key": list(t.key)} for name, t in episode.tables.items()}
            audit = {"events": episode.audit, "tables": layouts}  # the keys: a row renumbered
            written = {"audit": audit, "diff": episode.diff}
            render_row_history(
                console, written, shown, full=args.full, command=command, chosen=steps is not None
            )
    else:
        _render(console, record, steps, full=args.full, command=command, every=args.all_measures)
    return 0


def _refuse_one_episode(path: Path, record: Any) -> None:
    """``--episode`` of a record that is itself one episode: say so, and how to show it
    (before: only "--episode needs a run directory")."""
    refuse_episode_given_as(path, "show --episode")
    if isinstance(record, EpisodeEvidence):
        raise InputError(
            f"{path} is one episode's evidence (EpisodeEvidence), not a run directory: "
            "--episode picks one of a run's episodes. Show it without --episode: "
            f"`onrecord show {path_word(str(path))}` (--steps, --full as for a run's episode)"
        )


def _has_report(record: Any) -> bool:
    if isinstance(record, Bundle):
        return any(isinstance(item, EvaluationReport) for item in record.items)
    return isinstance(record, EvaluationReport)


def _report(bundle: Bundle) -> EvaluationReport:
    (report,) = (item for item in bundle.items if isinstance(item, EvaluationReport))
    return report


def _tool_episode(path: Path) -> ToolEpisode | None:
    """The saved tool-world episode (``save_episode``) that ``path`` is or holds a file
    of (its manifest.json, its actions.jsonl: shown as the episode is), or None."""
    folder = saved_episode_folder(path)
    if folder is None:  # the kit (~15 ms to import) only for a saved tool-world episode
        return None
    from onrecord.envkit import ToolEpisode

    return ToolEpisode.load(folder)


def _render(
    console: Console,
    record: Any,
    steps: Container[int] | None,
    *,
    full: bool,
    command: str,
    every: bool,
) -> None:
    if isinstance(record, EpisodeEvidence):
        render_episode(console, record, steps, full=full, command=command)
    elif isinstance(record, EvaluationReport):
        render_report_measures(console, record, every=every, command=command)
    elif isinstance(record, AcceptancePolicy):
        render_policy(console, record)
    else:
        render_forecasts(console, [record])
