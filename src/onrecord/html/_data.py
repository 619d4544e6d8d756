"""The data behind an HTML report: one portable dict, embedded in the page as JSON and
rendered from it, so the page and ``--json`` can never disagree."""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onrecord._canonical import content_digest, load_record_bytes
from onrecord._listed_folders import listed_folder
from onrecord._natural import natural_key
from onrecord._policy_rules import StatusTable, requirement_interval
from onrecord._saved_decision import saved_headline
from onrecord._saved_episode import refuse_saved_episode
from onrecord.cli._partial import missing_why, partial_body
from onrecord.dynamics._unchecked import unchecked_line
from onrecord.errors import DigestMismatch, InputError
from onrecord.html._report import _count
from onrecord.html._selection import episodes_data
from onrecord.html._tasks import task_list, task_rows
from onrecord.report import EvaluationReport
from onrecord.runner import RunStore
from onrecord.runner._decided import check_decided
from onrecord.runner._graded import check_graded
from onrecord.runner._repair import DECISION_SCHEMA

__all__ = ["report_data"]

_HORIZON = re.compile(r"^dynamics/(?P<coordinate>.+)/h(?P<horizon>\d+)$")


def report_data(
    source: str | Path,
    *,
    grading: str | None = None,
    episodes: str = "auto",
    plots: str | Path | None = None,
) -> dict[str, Any]:
    """Everything the report page shows, from a run directory or a report file."""
    # Imported here, not at the top: the version comes from importlib.metadata (~25 ms),
    # which commands that only read records need not load.
    from onrecord import __version__

    path = Path(source)
    # Before: "not a run directory", and no word of what reads it.
    refuse_saved_episode(path, "report")
    run = path.parent.parent
    if grading is None and path.name == "report.json" and path.is_file():
        # A run's (or regrade's) own report.json given as a file: the page of a bare
        # report file had no episodes and overwrote the run's report.html.
        if (path.parent / "run.json").is_file():
            return report_data(path.parent, episodes=episodes, plots=plots)
        if run.name == "regrades" and (run.parent / "run.json").is_file():
            return report_data(run.parent, grading=path.parent.name, episodes=episodes, plots=plots)
    if (
        grading is None
        and not path.is_file()
        and path.parent.name == "regrades"
        and (run / "run.json").is_file()
    ):
        # RUN/regrades/NAME, as `onrecord compare` takes it: before, "not a run
        # directory … start a run with `onrecord run`".
        return report_data(run, grading=path.name, episodes=episodes, plots=plots)
    if path.is_dir() and not (path / "run.json").is_file():
        _refuse_folder_of_reports(path)
    store = RunStore.open(path) if path.is_dir() else None
    folder = path if store is None or grading is None else path / "regrades" / grading
    report_file = folder / "report.json" if path.is_dir() else path
    if grading is not None and (
        store is None or Path(grading).name != grading or not report_file.is_file()
    ):
        # Before: "a run writes it when it finishes", which sent people to --resume.
        if store is None:
            raise InputError(f"--grading {grading!r} needs a run directory, not {path}")
        names = sorted(
            (p.parent.name for p in (path / "regrades").glob("*/report.json")), key=natural_key
        )
        raise InputError(
            f"--grading {grading!r}: {path} has no regrade of that name "
            f"(regrades: {', '.join(names) or 'none; `onrecord regrade` makes one'})"
        )
    if not report_file.is_file():
        if store is None:  # a mistyped report file is not an unfinished run
            raise InputError(f"{report_file}: no such report file or run directory")
        # With the run's path, quoted: "`onrecord run --resume`" pasted was refused.
        raise InputError(
            f"{report_file} does not exist; a run writes it when it finishes "
            f"(`onrecord run --resume {shlex.quote(str(path))}` completes an interrupted run)"
        )
    report = EvaluationReport.load(report_file)
    if store is not None:  # the run's own grading, not a report copied from another run
        check_graded(store, report, str(report_file), own=grading is None)
    beside = report_file.parent / "decision.json"
    decision = (
        _decision(beside, report, store) if store is not None else _foreign_decision(beside, report)
    )
    views, index, note, recorded = (
        episodes_data(store, report, episodes) if store is not None else ([], None, "", None)
    )
    # A run stopped after recording more episodes than its last grading holds: the page
    # would otherwise present the older grading as the run's state.
    stale = recorded is not None and recorded > len(report.trials)
    # What stopped the missing episodes ("2 timed out"), as run, show and gate say it;
    # of a stale grading's, errors.jsonl says nothing (some were recorded since).
    why = missing_why(store, report) if store is not None and not stale else ""
    if decision is not None:
        decision = _explained(decision, report, why)
        if stale:  # the headline says it: "6 of 33 recorded" read as the run's state
            decision["run_recorded"] = recorded
    summary = report.summary().to_dict()
    tasks = task_rows(report, store.protocol.jobs(store.run_id) if store is not None else ())
    data: dict[str, Any] = {
        "generator": f"onrecord {__version__}",
        "title": _title(store, path, len(report.trials), len(tasks)),
        "run": _run_meta(store, grading),
        "report_digest": report.digest,
        "decision": decision,
        "summary": summary,
        "versions": report.lock["checks"],
        "findings": _findings(report, decision, summary),
        "tasks": tasks,
        "task_list": task_list(tasks),
        "episodes": views,
        "episode_index": index,
        "detail_note": note,
        "horizons": _horizons(summary),
        "images": _images(plots, report_file, run=path if store is not None else None),
    }
    if store is not None:
        data["run"]["recorded"] = recorded  # an earlier grading without its decision
    if store is not None and stale:
        data["findings"].insert(
            0,
            f"the run holds {recorded} recorded episodes but this grading covers "
            f"{len(report.trials)}: it is out of date; `onrecord run --resume "
            f"{shlex.quote(str(store.path))}` (or `onrecord regrade`) grades them all",
        )
    return data


