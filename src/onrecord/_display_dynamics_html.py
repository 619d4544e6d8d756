"""World-model metrics as HTML fragments for notebooks (``_repr_html_``): the rows of
``onrecord._display_dynamics`` in the HTML report's table markup.

Coordinate names and units are the user's, and a reason for an unobserved state quotes
an observer's exception: every one is escaped (``onrecord.html._page``). As the other
fragments (``onrecord._display_html``), no script, no style sheet, no colour of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from onrecord._display_dynamics import Cell, Grid, aggregate_grid, effect_grid, forecast_grid
from onrecord.html._page import NAME_CHARS, TEXT_CHARS, attr, cell, esc, name_text, table

if TYPE_CHECKING:
    from onrecord.dynamics._aggregate import AggregateMetrics
    from onrecord.dynamics._controls import EffectTable
    from onrecord.dynamics._metrics import ForecastMetrics

__all__ = ["aggregate_html", "effect_html", "forecast_html"]


def forecast_html(metrics: ForecastMetrics) -> str:
    """One forecast's errors per coordinate × horizon."""
    return _fragment(forecast_grid(metrics))


def aggregate_html(metrics: AggregateMetrics) -> str:
    """Many forecasts' counts and statistics per coordinate × horizon."""
    return _fragment(aggregate_grid(metrics))


def effect_html(table: EffectTable) -> str:
    """Paired forecasts' real and predicted effects per coordinate × horizon."""
    return _fragment(effect_grid(table))


def _fragment(grid: Grid) -> str:
    rows = [_row(cells) for cells in grid.rows]
    body = f"<p><b>{esc(grid.title)}</b>: {esc(grid.summary)}</p>" + table(
        grid.headers, rows, css=f"onrecord-{grid.kind}"
    )
    return f'<div class="onrecord onrecord-{grid.kind}">{body}</div>'


def _row(cells: tuple[Cell, ...]) -> str:
    """A ``<tr>`` naming its coordinate and horizon; each number's cell carries the raw
    value in ``data-value`` (for scripts and tests), a reason its full text on request."""
    name, unit, horizon = cells[:3]
    keys = cell(name_text(name.text), limit=NAME_CHARS) + cell(unit.text) + cell(horizon.text)
    values = "".join(_value(item) for item in cells[3:])
    return f'<tr data-coordinate="{attr(name.text)}" data-horizon="{attr(horizon.text)}">' + (
        keys + values + "</tr>"
    )


def _value(item: Cell) -> str:
    data: dict[str, object] = {"field": item.field} if item.field else {}
    if item.value is not None:
        data["value"] = repr(item.value)
    if item.field == "missing":
        return cell(item.text, css="missing", data=data, limit=TEXT_CHARS)
    return cell(item.text, css="num", data=data)
