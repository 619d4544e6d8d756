"""``onrecord worldmodel run`` and ``onrecord worldmodel analyze --replay``."""

from __future__ import annotations

import argparse
import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from onrecord._numbers import significant
from onrecord._saved_episode import refuse_episode_given_as
from onrecord._tables import SplitTable
from onrecord.cli._progress import StepProgress, add_no_progress
from onrecord.cli._render import cell, emit, literal, make_console, plain
from onrecord.cli._worldmodel_failures import failure_lines

__all__ = ["loop_table", "register"]


def register(subparsers: Any) -> None:
    """Add the ``worldmodel`` command with ``run`` and ``analyze``."""
    parser = subparsers.add_parser(
        "worldmodel",
        help="world-model experiment: run it, or replay a saved run offline",
        description="Run the CartPole world-model experiment (forecasts, controls, closed "
        "loop) or verify and recompute a saved run without any model or "
        "simulator call.",
    )
    commands = parser.add_subparsers(dest="worldmodel_command", metavar="ACTION", required=True)
    run = commands.add_parser(
        "run",
        help="run the protocol into a new directory",
        description="Write the protocol, then data, models, forecasts, reports, plots and "
        "a sha256 manifest (last) into a new or empty directory. Exit 0 when the run "
        "completes, 3 on bad input, 130 on Ctrl-C.",
    )
    run.add_argument(
        "--output-dir",
        required=True,
        type=Path,
        metavar="DIR",
        help="new or empty directory for protocol, evidence, reports, plots",
    )
    run.add_argument("--smoke", action="store_true", help="small sizes (seconds, for CI)")
    run.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="MODULE:FACTORY",
        help="your own model beside the built-in ones (repeatable): FACTORY(simulator) "
        "returns a WorldModel; the module must be importable (PYTHONPATH)",
    )
    add_no_progress(run)
    run.set_defaults(func=_run)
    analyze = commands.add_parser(
        "analyze",
        help="verify hashes and recompute every table",
        description="Check every file of a `worldmodel run` directory against its manifest "
        "(and the manifest against its digest) and recompute every table and report "
        "without calling a model or a simulator. Exit 0 when everything matches, 3 when "
        "anything does not. A run written before manifests carried a digest still "
        "replays, with a note on stderr.",
    )
    analyze.add_argument(
        "--replay", required=True, type=Path, metavar="DIR", help="a `worldmodel run` directory"
    )
    add_no_progress(analyze)
    analyze.set_defaults(func=_analyze)


def _run(args: argparse.Namespace) -> int:
    from onrecord.dynamics.experiment import run_experiment
    from onrecord.dynamics.experiment._run import RUN_STEPS

    progress = StepProgress(
        Console(stderr=True),
        "world-model steps",
        RUN_STEPS + len(args.model),  # one closed-loop step per --model
        enabled=not args.no_progress,
    )
    try:
        # On a terminal a bar; in a CI log or a file, plain lines (before: nothing at all
        # until the tables, so a long run looked hung).
        with progress:
            tables = run_experiment(
                args.output_dir, smoke=args.smoke, step=progress.step, user_models=args.model
            )
    except KeyboardInterrupt:
        # Plain print, named like every other command's message (rich wrapped it at 80
        # columns in a CI log, without saying which command was interrupted).
        if not (args.output_dir / "protocol.json").exists():  # e.g. while checking --model
            print(
                f"onrecord worldmodel: interrupted before anything was written to "
                f"{args.output_dir}",
                file=sys.stderr,
            )
            return 130
        print(
            f"onrecord worldmodel: interrupted: {args.output_dir} is incomplete (no "
            "manifest.json) and cannot be replayed; delete it and run again into a new or "
            "empty directory",
            file=sys.stderr,
        )
        return 130
    _print(tables, args.output_dir)
    # Quoted: a directory with a space in its name made the hint fail when pasted.
    emit(
        f"run written to {args.output_dir}/ (replay: onrecord worldmodel analyze "
        f"--replay {shlex.quote(str(args.output_dir))})"
    )
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from onrecord.dynamics.experiment import replay
    from onrecord.dynamics.experiment._analyze import REPLAY_STEPS

    refuse_episode_given_as(args.replay, "worldmodel")  # before: its manifest's schema
    # Seconds on a full run (every forecast is checked against its episode, every table
    # recomputed), in which a CI log showed nothing: the steps as `worldmodel run` does.
    progress = StepProgress(
        Console(stderr=True), "world-model replay", REPLAY_STEPS, enabled=not args.no_progress
    )
    with progress:
        tables = replay(args.replay, step=progress.step)
    _print(tables, args.replay)
    emit(
        f"verified {tables['verified_files']} files; every table and report recomputed "
        "from saved evidence matches"
    )
    if not tables["manifest_sealed"]:
        print(
            f"onrecord worldmodel: note: {args.replay}/manifest.json has no digest (written "
            "by an earlier onrecord version): the tables and reports were recomputed from "
            "the evidence, but the files only the manifest pins (models/, plots/) may have "
            "been replaced along with their entries; `onrecord verify` refuses such a "
            "directory. Re-run the experiment for a sealed manifest",
            file=sys.stderr,
        )
    return 0


