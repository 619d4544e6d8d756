"""Inline SVG charts: pass rates with intervals, and pass rate by forecast horizon."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord.html._page import esc, name_text, percent

__all__ = ["horizon_chart", "interval_chart"]

_COLORS = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#9a6700", "#bf3989")
# One dash pattern per line besides its colour: a reader who cannot tell red from green
# (or a grey printout) matched the lines to the legend by colour alone.
_DASHES = ("", "8 4", "2 3", "10 3 2 3", "4 4", "1 6")


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
    for index, (raw, rate, low, high) in enumerate(rows):
        label, y = name_text(raw), 6 + index * height
        parts.append(
            f'<g><title>{esc(label)}</title><text x="{left - 6}" y="{y + 13}" '
            f'text-anchor="end">{esc(_clip(label))}</text></g>'
        )
        if rate is None:
            # No episode measured it: a whisker over 0-100 % read as a measured 0 %
            # with a wide interval.
            parts.append(
                f'<text class="unmeasured" x="{left + 4}" y="{y + 13}" fill="#9a6700">'
                "not measured (no pass rate)</text>"
            )
            continue
        parts.append(
            f'<rect x="{left}" y="{y + 3}" width="{width * rate:.1f}" '
            f'height="{height - 8}" fill="#54aeff"><title>{esc(label)}: '
            f"{percent(rate)} [{percent(low)}, {percent(high)}]</title></rect>"
            f'<line x1="{left + width * low:.1f}" y1="{y + 7}" '
            f'x2="{left + width * high:.1f}" y2="{y + 7}" stroke="#1f2328" '
            'stroke-width="2"/>'
        )
    parts.append("</svg>")
    return _scrolling("".join(parts))


def _clip(label: str, size: int = 30) -> str:
    """A label that fits left of the bars (the full name is in its tooltip). The middle
    gives way: names of one family differ at the end ("…/pole_angular_velocity/h16"),
    and cutting the end drew five rows all named "dynamics/pole_angular_velocit…"."""
    if len(label) <= size:
        return label
    head = (size - 1) // 3
    return label[:head] + "…" + label[len(label) - (size - 1 - head) :]


def horizon_chart(series: Mapping[str, Sequence[Sequence[Any]]], *, title: str) -> str:
    """Pass rate (y) by horizon (x), one line per coordinate."""
    horizons = [point[0] for points in series.values() for point in points]
    if not horizons:
        return ""
    low, high = min(horizons), max(horizons)
    span = max(high - low, 1)
    left, top, width, height = 50, 10, 460, 200
    # Wide enough for the longest name right of its legend line (7 px a character at 12 px).
    total = left + width + 56 + 7 * max(len(name) for name in series)
    parts = [
        f'<svg class="svg-chart" role="img" aria-label="{esc(title)}" width="{total}" '
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
    for index, (raw, points) in enumerate(series.items()):
        name = name_text(raw)
        color = _COLORS[index % len(_COLORS)]
        pattern = _DASHES[index % len(_DASHES)]
        dash = f' stroke-dasharray="{pattern}"' if pattern else ""
        xy = [(left + width * (p[0] - low) / span, top + height * (1 - p[1])) for p in points]
        parts.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            + '"/>'
        )
        parts += [
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"><title>'
            f"{esc(name)} h{p[0]}: {percent(p[1])}</title></circle>"
            for (x, y), p in zip(xy, points, strict=True)
        ]
        legend = top + 10 + 16 * index
        parts.append(
            f'<line x1="{left + width + 10}" y1="{legend}" x2="{left + width + 40}" '
            f'y2="{legend}" stroke="{color}" stroke-width="2"{dash}/>'
            f'<text x="{left + width + 46}" y="{legend + 4}" fill="{color}">{esc(name)}</text>'
        )
    parts.append("</svg>")
    return _scrolling("".join(parts))


def _scrolling(svg: str) -> str:
    """The chart in a box that scrolls sideways, as the tables are: shrunk to a phone's
    width without a viewBox, the SVG was cut off at its right (the bars and whiskers past
    0 %, the legend)."""
    return f'<div class="scroll">{svg}</div>'
