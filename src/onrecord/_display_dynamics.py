"""World-model metrics as tables in rich and in notebooks: what ``__rich__`` of a
``ForecastMetrics``, an ``AggregateMetrics`` or an ``EffectTable`` returns, and the rows
both views share.

``print(forecast_metrics(f))`` gives one line per cell, and a notebook or ``rich.print``
showed an aggregate as a dataclass repr full of arrays. Here each is one row per
coordinate × horizon holding the object's own numbers. A cell with no number says why
(censored, not observed and the reason, a model or simulator error, nothing measured):
shown as a number, or left blank, it read as a perfect forecast. The HTML fragments
(``_repr_html_``) are in ``onrecord._display_dynamics_html``.

Imported only when an object is displayed; rich itself only by the ``*_view`` functions,
so the HTML fragments load none of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onrecord._numbers import percent, significant
from onrecord.dynamics._metrics import LEVELS

if TYPE_CHECKING:
    from rich.console import Console

    from onrecord._display import Printed
    from onrecord.dynamics._aggregate import AggregateMetrics
    from onrecord.dynamics._controls import EffectTable
    from onrecord.dynamics._metrics import ForecastMetrics

__all__ = [
    "Cell",
    "Grid",
    "aggregate_grid",
    "aggregate_view",
    "effect_grid",
    "effect_view",
    "forecast_grid",
    "forecast_view",
]

NO_VALUE = "—"
"""A number that does not exist beside a row's stated reason (a censored horizon has
no interval either) or that is undefined (skill when persistence is exact)."""
_LEVEL = LEVELS.index(0.9)
"""The interval level the tables show (``to_dict()`` and the arrays hold them all)."""


@dataclass(frozen=True)
class Cell:
    """One table cell: its text, and the number it shows (None for a name or a mark)."""

    text: str
    field: str = ""
    value: float | None = None


@dataclass(frozen=True)
class Grid:
    """A coordinate × horizon table: a summary line, headers, and rows whose first three
    cells are coordinate, unit and horizon (``h4``)."""

    kind: str
    title: str
    summary: str
    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


def number(value: float, field: str) -> Cell:
    """A measured number (4 significant digits, never rounded to 0 or ±1); NaN, which
    only an undefined statistic of measured values holds, is ``—``."""
    value = float(value)
    if math.isnan(value):
        return Cell(NO_VALUE, field)
    return Cell(significant(value, 4), field, value)


def _keys(name: str, unit: str, horizon: int) -> tuple[Cell, ...]:
    return (Cell(name, "coordinate"), Cell(unit, "unit"), Cell(f"h{horizon}", "horizon"))


def forecast_grid(metrics: ForecastMetrics) -> Grid:
    """One forecast: signed and absolute error, and with deviations the std, the 90%
    interval, whether it covered the actual value, and the NLL."""
    uncertain = metrics.std is not None
    headers: tuple[str, ...] = ("coordinate", "unit", "horizon", "error", "|error|")
    if uncertain:
        headers += ("std", "90% interval", "90% covered", "nll")
    rows = tuple(
        _keys(name, unit, h) + _forecast_cells(metrics, i, j, len(headers) - 3)
        for j, (name, unit) in enumerate(metrics.coordinates.items())
        for i, h in enumerate(metrics.horizons)
    )
    cells = int(metrics.measured.sum())
    summary = (
        f"forecast {metrics.forecast_digest[:12]} model={metrics.model_id} "
        f"status={metrics.status}: {cells} of {metrics.measured.size} cells measured, "
        f"{int(metrics.censored.sum())} of {len(metrics.horizons)} horizons censored"
    )
    return Grid("forecast-metrics", "forecast metrics", summary, headers, rows)


def _forecast_cells(metrics: ForecastMetrics, i: int, j: int, width: int) -> tuple[Cell, ...]:
    if not metrics.measured[i, j]:
        return (Cell(metrics._gap(i), "missing"),) + (Cell(NO_VALUE),) * (width - 1)
    cells = (number(metrics.error[i, j], "error"), number(metrics.abs_error[i, j], "abs_error"))
    std, lower, upper, covered, nll = (
        metrics.std,
        metrics.lower,
        metrics.upper,
        metrics.covered,
        metrics.nll,
    )
    if std is None or lower is None or upper is None or covered is None or nll is None:
        return cells
    low, high = float(lower[_LEVEL, i, j]), float(upper[_LEVEL, i, j])
    interval = f"{significant(low, 4)} – {significant(high, 4)}"
    return (
        *cells,
        number(std[i, j], "std"),
        Cell(interval, "interval_90"),
        Cell("yes" if covered[_LEVEL, i, j] else "no", "covered_90"),
        number(nll[i, j], "nll"),
    )


_AGGREGATE = ("bias", "mae", "rmse", "skill")
_UNCERTAIN = ("nll", "crps", "calibration_error")


def aggregate_grid(metrics: AggregateMetrics) -> Grid:
    """Many forecasts: how many were measured, censored and unobserved at each horizon,
    then bias, MAE, RMSE, skill, and with deviations 90% coverage beside its width, NLL,
    CRPS and calibration error."""
    uncertain = metrics.coverage is not None
    headers: tuple[str, ...] = (
        "coordinate",
        "unit",
        "horizon",
        "measured",
        "censored",
        "unobserved",
    )
    if metrics.same_cohort:
        headers += ("left out censored",)
    headers += ("bias", "MAE", "RMSE", "skill")
    if uncertain:
        headers += ("90% coverage", "90% width", "nll", "crps", "calibration error")
    rows = tuple(
        _keys(name, unit, h) + _aggregate_cells(metrics, i, j)
        for j, (name, unit) in enumerate(metrics.coordinates.items())
        for i, h in enumerate(metrics.horizons)
    )
    cohort = "same cohort" if metrics.same_cohort else "every ok forecast"
    left = f", {metrics.left_out} left out" if metrics.same_cohort else ""
    summary = (
        f"model={metrics.model_id}: {metrics.forecasts} forecasts, {metrics.cohort} "
        f"in the statistics ({cohort}{left}), {metrics.model_errors} model errors, "
        f"{metrics.simulator_errors} simulator errors, {metrics.with_std} with std"
    )
    return Grid("aggregate-metrics", "aggregate metrics", summary, headers, rows)


def _aggregate_cells(metrics: AggregateMetrics, i: int, j: int) -> tuple[Cell, ...]:
    measured, unobserved = int(metrics.measured[i, j]), int(metrics.unobserved[i, j])
    counts: tuple[Cell, ...] = (
        Cell(f"{measured} of {metrics.cohort}", "measured", measured),
        Cell(str(int(metrics.censored[i])), "censored", int(metrics.censored[i])),
        Cell(str(unobserved), "unobserved", unobserved),
    )
    if metrics.same_cohort and metrics.left_out_censored is not None:
        left = int(metrics.left_out_censored[i])
        counts += (Cell(str(left), "left_out_censored", left),)
    uncertain = metrics.coverage is not None
    width = len(_AGGREGATE) + (2 + len(_UNCERTAIN) if uncertain else 0)
    if not measured:
        # No forecast had an actual value here: every statistic is NaN, not 0.
        why = (
            "censored" if metrics.censored[i] else "not observed" if unobserved else "not measured"
        )
        return counts + (Cell(why, "missing"),) + (Cell(NO_VALUE),) * (width - 1)
    stats = tuple(number(getattr(metrics, name)[i, j], name) for name in _AGGREGATE)
    if metrics.coverage is None or metrics.width is None:
        return counts + stats
    share = float(metrics.coverage[_LEVEL, i, j])
    return (
        counts
        + stats
        + (
            Cell(percent(share), "coverage_90", share),
            number(metrics.width[_LEVEL, i, j], "width_90"),
        )
        + tuple(number(getattr(metrics, name)[i, j], name) for name in _UNCERTAIN)
    )


def effect_grid(table: EffectTable) -> Grid:
    """Paired forecasts: per coordinate × horizon the pairs measured, the mean absolute
    real and predicted effects and the mean absolute error of the predicted effect."""
    headers: tuple[str, ...] = ("coordinate", "unit", "horizon", "pairs")
    headers += ("real effect", "predicted effect", "effect error")
    rows = tuple(
        _keys(name, unit, h) + _effect_cells(table, i, j)
        for j, (name, unit) in enumerate(table.coordinates.items())
        for i, h in enumerate(table.horizons)
    )
    summary = (
        f"model={table.model_id}: mean absolute effects over paired forecasts, "
        f"{table.skipped_pairs} pairs skipped (a forecast of either arm failed)"
    )
    return Grid("effect-table", "effect table", summary, headers, rows)


def _effect_cells(table: EffectTable, i: int, j: int) -> tuple[Cell, ...]:
    pairs = int(table.pairs[i, j])
    count = Cell(str(pairs), "pairs", pairs)
    if pairs:
        fields = ("real_effect", "predicted_effect", "effect_error")
        return (count, *(number(getattr(table, name)[i, j], name) for name in fields))
    # No pair here: the effects are NaN, which shown as 0 would read as "no effect". The
    # arrays cannot tell a censored horizon from pairs all skipped, so both are said.
    why = "not measured in any pair"
    if table.skipped_pairs:
        why += f" ({table.skipped_pairs} skipped: a forecast failed)"
    return (count, Cell(why, "missing"), Cell(NO_VALUE), Cell(NO_VALUE))


def forecast_view(metrics: ForecastMetrics) -> Printed:
    """``ForecastMetrics`` in rich: its summary line, then one row per cell."""
    return _view(lambda: forecast_grid(metrics))


def aggregate_view(metrics: AggregateMetrics) -> Printed:
    """``AggregateMetrics`` in rich: its counts, then one row per cell."""
    return _view(lambda: aggregate_grid(metrics))


def effect_view(table: EffectTable) -> Printed:
    """``EffectTable`` in rich: its model and skipped pairs, then one row per cell."""
    return _view(lambda: effect_grid(table))


def _view(build: Callable[[], Grid]) -> Printed:
    from onrecord._display import Printed

    def draw(console: Console) -> None:
        from rich.text import Text

        from onrecord._tables import SplitTable
        from onrecord.cli._render import cell

        grid = build()
        # Too wide for the console, the table is printed in parts that each repeat the
        # coordinate, unit and horizon: folded, "9.895e-06" read as "9.895e-" and "06".
        # Cells as literal text: a coordinate is named by the user ("[bold]x" stays
        # text), and a newline in it shows as \n rather than as a second row.
        table = SplitTable(*grid.headers, keys=3, title=grid.title)
        for row in grid.rows:
            # A row without values says why in every part, not only in the first.
            missing = [item.text for item in row if item.field == "missing"]
            reason = cell(missing[0]) if missing else ""
            table.add_row(*(cell(item.text) for item in row), reason=reason)
        console.print(Text(grid.summary))
        console.print(table)

    return Printed(draw)