def _fmt(value: Any, marks: tuple[float, ...] = (0.0, 1.0, -1.0)) -> str:
    """A number to 3 significant digits, never rounded onto a mark it is not (a skill of
    0.99996 is not the oracle's 1; a 90% interval covering 0.8996 is not exactly 0.9)."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return significant(value, 3, marks)
    return str(value)


def _errors(table: dict[str, Any]) -> str:
    """Forecasts a model failed are outside the denominator: say how many there were, or
    a model that failed every time reads as "0/0", as if it had not been asked. The
    references whose own episode failed (simulator errors: the model was not called)
    are counted apart, or one broken reference read as a failure of every model."""
    total, parts = table["forecasts"], []
    if table["model_errors"]:
        parts.append(f"{table['model_errors']} of {total} failed")
    if table["simulator_errors"]:
        parts.append(f"{table['simulator_errors']} of {total} references failed")
    return f" ({'; '.join(parts)})" if parts else ""


def _gap(row: dict[str, Any]) -> str:
    """The prediction gap, and (analysis v3) how many seeds it leaves out: a mean over
    3 of 10 seeds read as the model's gap, and a gap undefined on every seed read "—"
    as if it had not been measured."""
    text = _fmt(row["prediction_gap"])
    undefined = row.get("prediction_gap_undefined")
    if undefined:
        text += (
            f" ({undefined} of {row['seeds']} seeds undefined: every horizon cut off by "
            "the step cap)"
        )
    return text


def _seed_steps(row: dict[str, Any]) -> tuple[float, ...]:
    """The longest seed's steps (None for a failed run), the cap when one reached it."""
    steps = [float(count) for count in row.get("steps") or () if count is not None]
    return (max(steps),) if steps else ()


def loop_table(rows: list[dict[str, Any]]) -> SplitTable:
    """The closed-loop table of ``tables["closed_loop"]``."""
    loop = SplitTable(
        "model",
        "mean steps",
        "reached cap",
        "return 95% CI",
        "normalized",
        "prediction gap",
        keys=1,
        title="closed loop (same planner, paired seeds)",
    )
    for row in rows:
        interval = row["return_ci"]
        failed = row.get("failed_runs", 0)
        loop.add_row(
            # A model's id is its author's (--model, or a replayed directory's): "[/]"
            # in it crashed the table (MarkupError) and "[bold]x" printed as "x".
            cell(row["model_id"]),
            # Not "500" for 499.67: the mean would read as every seed reaching the cap.
            _fmt(row["mean_steps"], _seed_steps(row)),
            f"{row['reached_cap']}/{row['seeds']}",
            f"{failed} failed run{'s' if failed > 1 else ''}"
            if failed
            else ("—" if interval is None else f"{_fmt(interval[0])}–{_fmt(interval[1])}"),
            _fmt(row["normalized_score"]),
            _gap(row),
        )
    return loop


