"""Every table of the experiment, computed only from saved evidence.

``run`` and ``analyze --replay`` both call ``compute_tables``; replay then insists the
recomputed tables equal the saved ones byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from onrecord.dynamics._closed_loop import ClosedLoopRun
from onrecord.dynamics._closed_loop_stats import (
    closed_loop_summary,
    closed_loop_summary_v1,
    closed_loop_summary_v2,
)
from onrecord.dynamics._controls import effect_table
from onrecord.dynamics._evidence import ForecastEvidence
from onrecord.dynamics.experiment._cohort import (
    same_cohort_table,
    same_cohort_table_v1,
    same_cohort_table_v2,
)
from onrecord.dynamics.experiment._protocol import (
    ANALYSIS,
    ANALYSIS_V1,
    ANALYSIS_V2,
    ANALYSIS_V3,
    ANALYSIS_V4,
    analysis_of,
)
from onrecord.dynamics_metrics import aggregate_metrics, forecast_report

__all__ = ["Evidence", "compute_tables", "decisions"]

Pair = tuple[list[ForecastEvidence], list[ForecastEvidence]]


@dataclass
class Evidence:
    """Everything the tables are computed from, grouped by purpose and model."""

    heldout: dict[str, list[ForecastEvidence]] = field(default_factory=dict)
    development: dict[str, list[ForecastEvidence]] = field(default_factory=dict)
    interventions: dict[str, Pair] = field(default_factory=dict)
    persistence: dict[str, Pair] = field(default_factory=dict)
    closed_loop: list[ClosedLoopRun] = field(default_factory=list)
    other: dict[str, dict[str, list[ForecastEvidence]]] = field(default_factory=dict)


def decisions(
    protocol: Mapping[str, Any], forecasts: Mapping[str, Sequence[ForecastEvidence]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Reports per model and the decision of every protocol policy on each."""
    from onrecord import AcceptancePolicy, CheckRequirement

    reports = {
        model: forecast_report(items, protocol["tolerances"]) for model, items in forecasts.items()
    }
    table: dict[str, Any] = {}
    for model, report in reports.items():
        for name, globs in protocol["policies"].items():
            policy = AcceptancePolicy(tuple(CheckRequirement(g) for g in globs), name=name)
            decision = policy.evaluate(report)
            table.setdefault(model, {})[name] = {
                "decision": decision.decision,
                "headline": decision.headline,
                "report": report.digest,
            }
    return reports, table


def compute_tables(protocol: Mapping[str, Any], evidence: Evidence) -> dict[str, Any]:
    """All tables, portable and deterministic."""
    metrics = {m: aggregate_metrics(f).to_dict() for m, f in evidence.heldout.items()}
    # A run keeps the analysis it was written with: replay recomputes its tables the same
    # way, byte for byte (see _protocol.ANALYSIS).
    analysis = analysis_of(protocol)
    cohort = {ANALYSIS_V1: same_cohort_table_v1, ANALYSIS_V2: same_cohort_table_v2}.get(
        analysis, same_cohort_table
    )(evidence.heldout)
    summary = {ANALYSIS_V1: closed_loop_summary_v1, ANALYSIS_V2: closed_loop_summary_v2}.get(
        analysis, closed_loop_summary
    )
    boot = protocol["bootstrap"]
    tables = {
        "heldout_metrics": metrics,
        "heldout_same_cohort": cohort,
        "development_metrics": {
            m: aggregate_metrics(f).to_dict() for m, f in evidence.development.items()
        },
        "interventions": _effects(evidence.interventions, analysis),
        "persistence": _effects(evidence.persistence, analysis),
        "closed_loop": summary(
            evidence.closed_loop,
            random_model=protocol["random_model"],
            oracle_model=protocol["oracle_model"],
            draws=boot["draws"],
            seed=boot["seed"],
        ),
        "other_envs": {
            env: {m: aggregate_metrics(f).to_dict() for m, f in per.items()}
            for env, per in evidence.other.items()
        },
        "decisions": decisions(protocol, evidence.heldout)[1],
    }
    users = [record["model_id"] for record in protocol.get("user_models", [])]
    tables["headline"] = headline(
        tables,
        users,
        failed_runs=analysis in (ANALYSIS_V3, ANALYSIS_V4, ANALYSIS),
        # v5: the ratio over the pairs both models forecast; earlier runs replay theirs.
        common=common_pairs_ratio(evidence.interventions) if analysis == ANALYSIS else None,
    )
    return tables


def _effects(pairs: Mapping[str, Pair], analysis: str) -> dict[str, list[dict[str, Any]]]:
    """Each model's effect rows; before analysis v4 without ``skipped_pairs``, as those
    runs saved them (replay compares byte for byte)."""
    tables = {m: effect_table(*pair).rows() for m, pair in pairs.items()}
    if analysis in (ANALYSIS_V4, ANALYSIS):
        return tables
    return {
        m: [{k: v for k, v in row.items() if k != "skipped_pairs"} for row in rows]
        for m, rows in tables.items()
    }


def _row(table: Mapping[str, Any], coordinate: str, horizon: int) -> dict[str, Any]:
    return next(
        r for r in table["rows"] if r["coordinate"] == coordinate and r["horizon"] == horizon
    )


def _effect(rows: list[dict[str, Any]], coordinate: str, horizon: int) -> dict[str, Any]:
    return next(r for r in rows if r["coordinate"] == coordinate and r["horizon"] == horizon)


