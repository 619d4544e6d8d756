"""Inline SVG charts: pass rates with intervals, and pass rate by forecast horizon."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord.html._page import esc, percent

__all__ = ["horizon_chart", "interval_chart"]

_COLORS = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#9a6700", "#bf3989")


def interval_chart(rows: Sequence[tuple[str, float | None, float, float]], *, title: str) -> str:
    """Horizontal bars (rate) with interval whiskers, one row per label, on [0, 1]."""
    left, width, height = 270, 420, 22
    total = 30 + height * len(rows)
    parts = [
        f'<svg class="svg-chart" role="img" aria-label="{esc(title)}" '
        f'width="{left + width + 60}" height="{total}" '
        f'xmlns="http://www.w3.org/2000/svg" font-size="12">'
    ]
    for tick in (0, 0.5, 1):
        x = left + width * tick
        parts.append(
            f'<line x1="{x}" y1="4" x2="{x}" y2="{total - 20}" stroke="#d0d7de"/>'
            f'<text x="{x}" y="{total - 6}" text-anchor="middle">{tick:.0%}</text>'
        )
    for index, (label, rate, low, high) in enumerate(rows):
        y = 6 + index * height
        parts.append(
            f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{esc(_clip(label))}</text>'
        )
        if rate is not None:
            parts.append(
                f'<rect x="{left}" y="{y + 3}" width="{width * rate:.1f}" '
                f'height="{height - 8}" fill="#54aeff"><title>{esc(label)}: '
                f"{percent(rate)} [{percent(low)}, {percent(high)}]</title></rect>"
            )
        parts.append(
            f'<line x1="{left + width * low:.1f}" y1="{y + 7}" '
            f'x2="{left + width * high:.1f}" y2="{y + 7}" stroke="#1f2328" '
            'stroke-width="2"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _clip(label: str, size: int = 30) -> str:
    """A label that fits left of the bars (the full name is in the bar's tooltip)."""
    return label if len(label) <= size else label[: size - 1] + "…"


def horizon_chart(series: Mapping[str, Sequence[Sequence[Any]]], *, title: str) -> str:
    """Pass rate (y) by horizon (x), one line per coordinate."""
    horizons = [point[0] for points in series.values() for point in points]
    if not horizons:
        return ""
    low, high = min(horizons), max(horizons)
    span = max(high - low, 1)
    left, top, width, height = 50, 10, 460, 200
    parts = [
        f'<svg class="svg-chart" role="img" aria-label="{esc(title)}" width="680" '
        f'height="{height + 50}" xmlns="http://www.w3.org/2000/svg" font-size="12">',
        f'<line x1="{left}" y1="{top + height}" x2="{left + width}" '
        f'y2="{top + height}" stroke="#57606a"/>',
        f'<text x="{left + width / 2}" y="{height + 44}" text-anchor="middle">horizon</text>',
    ]
    for tick in (0, 0.5, 1):
        y = top + height * (1 - tick)
        parts.append(
            f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{tick:.0%}</text>'
            f'<line x1="{left}" y1="{y}" x2="{left + width}" y2="{y}" '
            'stroke="#d0d7de"/>'
        )
    for horizon in sorted(set(horizons)):
        x = left + width * (horizon - low) / span
        parts.append(
            f'<text x="{x:.1f}" y="{top + height + 16}" text-anchor="middle">{horizon}</text>'
        )
    for index, (name, points) in enumerate(series.items()):
        color = _COLORS[index % len(_COLORS)]
        xy = [(left + width * (p[0] - low) / span, top + height * (1 - p[1])) for p in points]
        parts.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            + '"/>'
        )
        parts += [
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"><title>'
            f"{esc(name)} h{p[0]}: {percent(p[1])}</title></circle>"
            for (x, y), p in zip(xy, points, strict=True)
        ]
        parts.append(
            f'<text x="{left + width + 10}" y="{top + 14 + 16 * index}" '
            f'fill="{color}">{esc(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
