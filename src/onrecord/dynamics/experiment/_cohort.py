"""The held-out same-cohort table: every model scored on one set of references.

``aggregate_metrics(same_cohort=True)`` keeps the forecasts *one* model has observed at
every horizon; called per model, a model that failed some references (a ``--model``
whose predict returns NaN on hard states, say) would be scored on fewer, possibly
easier, references than the others, and the table's rows would not be comparable.
Analysis v2 first finds the references every compared model forecast successfully and
that are observed at every horizon, then scores each model on exactly those; the table's
``excluded`` says why each other reference is out, so a model's entry has no
``left_out`` counts of its own (they would read 0 beside ``excluded``'s numbers).
Under v1 each model's own cohort was scored and a row's ``censored`` counted every
successful forecast of the model, in the cohort or not (``censored 29`` beside
``measured`` 11 of 11); ``_as_v1`` rebuilds those rows so v1 runs replay.
Under v2 a model's entry kept ``aggregate_metrics``' own ``cohort``, the forecasts it
scored: 0 for a model not compared, beside the table's ``cohort`` of 9, one name for two
numbers. Analysis v3 calls the entry's count ``scored``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord.dynamics._aggregate import observed_everywhere
from onrecord.dynamics._evidence import ForecastEvidence
from onrecord.dynamics_metrics import aggregate_metrics

__all__ = ["same_cohort_table", "same_cohort_table_v1", "same_cohort_table_v2"]

Forecasts = Mapping[str, Sequence[ForecastEvidence]]


def same_cohort_table_v1(heldout: Forecasts) -> dict[str, Any]:
    """Analysis v1 (runs saved before v2): each model's own cohort, rows as v1 wrote them."""
    return {m: _as_v1(aggregate_metrics(f, same_cohort=True).to_dict()) for m, f in heldout.items()}


def same_cohort_table(heldout: Forecasts) -> dict[str, Any]:
    """``references``, the shared ``cohort``, why the others were ``excluded`` and each
    model's metrics over the cohort (None for every model when the cohort is empty).

    An entry's ``scored`` counts the cohort's forecasts the model answered without
    error: the table's ``cohort``, or 0 for a model ``not_compared``."""
    table = same_cohort_table_v2(heldout)
    table["models"] = {m: _scored(entry) for m, entry in table["models"].items()}
    return table


def _scored(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """A copy of ``entry`` with its ``cohort`` renamed ``scored`` (the key order kept)."""
    if entry is None:
        return None
    return {("scored" if key == "cohort" else key): value for key, value in entry.items()}


def same_cohort_table_v2(heldout: Forecasts) -> dict[str, Any]:
    """Analysis v2: as ``same_cohort_table``, each entry counting ``cohort`` (what v3
    calls ``scored``)."""
    by_model = {m: {f.episode_digest: f for f in items} for m, items in heldout.items()}
    # In the order of the forecasts (sums over the cohort then add up as for one model).
    references = list(dict.fromkeys(d for per in by_model.values() for d in per))
    # A model that failed every reference (its fit raised) would leave no cohort at all:
    # it is not compared, and its row shows the cohort as its errors.
    # (When no model succeeded anywhere, all are compared and the cohort is empty.)
    compared = [
        m for m, per in by_model.items() if any(f.status == "ok" for f in per.values())
    ] or list(by_model)
    excluded, cohort = _exclusions(by_model, compared, references)
    models = {m: _metrics([per[d] for d in cohort if d in per]) for m, per in by_model.items()}
    return {
        "references": len(references),
        "cohort": len(cohort),
        "excluded": excluded,
        "not_compared": [m for m in by_model if m not in compared],
        "models": models,
    }


def _exclusions(
    by_model: Mapping[str, Mapping[str, ForecastEvidence]],
    compared: Sequence[str],
    references: Sequence[str],
) -> tuple[dict[str, Any], list[str]]:
    """Why each reference is left out, and the references kept (in order).

    A reference whose episode itself failed (a simulator error), or that is not
    observed at every horizon (censored, or a state unobserved), is out for every model
    alike; any other is out because of the models that failed it, each of which is
    named (a reference two models failed counts for both)."""
    reference_failed, unobserved, kept = 0, 0, []
    failed_by: dict[str, int] = dict.fromkeys(compared, 0)
    for digest in references:
        forecasts = [by_model[m].get(digest) for m in compared]
        if any(f is not None and f.status == "simulator_error" for f in forecasts):
            reference_failed += 1
            continue
        ok = [f for f in forecasts if f is not None and f.status == "ok"]
        if ok and not observed_everywhere(ok[0]):
            unobserved += 1
            continue
        missing = [
            m for m, f in zip(compared, forecasts, strict=True) if f is None or f.status != "ok"
        ]
        for model in missing:
            failed_by[model] += 1
        if not missing:
            kept.append(digest)
    excluded = {
        "simulator_errors": reference_failed,
        "not_observed_at_every_horizon": unobserved,
        "failed_by_model": failed_by,
    }
    return excluded, kept


def _metrics(forecasts: Sequence[ForecastEvidence]) -> dict[str, Any] | None:
    """A model's entry: every count describes the shared cohort (``censored`` is 0, as the
    cohort is observed at every horizon); what was left out is the table's ``excluded``."""
    if not forecasts:
        return None
    table = aggregate_metrics(forecasts, same_cohort=True).to_dict()
    del table["left_out"]
    for row in table["rows"]:
        del row["left_out_censored"]
    return table


def _as_v1(table: dict[str, Any]) -> dict[str, Any]:
    """A same-cohort table as analysis v1 wrote it: no ``left_out`` counts, and a row's
    ``censored`` over every successful forecast, in the cohort or left out of it (the
    cohort's own are never censored, so the two counts add up to the old one)."""
    del table["left_out"]
    for row in table["rows"]:
        row["censored"] += row.pop("left_out_censored")
    return table