# Where a directory that is not a run may hold reports, in the order one is suggested.
_REPORT_GLOBS = (
    "*.report.json",
    "reports/*.report.json",
    "report.json",
    "*/report.json",
    "*/*/report.json",
)


def _refuse_folder_of_reports(path: Path) -> None:
    """A directory holding report files but no run (a ``worldmodel run``'s, a ``ledger
    run``'s) names one of them, with ``-o`` when its manifest lists its files. Before, a
    ledger run's was told to start a run, and a world-model run's given a command that
    then refused to write its page inside the directory."""
    report = next((r for glob in _REPORT_GLOBS for r in sorted(path.glob(glob))), None)
    if report is None:
        return
    command, folder, where = f"onrecord report {report}", listed_folder(report), ""
    if folder is not None:
        name = report.name.removesuffix(".report.json").removesuffix("report.json")
        command += f" -o {name or report.parent.name}.html"
        where = f" with -o ({folder}'s manifest.json lists every file it holds)"
    raise InputError(
        f"{path} is not a run directory but holds report files: give one of them{where}, "
        f"e.g. `{command}`"
    )


def _title(store: RunStore | None, path: Path, episodes: int, tasks: int) -> str:
    """What the page reports on: a run's agent and environment; for a report file (no
    run to name them) its name and size, ``ledger: 48 episodes of 12 tasks``. Before, the
    command that made it, ``onrecord report ledger.report.json``, headed the page."""
    if store is None:
        name = path.name.removesuffix(".json").removesuffix(".report") or path.name
        return f"{name}: {_count(episodes, 'episode')} of {_count(tasks, 'task')}"
    protocol = store.protocol
    return f"{protocol.agent} on {protocol.environment.name}"