def _effect_pairs(
    effects: Mapping[str, list[dict[str, Any]]], models: Sequence[str]
) -> dict[str, Any]:
    """How many pairs each headline action-effect error was measured on, and how many a
    failed forecast left out: an error over 3 of 20 pairs read as the model's error on
    all of them. Only where the rows count skipped pairs (analysis v4): older runs'
    headlines replay byte for byte without it (``_effects`` drops the count for them)."""
    rows = {m: _effect(effects[m], "cart_velocity", 1) for m in models}
    if any("skipped_pairs" not in row for row in rows.values()):
        return {}
    return {
        "cart_velocity_h1_action_effect_pairs": {
            m: {"pairs": row["pairs"], "skipped_pairs": row["skipped_pairs"]}
            for m, row in rows.items()
        }
    }


_ACTION, _BLIND = "bayes-linear/v1", "bayes-linear-blind/v1"


def _ratio(blind: Any, action: Any) -> float | None:
    """Blind over action-conditioned error; None unless both are finite numbers and the
    divisor is not 0 (a model without an effect error, None, raised a TypeError)."""
    numbers = all(isinstance(x, float | int) and math.isfinite(x) for x in (blind, action))
    return blind / action if numbers and action else None


def _ok_pair(pairs: Sequence[Pair], n: int) -> bool:
    """Pair ``n`` forecast without error by every model, of the same two episodes."""
    arms = [(base[n], variant[n]) for base, variant in pairs]
    digests = {(b.episode_digest, v.episode_digest) for b, v in arms}
    return len(digests) == 1 and all(f.status == "ok" for arm in arms for f in arm)


def common_pairs_ratio(interventions: Mapping[str, Pair]) -> dict[str, Any]:
    """The headline's ratio over the intervention pairs both models forecast without
    error, and how many that is: each model's own error leaves out the pairs it failed,
    so dividing them compared two models on two different sets of pairs."""
    pairs = (interventions[_ACTION], interventions[_BLIND])
    total = min(len(base) for base, _ in pairs)
    keep = [n for n in range(total) if _ok_pair(pairs, n)]
    if not keep:
        return {"ratio": None, "pairs": 0, "skipped_pairs": total}
    action, blind = (
        _effect(
            effect_table([base[n] for n in keep], [variant[n] for n in keep]).rows(),
            "cart_velocity",
            1,
        )
        for base, variant in pairs
    )
    return {
        "ratio": _ratio(blind["effect_error"], action["effect_error"]),
        "pairs": action["pairs"],
        "skipped_pairs": total - len(keep),
    }


def headline(
    tables: Mapping[str, Any],
    users: Sequence[str] = (),
    *,
    failed_runs: bool = True,
    common: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The numbers the experiment's claims rest on, taken from the other tables;
    ``users`` (``--model`` ids) are set beside the built-in models they compare with.

    ``failed_runs`` (analysis v3) adds each closed-loop model's count of failed runs:
    without it, ``reached_cap`` 2 of 3 ``seeds`` beside no ``mean_steps`` left the third
    seed unexplained. Runs of v1 and v2 replay without it. Under v4 the action-effect
    errors come with the pairs they rest on (``_effect_pairs``). ``common`` (v5,
    ``common_pairs_ratio``) gives the ratio over the pairs both models forecast, and
    those pairs beside it; without it the ratio divides each model's own error."""
    action, blind = _ACTION, _BLIND
    loop = {row["model_id"]: row for row in tables["closed_loop"]}
    effects = tables["interventions"]
    act_err = _effect(effects[action], "cart_velocity", 1)["effect_error"]
    blind_err = _effect(effects[blind], "cart_velocity", 1)["effect_error"]
    # A user model that failed has no effect (None), shown as such.
    user_errors = {m: _effect(effects[m], "cart_velocity", 1)["effect_error"] for m in users}
    metrics = tables["heldout_metrics"]
    return {
        "closed_loop": {
            m: {
                "mean_steps": r["mean_steps"],
                "reached_cap": r["reached_cap"],
                "seeds": r["seeds"],
                "normalized_score": r["normalized_score"],
                **({"failed_runs": r["failed_runs"]} if failed_runs else {}),
            }
            for m, r in loop.items()
        },
        "cart_velocity_h1_action_effect_error": {
            action: act_err,
            blind: blind_err,
            "ratio": _ratio(blind_err, act_err) if common is None else common["ratio"],
            **user_errors,
        },
        **_effect_pairs(effects, (action, blind, *users)),
        **(
            {}
            if common is None
            else {
                "cart_velocity_h1_action_effect_ratio_pairs": {
                    "pairs": common["pairs"],
                    "skipped_pairs": common["skipped_pairs"],
                }
            }
        ),
        "cart_velocity_h1_interval_90": {
            m: {
                "coverage": _row(metrics[m], "cart_velocity", 1)["coverage_90"],
                "width": _row(metrics[m], "cart_velocity", 1)["width_90"],
            }
            for m in (action, blind, "bootstrap-ensemble/v1", *users)
        },
        "pole_angle_h1_mae": {m: _row(t, "pole_angle", 1)["mae"] for m, t in metrics.items()},
        "next_step_angle_decisions": {
            m: d["next-step-angle"]["decision"] for m, d in tables["decisions"].items()
        },
    }
