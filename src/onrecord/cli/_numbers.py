"""Rates, thresholds and intervals as the terminal tables, JUnit XML and Markdown show
them: never rounded into a different fact.

At one decimal, 2999 of 3000 printed as ``100.0%`` beside a failed result, a coverage of
2999 of 3000 as ``100%`` beside an unmeasured one, and a requirement of 0.9995 as
``≥ 100.0%`` beside the ``99.9%`` that met it. A value strictly between 0 and 1 is never
shown as 0 or 1 (as the HTML report shows it), a threshold is shown exactly, and a rate
shown beside its threshold gets the decimals that keep met and failed readable.
"""

from __future__ import annotations

__all__ = ["fixed", "interval_percent", "percent", "rate_percent", "threshold_percent"]

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


def percent(value: float) -> str:
    """``0.857`` → ``85.7%``; ``0.99967`` → ``99.97%``, never ``100.0%``."""
    return fixed(value, 1, scale=100.0, suffix="%")


def threshold_percent(value: float) -> str:
    """A policy's ``min_pass_rate`` or ``min_coverage`` as written: ``95.0%``, ``99.95%``
    (one decimal hid the last digits, so 0.9995 read as ``100.0%``)."""
    for digits in range(1, 8):
        text = f"{value * 100:.{digits}f}"
        if abs(float(text) - value * 100) < 1e-9:
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
    """A 95 % interval, ``99.80%–99.99%``: bounds strictly inside (0, 1) never shown as
    0 or 1 (an interval reading ``…–100.0%`` says no failure is possible)."""
    return f"{percent(low)}–{percent(high)}"
