"""``onrecord run``: many episodes of an agent on an environment, resumable, with a
progress bar, a summary table and the acceptance decision as the exit code."""

from __future__ import annotations

import argparse
import errno
import shlex
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from onrecord.cli._app import EXIT_ERROR
from onrecord.cli._lines import print_sentence
from onrecord.cli._measure_table import render_report_measures
from onrecord.cli._partial import missing_why, partial_decision
from onrecord.cli._progress import ConsoleProgress, add_no_progress
from onrecord.cli._render import literal, make_console, render_decision
from onrecord.cli._run_episode import path_word
from onrecord.cli._run_target import (
    refuse_used,
    resume_target,
    resumed_executor,
    task_places,
    tasks_file_cases,
)
from onrecord.errors import InputError
from onrecord.runner import (
    RunConfig,
    RunProtocol,
    RunResult,
    load_config,
    make_executor,
    parse_seeds,
    plan_run,
    resume_run,
    start_run,
)
from onrecord.runner._config import split_names
from onrecord.runner._interrupts import terminations_interrupt
from onrecord.runner._timeout import parse_timeout

__all__ = ["config_from_args", "register"]


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand."""
    parser = subparsers.add_parser(
        "run",
        help="run an agent over tasks × seeds × repeats into a run directory",
        description="Run a named environment (remittance, ledger, cartpole, frozenlake, any "
        "Gymnasium id, or module:factory) with an agent (a reference agent name "
        "or module:callable). Exit code: 0 accept, 1 reject, 2 indeterminate, "
        "3 bad input. A --config TOML file can hold every flag.",
    )
    parser.add_argument(
        "environment",
        nargs="?",
        help="environment name, Gymnasium id or module:factory (with --resume: the run directory)",
    )
    parser.add_argument("-a", "--agent", help="reference agent name or module:callable")
    parser.add_argument("-c", "--config", type=Path, help="TOML file with any of these flags")
    parser.add_argument("--tasks", help="comma-separated task ids (default: all)")
    parser.add_argument("--tasks-file", help="TOML ([[tasks]]) or JSONL file of tasks")
    parser.add_argument("-r", "--repeats", type=int, help="repeats per task and seed")
    parser.add_argument("-s", "--seeds", help="seeds: 0,1,2 or 0-9 (default 0)")
    parser.add_argument("--max-steps", type=int, help="most actions per episode")
    parser.add_argument(
        "--episode-timeout",
        metavar="SECONDS",
        help="stop an episode still running after SECONDS; it is not recorded and a resume "
        "retries it (default: no limit; on --resume: the run's)",
    )
    parser.add_argument(
        "--checks",
        action="append",
        help="'default' or module:CHECKS (repeatable, or comma-separated)",
    )
    parser.add_argument("--policy", help="acceptance policy file (TOML or JSON)")
    parser.add_argument(
        "--env-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment setting (value parsed as TOML, else text)",
    )
    parser.add_argument("-o", "--out", help="run directory to create (or resume)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run; finished episodes never re-run",
    )
    parser.add_argument(
        "--executor",
        choices=("inprocess", "process", "ray"),
        help="where episodes run: inprocess (default), process (a local pool; contains "
        "agents that crash or call os._exit) or ray (a cluster); on --resume: the run's",
    )
    parser.add_argument("-w", "--workers", type=int, help="worker processes (or Ray tasks)")
    parser.add_argument(
        "--address",
        help="Ray cluster address; implies --executor ray (default: RAY_ADDRESS, the last "
        "`ray start` on this machine, else a new local cluster)",
    )
    add_no_progress(parser)
    parser.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> RunConfig:
    """The config file (if any) with the flags given on the command line on top."""
    base = load_config(args.config) if args.config else RunConfig()
    # ``is not None``: an empty --tasks, --seeds or --checks is a mistake to report, not
    # a request for the default.
    checks = None if args.checks is None else split_names(",".join(args.checks), "--checks")
    flags = RunConfig(
        environment=args.environment,
        agent=args.agent,
        tasks=None if args.tasks is None else split_names(args.tasks, "--tasks"),
        tasks_file=args.tasks_file,
        repeats=args.repeats,
        seeds=None if args.seeds is None else parse_seeds(args.seeds, "--seeds"),
        max_steps=args.max_steps,
        checks=checks,
        policy=args.policy,
        environment_config=_env_config(args.env_config) or None,
        executor=args.executor,
        workers=args.workers,
        address=args.address,
        out=args.out,
        episode_timeout=parse_timeout(args.episode_timeout, "--episode-timeout"),
    )
    return base.merged(flags)


def _env_config(pairs: list[str]) -> dict[str, Any]:
    import tomllib

    config: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"--env-config {pair!r} must look like KEY=VALUE")
        if key in config:
            raise InputError(f"--env-config {key} is given twice; give each setting once")
        try:
            config[key] = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            config[key] = text
    return config


def _protocol(config: RunConfig) -> RunProtocol:
    if not config.environment:
        raise InputError(
            "name the environment and the agent, e.g. `onrecord run cartpole "
            "--agent balances`, or put them in --config FILE"
        )
    # Without --agent, plan_run names the environment's reference agents to choose from.
    cases = tasks_file_cases(config)
    return plan_run(
        config.environment,
        config.agent or "",
        tasks=cases if cases is not None else config.tasks,
        checks=config.checks or ("default",),
        # ``is None``, not ``or``: --repeats 0 or seeds = [] are mistakes the protocol
        # reports, not requests for the default.
        repeats=1 if config.repeats is None else config.repeats,
        seeds=(0,) if config.seeds is None else config.seeds,
        max_steps=config.max_steps,
        options=config.options,
        policy=config.acceptance_policy(),
        environment_config=config.environment_config,
        task_places=task_places(config),
    )


def run(args: argparse.Namespace) -> int:
    """Start or resume the run, then print the summary and return the decision's code."""
    # SIGTERM (a cancelled CI job) is Ctrl-C for the whole command, not only while
    # episodes run: one that came while the run was planned, or while its report was
    # written after the last episode, ended the process with 143 and no word.
    with terminations_interrupt():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    # soft_wrap: off a terminal rich wraps at 80 columns, and a message's command (the
    # resume line of an interrupted run) would be cut where a CI log shows it to copy.
    console, errors = make_console(), Console(stderr=True, soft_wrap=True, emoji=False)
    expect: RunProtocol | None
    if args.resume:
        out, expect = resume_target(config)
        config = resumed_executor(config, out)
    else:
        if not config.out:
            raise InputError("--out DIR is required: the run directory to create")
        out, expect = config.out, _protocol(config)
    if not args.resume:
        refuse_used(Path(out))
    try:
        executor = make_executor(config.executor, workers=config.workers, address=config.address)
    except KeyboardInterrupt:  # while a Ray cluster started: nothing was written yet
        errors.print("interrupted before the run started; nothing was written")
        return 130
    progress = ConsoleProgress(errors, enabled=not args.no_progress)
    try:
        with executor:
            limit = config.episode_timeout  # on resume, None keeps the run's own
            if args.resume or expect is None:
                result = resume_run(
                    out, expect=expect, executor=executor, progress=progress, episode_timeout=limit
                )
            else:
                result = start_run(
                    out, expect, executor=executor, progress=progress, episode_timeout=limit
                )
    except KeyboardInterrupt:
        errors.print(
            f"interrupted; finished episodes are saved: `onrecord run --resume "
            f"--out {_pasteable(out)}` continues"
        )
        return 130
    except OSError as exc:
        if not (Path(out) / "run.json").is_file():
            raise  # no run was made: the error alone says it all
        where = f"{exc.filename}: " if exc.filename else ""
        errors.print(
            f"onrecord run: error: {literal(where)}{literal(exc.strerror or str(exc))}; "
            f"the episodes saved before are kept: {_remedy(exc.errno)}, "
            f"then `onrecord run --resume --out {_pasteable(out)}` continues"
        )
        return EXIT_ERROR
    _summary(console, result, progress, executor.name, executor.workers)
    return result.exit_code


