"""Rates, thresholds and intervals as the terminal tables, JUnit XML and Markdown show
them: never rounded into a different fact.

At one decimal, 2999 of 3000 printed as ``100.0%`` beside a failed result, a coverage of
2999 of 3000 as ``100%`` beside an unmeasured one, and a requirement of 0.9995 as
``≥ 100.0%`` beside the ``99.9%`` that met it. A value strictly between 0 and 1 is never
shown as 0 or 1 (as the HTML report shows it), a threshold is shown exactly, and a rate
shown beside its threshold gets the decimals that keep met and failed readable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "P_VALUE_MARKS",
    "fixed",
    "interval_percent",
    "measure_number",
    "percent",
    "rate_percent",
    "requirement_threshold",
    "shown_reason",
    "significant",
    "threshold_percent",
]

_MORE = 4  # extra decimals at most; beyond them a bound such as ">99.99999%" is shown


def fixed(value: float, digits: int, *, scale: float = 1.0, suffix: str = "") -> str:
    """``value * scale`` with ``digits`` decimals, and more when rounding would show a
    value strictly between 0 and 1 as exactly 0 or 1."""
    text = f"{value * scale:.{digits}f}"
    if not 0 < value < 1:
        return text + suffix
    for more in range(digits + 1, digits + _MORE + 1):
        if float(text) not in (0.0, scale):
            return text + suffix
        text = f"{value * scale:.{more}f}"
    if float(text) not in (0.0, scale):
        return text + suffix
    digits += _MORE
    step = 10.0**-digits
    bound = f"<{step:.{digits}f}" if value < 0.5 else f">{scale - step:.{digits}f}"
    return bound + suffix


P_VALUE_MARKS = (1.0, 0.1, 0.05, 0.01, 0.001)
"""The levels a p-value is read against: "0.05" must not stand for 0.049996."""


def significant(value: float, digits: int = 3, marks: Iterable[float] = (0.0, 1.0, -1.0)) -> str:
    """``value`` to ``digits`` significant digits, and more when rounding would show it
    as one of ``marks`` it is not: a forecast skill of 0.99996 read "1", the perfect
    score of the oracle beside it, and a p-value of 0.049996 read "0.05", across the
    level it is compared with. 17 digits tell any two doubles apart, so it ends."""
    marks = tuple(marks)
    text = f"{value:.{digits}g}"
    for more in range(digits + 1, 18):
        if float(text) == value or float(text) not in marks:  # a mark only if it is one
            break
        text = f"{value:.{more}g}"
    return text


def measure_number(value: float, marks: Iterable[float] = ()) -> str:
    """A measure's value or statistic: a whole number as one (``12345``, where ``.4g``
    wrote ``1.234e+04`` rows), else 4 significant digits, more when rounding would show
    it as 0 or one of ``marks`` it is not: a mean of 1000.03 beside a min of 1000 read
    ``1000``, as if every trial had the min."""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return significant(value, 4, (0.0, *marks))


def percent(value: float) -> str:
    """``0.857`` → ``85.7%``; ``0.99967`` → ``99.97%``, never ``100.0%``."""
    return fixed(value, 1, scale=100.0, suffix="%")


def threshold_percent(value: float) -> str:
    """A policy's ``min_pass_rate`` or ``min_coverage`` as written: ``95.0%``, ``99.95%``
    (one decimal hid the last digits, so 0.9995 read as ``100.0%``). Close relative to
    the value, not within a fixed 1e-9: a threshold of 1e-12 read ``0.0%``, and a rate
    of 0 failing it looked as if it met it."""
    for digits in range(1, 8):
        text = f"{value * 100:.{digits}f}"
        if math.isclose(float(text), value * 100, rel_tol=1e-9, abs_tol=0.0):
            return f"{text}%"
    return f"{value * 100:.8g}%"


def rate_percent(value: float, need: float | None = None) -> str:
    """A measured pass rate; beside a threshold ``need``, with the decimals that show it
    on the right side of the threshold as shown (0.94996 is not ``95.0%`` against
    ``≥ 95.0%``, which it failed)."""
    text = percent(value)
    if need is None:
        return text
    shown_need = float(threshold_percent(need)[:-1])
    for digits in range(2, 2 + _MORE + 1):
        shown = text.lstrip("<>")[:-1]
        if (float(shown) >= shown_need) == (value >= need) or text[0] in "<>":
            return text
        text = fixed(value, digits, scale=100.0, suffix="%")
    return text


def interval_percent(low: float, high: float) -> str:
    """A 95 % interval, ``99.80% – 99.99%``: bounds strictly inside (0, 1) never shown as
    0 or 1 (an interval reading ``…–100.0%`` says no failure is possible)."""
    # Spaced, as the HTML report writes it: a narrow terminal's table then wraps it at
    # the dash, where unspaced it was cut mid-number ("76.4%–9" over "6.9%").
    return f"{percent(low)} – {percent(high)}"


# A requirement's reason as the policy wrote it (and a saved decision keeps it, which
# ``verify`` compares with the policy's decision made again: the stored words cannot
# change) says "needs pass rate >= 1" beside a threshold shown as "≥ 100.0%". Shown,
# its numbers read as the table's; only after the counts, which follow the check's
# name, so a name is never rewritten.
_NUM = r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
_COUNTS_END = " not measured of "
_NEEDS = re.compile(rf"needs pass rate >= {_NUM}")
_MEASURED = re.compile(
    rf"(measured pass rate|coverage) {_NUM} \((\d+) of (\d+)\) (<|>=) (min_coverage )?{_NUM}"
)
_BOUND = re.compile(rf"(<|>=) min_lower_bound {_NUM}")


def _op(op: str) -> str:
    return "≥" if op == ">=" else op


def _measured(match: re.Match[str]) -> str:
    what, _, passed, of, op, field, need = match.groups()
    rate = rate_percent(int(passed) / int(of), float(need)) if int(of) else "n/a"
    return (
        f"{what} {rate} ({passed} of {of}) {_op(op)} {field or ''}{threshold_percent(float(need))}"
    )


def shown_reason(reason: str) -> str:
    """A decision's reason with its rates and thresholds in percent, as the table beside
    it shows them: ``needs pass rate >= 0.95`` reads ``needs pass rate ≥ 95.0%``."""
    head, found, tail = reason.rpartition(_COUNTS_END)
    if not found:
        return reason
    tail = _NEEDS.sub(lambda m: f"needs pass rate ≥ {threshold_percent(float(m[1]))}", tail)
    tail = _MEASURED.sub(_measured, tail)
    tail = _BOUND.sub(
        lambda m: f"{_op(m[1])} min_lower_bound {threshold_percent(float(m[2]))}", tail
    )
    return head + found + tail


def requirement_threshold(item: Mapping[str, Any], text: Callable[[object], str] = str) -> str:
    """A saved requirement's threshold: ``≥ 95.0%``, with ``≥ 20 cases`` and ``coverage
    ≥ 90.0%`` when not the defaults (``text`` makes its record text safe to show)."""
    parts = []
    if isinstance(item.get("min_pass_rate"), int | float):
        parts.append(f"≥ {threshold_percent(item['min_pass_rate'])}")
    if "min_cases" in item:
        parts.append(f"≥ {text(item['min_cases'])} cases")
    if isinstance(item.get("min_coverage"), int | float):
        parts.append(f"coverage ≥ {threshold_percent(item['min_coverage'])}")
    if isinstance(item.get("min_lower_bound"), int | float):
        parts.append(f"lower bound ≥ {threshold_percent(item['min_lower_bound'])}")
    return ", ".join(parts)