def forecast_table(heldout: dict[str, Any]) -> SplitTable:
    """The held-out forecast table of ``tables["heldout_metrics"]``: its nine columns
    need about 110 characters, so a narrower console gets it in parts (see SplitTable)."""
    metrics = SplitTable(
        "model",
        "coordinate",
        "h",
        "n/denominator",
        "MAE",
        "skill",
        "cov90",
        "width90",
        "CRPS",
        keys=3,
        title="held-out forecasts (CartPole)",
    )
    for model, table in heldout.items():
        for row in table["rows"]:
            if row["coordinate"] in ("cart_velocity", "pole_angle") and row["horizon"] in (1, 8):
                metrics.add_row(
                    cell(model),
                    row["coordinate"],
                    str(row["horizon"]),
                    f"{row['measured']}/{row['denominator']}" + _errors(table),
                    _fmt(row["mae"]),
                    _fmt(row["skill"]),
                    _fmt(row["coverage_90"], (0.0, 0.9, 1.0)),
                    _fmt(row["width_90"]),
                    _fmt(row["crps"]),
                )
    return metrics


def _units(heldout: dict[str, Any]) -> str:
    """The units of the forecast table's numbers: its MAE column mixes m/s and rad, and
    without them "0.195" beside "0.000512" read as the same kind of error."""
    units: dict[str, str] = {}
    for table in heldout.values():
        for row in table["rows"]:
            if row["coordinate"] in ("cart_velocity", "pole_angle"):
                units.setdefault(row["coordinate"], row["unit"])
    named = ", ".join(f"{plain(name)} in {plain(unit)}" for name, unit in units.items())
    return (
        f"MAE, width90 and CRPS: {named}; h: steps ahead\n"
        "skill: 1 - RMSE / persistence's RMSE; cov90: share of actual values inside the 90% "
        "interval"
    )


def _pairs(row: dict[str, Any]) -> str:
    """The pairs measured, and (analysis v4) how many a failed forecast left out: an
    effect error over 3 pairs read as the model's error on all of them."""
    skipped = row.get("skipped_pairs")
    if not skipped:
        return str(row["pairs"])
    return f"{row['pairs']} ({skipped} skipped: a forecast failed)"


def intervention_table(interventions: dict[str, Any]) -> SplitTable:
    """The matched-intervention table of ``tables["interventions"]`` (cart_velocity, h1)."""
    effects = SplitTable(
        "model",
        "pairs",
        "real effect",
        "predicted effect",
        "effect error",
        keys=1,
        title="matched interventions: cart_velocity (m/s), h1",
    )
    for model, rows in interventions.items():
        row = next(r for r in rows if r["coordinate"] == "cart_velocity" and r["horizon"] == 1)
        effects.add_row(
            cell(model),
            _pairs(row),
            _fmt(row["real_effect"]),
            _fmt(row["predicted_effect"]),
            _fmt(row["effect_error"]),
        )
    return effects


def _print(tables: dict[str, Any], root: Path) -> None:
    console = make_console()
    console.print(loop_table(tables["closed_loop"]))
    console.print(forecast_table(tables["heldout_metrics"]))
    # Wrapped to the console: in an 80-column CI log no line may run past the tables.
    console.print(Text(_units(tables["heldout_metrics"])))
    console.print(intervention_table(tables["interventions"]))
    policies = next(iter(tables["decisions"].values()))
    decisions = SplitTable("model", *map(cell, policies), keys=1, title="acceptance policies")
    for model, per in tables["decisions"].items():
        decisions.add_row(cell(model), *(literal(d["decision"]) for d in per.values()))
    console.print(decisions)
    failures = failure_lines(root, tables)
    if failures:  # the tables count failures; these say why
        emit("why models failed (left out of the tables above, never scored):")
        for reason, where in failures:
            # Wrapped to the console under its start: a model's message can be long.
            emit(textwrap.fill(reason, console.width, initial_indent="  ", subsequent_indent="  "))
            emit(f"    {where}")  # whole on its line, to be copied