def _run_meta(store: RunStore | None, grading: str | None) -> dict[str, Any] | None:
    if store is None:
        return None
    protocol = store.protocol
    return {
        "run_id": store.run_id,
        "path": store.path.name,  # a full path would leak the machine's layout
        "created": store.manifest["created"],
        "library": store.library_version,
        "environment": protocol.environment.name,
        "environment_config": dict(protocol.environment.config),
        "agent": protocol.agent,
        "tasks": len(protocol.tasks),
        "repeats": protocol.repeats,
        "seeds": list(protocol.seeds),
        "max_steps": protocol.max_steps,
        "expected": protocol.episodes,
        "grading": grading or "original",
    }


def _decision(
    path: Path, report: EvaluationReport, store: RunStore | None = None
) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    record = load_record_bytes(path.read_bytes(), str(path))
    if record.get("digest") != content_digest(record):
        raise DigestMismatch(f"{path} does not match its digest: it was edited after saving")
    if record.get("report_digest") != report.digest:
        raise DigestMismatch(
            f"{path} decides on report {record.get('report_digest')!r}, not "
            f"on {report.digest!r} next to it: the files do not belong "
            "together"
        )
    if store is not None:  # the page shows what the run's policy decides, not an edit
        check_decided(store, path, record, report)
    decision: dict[str, Any] = dict(record["decision"])
    decision.update(
        complete=record["complete"], expected=record["expected"], recorded=record["recorded"]
    )
    # What the page shows: like `onrecord run`'s exit code, a partial run is never
    # accepted, whatever the policy says about the episodes it holds.
    partial = not record["complete"] and decision["decision"] == "accept"
    decision["verdict"] = "indeterminate" if partial else decision["decision"]
    return decision


def _explained(decision: dict[str, Any], report: EvaluationReport, why: str = "") -> dict[str, Any]:
    """The decision with what the page shows beside it, as ``gate`` and ``show`` give
    it: the line saying what decided (``PolicyDecision.headline``; for a partial run
    led by ``the run is incomplete: N planned episodes have no trial: WHY``) and each
    requirement's 95 % interval clustered by case, made again from the report it decided
    (a saved decision keeps one only for a ``min_lower_bound`` requirement)."""
    table = StatusTable(report)
    requirements = []
    for item in decision.get("requirements", ()):
        if not isinstance(item, dict):
            continue  # a foreign decision's malformed entry: nothing to show for it
        shown = dict(item)
        stored = item.get("interval")
        if isinstance(stored, list) and len(stored) == 2:
            shown["shown_interval"] = [float(stored[0]), float(stored[1])]
        elif isinstance(item.get("matched"), list):
            matched = tuple(map(str, item["matched"]))
            shown["shown_interval"] = list(requirement_interval(table, matched))
        requirements.append(shown)
    body = partial_body(decision, decision["recorded"], decision["expected"], why)
    return {**decision, "requirements": requirements, "headline": saved_headline(body)}


def _foreign_decision(path: Path, report: EvaluationReport) -> dict[str, Any] | None:
    """The decision beside a bare report file, when it is one on that report: a run's,
    a ledger experiment's (a saved ``PolicyDecision`` with a digest) or `gate --output`'s
    (without one). Any other file of that name is not the page's business — before, a
    ledger decision crashed the command and a gate decision was called edited."""
    if not path.is_file():
        return None
    record = load_record_bytes(path.read_bytes(), str(path))
    if record.get("schema") == DECISION_SCHEMA:
        return _decision(path, report)
    if "digest" in record and record["digest"] != content_digest(record):
        raise DigestMismatch(f"{path} does not match its digest: it was edited after saving")
    if (
        record.get("report_digest") != report.digest
        or record.get("decision") not in ("accept", "reject", "indeterminate")
        or not isinstance(record.get("reasons"), list)
    ):
        return None
    trials = len(report.trials)
    decision = {key: value for key, value in record.items() if key not in ("digest", "schema")}
    decision.update(complete=True, expected=trials, recorded=trials, verdict=record["decision"])
    return decision