def _remedy(code: int | None) -> str:
    """What to do about the OS error ``code`` a run stopped on, before resuming it."""
    if code in (errno.ENOSPC, errno.EDQUOT):
        return "fix the cause: free space on its disk (or raise your disk quota)"
    if code == errno.EFBIG:
        return "fix the cause: raise the file size limit (`ulimit -f`)"
    if code == errno.EROFS:
        return (
            "fix the cause: its file system is read-only; remount it read-write (or copy "
            "the run directory somewhere writable and resume it there)"
        )
    if code in (errno.EACCES, errno.EPERM):
        return "fix the cause: let your user write to the run directory and its files"
    return "fix the cause"


def _pasteable(path: str | Path) -> str:
    """``path`` quoted for the shell, as rich markup text: the resume hints are pasted,
    and a run directory with a space in it made two arguments of one."""
    return literal(shlex.quote(str(path)))


def _summary(
    console: Console, result: RunResult, progress: ConsoleProgress, executor: str, workers: int
) -> None:
    for notice in result.notices:
        print_sentence(console, f"[yellow]repaired:[/] {literal(notice)}")
    recorded = len(result.report.trials)
    limit = "" if result.episode_timeout is None else f", {result.episode_timeout:g} s per episode"
    console.print(
        f"[bold]run[/] {literal(result.store.run_id)} → {literal(result.store.path)}  "
        f"{recorded}/{result.expected} episodes recorded "
        f"({result.recorded_now} now, {progress.rate:.1f} ep/s, {executor} × "
        f"{workers}{limit})",
        soft_wrap=True,
    )
    # With its measures, as `show RUN` has them: "rows_put_back above 0 in 3 of 33" is
    # what the run's pass rates do not say. Capped, and `show` lists them all.
    command = f"onrecord show {path_word(result.store.path)}"
    render_report_measures(console, result.report, every=False, command=command)
    # The policy's verdict on the recorded episodes; a partial run is never accepted.
    why = missing_why(result.store, result.report)  # "2 timed out": the run's real cause
    render_decision(console, partial_decision(result.decision, result.expected - recorded, why=why))
    for error in result.errors[:10]:
        # An environment's multi-line error message hangs under its label: printed as
        # is, its lines began at column 0 and could read as the run's own verdict.
        print_sentence(console, f"[magenta]not recorded:[/] {literal(error)}")
    if len(result.errors) > 10:  # never let 10 shown errors read as all of them
        console.print(
            f"[magenta]not recorded:[/] … {len(result.errors) - 10} more episodes; every "
            f"reason is in {literal(result.store.file('errors.jsonl'))}",
            soft_wrap=True,  # the path is copied from here: whole, on one line
        )
    if not result.complete:
        console.print(
            f"[yellow]incomplete:[/] {result.expected - recorded} episodes are "
            f"missing; `onrecord run --resume {literal(shlex.quote(str(result.store.path)))}` "
            "retries them",
            soft_wrap=True,  # the command is copied from here: one line, quoted
        )
    sys.stdout.flush()
