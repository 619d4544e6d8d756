"""The data behind an HTML report: one portable dict, embedded in the page as JSON and
rendered from it, so the page and ``--json`` can never disagree."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from onrecord import __version__
from onrecord._canonical import content_digest, load_record_bytes
from onrecord.episode import EPISODE_SCHEMA, EpisodeEvidence
from onrecord.errors import DigestMismatch, InputError
from onrecord.report import EvaluationReport, Trial
from onrecord.runner import RunStore
from onrecord.runner._gym import saved_evidence
from onrecord.runner._toolworld import TOOL_EPISODE_SCHEMA

__all__ = ["report_data"]

_DETAIL_LIMIT = 300
_TIMELINE_LIMIT = 500
_TEXT_LIMIT = 400
_HORIZON = re.compile(r"^dynamics/(?P<coordinate>.+)/h(?P<horizon>\d+)$")


def report_data(
    source: str | Path,
    *,
    grading: str | None = None,
    episodes: str = "auto",
    plots: str | Path | None = None,
) -> dict[str, Any]:
    """Everything the report page shows, from a run directory or a report file."""
    path = Path(source)
    store = RunStore.open(path) if path.is_dir() else None
    folder = path if store is None or grading is None else path / "regrades" / grading
    report_file = folder / "report.json" if path.is_dir() else path
    if not report_file.is_file():
        raise InputError(
            f"{report_file} does not exist; a run writes it when it finishes "
            "(`onrecord run --resume` completes an interrupted run)"
        )
    report = EvaluationReport.load(report_file)
    decision = _decision(report_file.parent / "decision.json", report)
    summary = report.summary().to_dict()
    data: dict[str, Any] = {
        "generator": f"onrecord {__version__}",
        "title": _title(store, path),
        "run": _run_meta(store, grading),
        "report_digest": report.digest,
        "decision": decision,
        "summary": summary,
        "versions": report.lock["checks"],
        "findings": _findings(report, decision, summary),
        "tasks": _tasks(report),
        "episodes": [],
        "detail_note": "",
        "horizons": _horizons(summary),
        "images": _images(plots, report_file),
    }
    if store is not None:
        data["episodes"], data["detail_note"] = _episodes(store, report, episodes)
    return data


def _title(store: RunStore | None, path: Path) -> str:
    if store is None:
        return f"onrecord report {path.name}"
    protocol = store.protocol
    return f"{protocol.agent} on {protocol.environment.name}"


def _run_meta(store: RunStore | None, grading: str | None) -> dict[str, Any] | None:
    if store is None:
        return None
    protocol = store.protocol
    return {
        "run_id": store.run_id,
        "path": str(store.path),
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


def _decision(path: Path, report: EvaluationReport) -> dict[str, Any] | None:
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
    decision: dict[str, Any] = dict(record["decision"])
    decision.update(
        complete=record["complete"], expected=record["expected"], recorded=record["recorded"]
    )
    return decision


def _findings(
    report: EvaluationReport, decision: Mapping[str, Any] | None, summary: Mapping[str, Any]
) -> list[str]:
    findings = []
    if decision is not None and not decision["complete"]:
        findings.append(
            f"the run is incomplete: {decision['recorded']} of "
            f"{decision['expected']} episodes recorded"
        )
    for check in summary["checks"]:
        if check["failed"]:
            failing = sorted(
                {
                    str(t.case["case_id"])
                    for t in report.trials
                    if (r := t.result(check["name"])) and r.status == "fail"
                }
            )
            findings.append(
                f"{check['name']} failed in {check['failed']} of "
                f"{check['passed'] + check['failed']} measured episodes "
                f"(tasks: {', '.join(failing[:6])}"
                f"{' …' if len(failing) > 6 else ''})"
            )
        if check["unmeasured"]:
            findings.append(f"{check['name']} was not measured in {check['unmeasured']} episodes")
    issues = report.coverage_issues
    if issues:
        findings.append(f"{len(issues)} coverage issues, e.g. {issues[0]}")
    return findings or ["every check passed in every episode, with full coverage"]


def _tasks(report: EvaluationReport) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for trial in report.trials:
        row = rows.setdefault(
            str(trial.case["case_id"]),
            {
                "case_id": str(trial.case["case_id"]),
                "episodes": 0,
                "pass": 0,
                "fail": 0,
                "incomplete": 0,
                "failing_checks": [],
            },
        )
        row["episodes"] += 1
        row[trial.outcome_among(report.check_names)] += 1
        for result in trial.results:
            if result.status == "fail" and result.name not in row["failing_checks"]:
                row["failing_checks"].append(result.name)
    for row in rows.values():
        row["pass_rate"] = row["pass"] / row["episodes"]
    return list(rows.values())


def _horizons(summary: Mapping[str, Any]) -> dict[str, list[list[Any]]]:
    """World-model checks ``dynamics/<coordinate>/h<horizon>``: pass rate by horizon."""
    series: dict[str, list[list[Any]]] = {}
    for check in summary["checks"]:
        match = _HORIZON.match(check["name"])
        if match and check["pass_rate"] is not None:
            series.setdefault(match["coordinate"], []).append(
                [int(match["horizon"]), check["pass_rate"], *check["interval"]]
            )
    return {name: sorted(points) for name, points in sorted(series.items())}


def _images(plots: str | Path | None, report_file: Path) -> list[dict[str, str]]:
    # Without --plots: a plots/ folder beside the report, or one level up (a world-model
    # run keeps reports/ and plots/ side by side).
    if plots is not None:
        folder = Path(plots)
        if not folder.is_dir():
            raise InputError(f"--plots {plots} is not a directory of .svg or .png files")
    else:
        found = [
            p
            for p in (report_file.parent / "plots", report_file.parent.parent / "plots")
            if p.is_dir()
        ]
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
        for item in sorted(folder.iterdir())
        if item.suffix in kinds
    ]


def _episodes(
    store: RunStore, report: EvaluationReport, mode: str
) -> tuple[list[dict[str, Any]], str]:
    trials = {(str(t.case["case_id"]), t.repeat): t for t in report.trials}
    outcomes = {key: t.outcome_among(report.check_names) for key, t in trials.items()}
    chosen, note = _choose(list(trials), mode, outcomes)
    wanted = set(chosen)
    views = [
        _episode_view(store, record.data, trials[record.key], record, outcomes[record.key])
        for record in store.records()
        if record.key in wanted
    ]
    order = {key: index for index, key in enumerate(trials)}
    views.sort(key=lambda view: order[(view["case_id"], view["repeat"])])
    return views, note


def _choose(
    trials: list[tuple[str, int]], mode: str, outcomes: Mapping[tuple[str, int], str]
) -> tuple[list[tuple[str, int]], str]:
    bad = [key for key in trials if outcomes[key] != "pass"]
    if mode == "all" or (mode == "auto" and len(trials) <= _DETAIL_LIMIT):
        return trials, ""
    if mode in ("auto", "failing"):
        chosen = bad[:_DETAIL_LIMIT]
    else:
        try:
            limit = int(mode)
        except ValueError as exc:
            raise InputError(
                f"--episodes must be auto, all, failing or a number, got {mode!r}"
            ) from exc
        chosen = (bad + [key for key in trials if outcomes[key] == "pass"])[: max(limit, 0)]
    return chosen, (
        f"details of {len(chosen)} of {len(trials)} episodes (failing and "
        "incomplete first); `onrecord report --episodes all` includes every one"
    )


def _episode_view(
    store: RunStore, record: Mapping[str, Any], trial: Trial, stored: Any, outcome: str
) -> dict[str, Any]:
    saved = store.saved_episode(stored)
    evidence = saved.evidence
    view: dict[str, Any] = {
        "case_id": record["case_id"],
        "repeat": record["repeat"],
        "seed": record["seed"],
        "outcome": outcome,
        "fingerprint": record["fingerprint"],
        "digest": evidence.get("digest"),
        "measures": dict(trial.measures),
        "coverage_issues": list(trial.coverage_issues),
        "results": [
            {"name": r.name, "status": r.status, "reason": r.reason, "evidence": _short(r.evidence)}
            for r in trial.results
        ],
        "timeline": [],
        "diff": None,
        "audit": None,
        "ended": None,
    }
    if evidence.get("schema") == EPISODE_SCHEMA:
        _gym_view(view, saved_evidence(saved))
    elif evidence.get("schema") == TOOL_EPISODE_SCHEMA:
        view.update(
            ended=evidence["ending"],
            diff=evidence["diff"],
            audit=_audit_rows(evidence["audit"]["events"]),
            timeline=_tool_timeline(saved.action_log),
        )
        if evidence.get("agent_error"):
            view["coverage_issues"].append(f"agent error: {evidence['agent_error']}")
    view["timeline_total"] = len(view["timeline"])
    view["timeline"] = view["timeline"][:_TIMELINE_LIMIT]
    return view


def _gym_view(view: dict[str, Any], episode: EpisodeEvidence) -> None:
    rewards = {t["index"]: t["reward"] for t in episode.transitions()}
    view["ended"] = episode.ended
    view["timeline"] = [
        {
            "step": a["index"],
            "label": _short(a["action"]),
            "status": a["status"],
            "detail": "" if a["index"] not in rewards else f"reward {rewards[a['index']]:g}",
            "error": (a["error"] or {}).get("message", ""),
            "state": _short(a["state"]),
        }
        for a in episode.attempts()
    ]


def _tool_timeline(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "step": e.get("step"),
            "label": str(e.get("tool")),
            "arguments": _short(e.get("arguments")),
            "status": e.get("status"),
            "detail": _short(e.get("result")),
            "error": (e.get("error") or {}).get("message", ""),
            "state": e.get("state_version"),
        }
        for e in events
    ]


def _audit_rows(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for event in events:
        old, new = event.get("old") or {}, event.get("new") or {}
        changed = {
            column: [old.get(column), new.get(column)]
            for column in {*old, *new}
            if old.get(column) != new.get(column)
        }
        rows.append(
            {
                "seq": event.get("seq"),
                "step": event.get("step"),
                "table": event.get("table"),
                "op": event.get("op"),
                "key": _short(event.get("key")),
                "changes": {k: changed[k] for k in sorted(changed)},
            }
        )
    return rows


def _short(value: Any) -> str:
    text = (
        value
        if isinstance(value, str)
        else orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    )
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"