def _findings(
    report: EvaluationReport, decision: Mapping[str, Any] | None, summary: Mapping[str, Any]
) -> list[str]:
    findings = []
    if decision is not None and not decision["complete"]:
        graded = f", {decision['recorded']} graded" if "run_recorded" in decision else ""
        findings.append(
            f"the run is incomplete: {decision.get('run_recorded', decision['recorded'])} of "
            f"{decision['expected']} episodes recorded{graded}"
            + (
                "; a partial run is never accepted (the policy alone would accept the "
                "episodes recorded)"
                if decision["decision"] != decision["verdict"]
                else ""
            )
        )
    # As the page promises: every failing check first, then the unmeasured ones (before,
    # an unmeasured check sorting early came before the failures).
    for check in summary["checks"]:
        if check["failed"]:
            failing = sorted(
                {
                    str(t.case["case_id"])
                    for t in report.trials
                    if (r := t.result(check["name"])) and r.status == "fail"
                },
                key=natural_key,  # task-2 before task-10, as everywhere else
            )
            findings.append(
                f"{check['name']} failed in {check['failed']} of "
                f"{check['passed'] + check['failed']} measured episodes "
                f"(tasks: {', '.join(failing[:6])}"
                f"{' …' if len(failing) > 6 else ''})"
            )
    for check in summary["checks"]:
        # An evaluator error is a bug in the check, not missing data: said apart, as the
        # terminal's `errors` column does (before, both read "was not measured").
        errors = check.get("errors", 0)
        if check["unmeasured"] > errors:
            findings.append(
                f"{check['name']} was not measured in "
                f"{_count(check['unmeasured'] - errors, 'episode')}"
            )
        if errors:
            findings.append(
                f"{check['name']} errored in {_count(errors, 'episode')} (an evaluator error: the "
                "check raised or returned no verdict; or a model error)"
            )
    issues = report.coverage_issues
    if issues:
        findings.append(f"{_count(len(issues), 'coverage issue')}, e.g. {issues[0]}")
    unchecked = unchecked_line(report.lock)
    if unchecked is not None:  # as `onrecord show` and `gate` say it
        findings.append(unchecked)
    return findings or ["every check passed in every episode, with full coverage"]


def _horizons(summary: Mapping[str, Any]) -> dict[str, list[list[Any]]]:
    """World-model checks ``dynamics/<coordinate>/h<horizon>``: pass rate by horizon."""
    series: dict[str, list[list[Any]]] = {}
    for check in summary["checks"]:
        match = _HORIZON.match(check["name"])
        if match and check["pass_rate"] is not None:
            series.setdefault(match["coordinate"], []).append(
                [int(match["horizon"]), check["pass_rate"], *check["interval"]]
            )
    return {name: sorted(series[name]) for name in sorted(series, key=natural_key)}


def _images(
    plots: str | Path | None, report_file: Path, *, run: Path | None
) -> list[dict[str, str]]:
    # Without --plots: a run's own RUN/plots/ (for a regrade too; before, the folder
    # above the run, i.e. another run's or nobody's plots); for a report file a plots/
    # folder beside it or one level up (a world-model run keeps reports/ and plots/ side
    # by side).
    if plots is not None:
        folder = Path(plots)
        if not folder.is_dir():
            raise InputError(f"--plots {plots} is not a directory of .svg or .png files")
    else:
        places = (
            (run / "plots",)
            if run is not None
            else (report_file.parent / "plots", report_file.parent.parent / "plots")
        )
        found = [p for p in places if p.is_dir()]
        if not found:
            return []
        folder = found[0]
    kinds = {".svg": "image/svg+xml", ".png": "image/png"}
    return [
        {
            "name": item.name,
            "src": f"data:{kinds[item.suffix]};base64,"
            + base64.b64encode(item.read_bytes()).decode(),
        }
        for item in sorted(folder.iterdir(), key=lambda item: natural_key(item.name))
        if item.suffix in kinds
    ]
