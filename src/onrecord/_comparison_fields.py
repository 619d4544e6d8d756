"""A comparison's fields (``Comparison.to_dict()``, what ``onrecord compare --json``
saves), checked field by field, then for figures that follow from one another: the one
check both ``Comparison.from_dict`` and ``onrecord verify`` make, so that a comparison
one of them refuses the other refuses too, with the same words.

Its digest is recomputed by whoever edits it, so a forged comparison verifies as far as
its fields are checked. A discordant pair whose ``a`` was a list was "malformed record
(TypeError: unhashable type: 'list')"; a measure's ``cases`` of -1 or ``true`` verified,
then ``show`` failed without naming the file; ``report_a: true`` was summarized
"A: sha256:True"; ``mean_a`` edited alone showed means whose difference was not their
"B − A"; ``p_value: true`` passed for a p of 1. Each is now refused naming the file and
the field (``checks[0].discordant[2].a``) and what it must be. ``Comparison.from_dict``
took a p-value of 2, counts that did not add up to the pairs, a reversed interval and a
check listed twice, all of which ``verify`` refused; it now refuses them the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from onrecord._record_fields import field_error, is_count, is_digest
from onrecord._stats import mcnemar_exact_p
from onrecord.errors import ConsistencyError, SchemaError

__all__ = ["check_comparison_fields", "difference_of"]

_COUNTS = ("both_pass", "only_a", "only_b", "both_fail", "unmeasured")
_WHOLE = "a whole number, 0 or more"


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _is_probability(value: Any) -> bool:
    return _is_number(value) and 0 <= value <= 1


def _field(
    path: str, data: Mapping[str, Any], where: str, key: str, must: str, ok: Callable[[Any], bool]
) -> Any:
    """``data[key]`` if ``ok``; else refused as ``WHERE.KEY``."""
    value = data.get(key)
    if not ok(value):
        raise field_error(path, f"{where}{key}", must, value)
    return value


def _items(path: str, data: Mapping[str, Any], where: str, key: str) -> list[Any]:
    items: list[Any] = _field(path, data, where, key, "a list", lambda v: isinstance(v, list))
    return items


def _object(path: str, value: Any, where: str, what: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise field_error(path, where, f"an object ({what})", value)
    return dict(value)


def check_comparison_fields(path: str, data: Any) -> None:
    """Refuse a comparison whose field is missing, of another kind or out of range, or
    whose counts, p-values, rates and means do not follow from one another. ``path``
    opens each message: the file, or what a Python loader was reading. A SchemaError
    names the field and what it must be; a ConsistencyError the figures that disagree."""
    if not isinstance(data, Mapping):
        raise SchemaError(
            f"{path}: must be an object (Comparison.to_dict()), not {type(data).__name__}"
        )
    pairs = _field(path, data, "", "pairs", _WHOLE, is_count)
    for side in ("report_a", "report_b"):
        _field(path, data, "", side, "a sha256 digest (64 hex digits)", is_digest)
    checks, measures = _items(path, data, "", "checks"), _items(path, data, "", "measures")
    for index, check in enumerate(checks):
        _check(path, f"checks[{index}]", check, pairs)
    for index, measure in enumerate(measures):
        _measure(path, f"measures[{index}]", measure, pairs)
    for key, items in (("checks", checks), ("measures", measures)):
        _once_each(path, key, [item["name"] for item in items])


def _once_each(path: str, key: str, names: Sequence[str]) -> None:
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:  # compare gives each check and each measure one row
        raise ConsistencyError(f"{path}: '{key}' lists {twice[0]!r} more than once")


def _check(path: str, where: str, data: Any, pairs: int) -> None:
    check = _object(path, data, where, "a check's counts, p-value and discordant pairs")
    name = _field(path, check, f"{where}.", "name", "text", lambda v: isinstance(v, str))
    at = f"{where}."
    counts = {key: _field(path, check, at, key, _WHOLE, is_count) for key in _COUNTS}
    _field(path, check, at, "p_value", "a number from 0 to 1", _is_probability)
    discordant = _items(path, check, at, "discordant")
    if sum(counts.values()) != pairs:
        raise ConsistencyError(f"{path}: check {name!r} counts do not add up to {pairs} pairs")
    keys = [_pair(path, f"{where}.discordant[{j}]", pair) for j, pair in enumerate(discordant)]
    if len(set(keys)) != len(keys):  # a pair is one trial of each side: listed once
        raise ConsistencyError(f"{path}: check {name!r} lists a discordant pair twice")
    sides = [pair["a"] for pair in discordant]
    if (sides.count("pass"), sides.count("fail")) != (counts["only_a"], counts["only_b"]):
        raise ConsistencyError(
            f"{path}: check {name!r} lists other discordant pairs than its A-only and B-only counts"
        )
    expected = mcnemar_exact_p(counts["only_a"], counts["only_b"])
    if check["p_value"] != expected:
        raise ConsistencyError(
            f"{path}: check {name!r} has p = {check['p_value']!r}, but its discordant "
            f"counts ({counts['only_a']}, {counts['only_b']}) give {expected!r}"
        )
    _rates(path, where, check)


def _pair(path: str, where: str, data: Any) -> tuple[str, str, int]:
    pair = _object(path, data, where, "a discordant pair")
    at = f"{where}."
    case_id = _field(path, pair, at, "case_id", "text", lambda v: isinstance(v, str))
    digest = _field(path, pair, at, "content_digest", "text", lambda v: isinstance(v, str))
    repeat = _field(path, pair, at, "repeat", _WHOLE, is_count)
    side = _field(path, pair, at, "a", '"pass" or "fail"', lambda v: v in ("pass", "fail"))
    other = "fail" if side == "pass" else "pass"
    _field(path, pair, at, "b", f'"{other}" (its "a" is "{side}")', lambda v: v == other)
    return case_id, digest, repeat


def _rates(path: str, where: str, check: Mapping[str, Any]) -> None:
    """Each side's pass rate (absent from a comparison saved before they were recorded):
    its fields, and counts the pairs allow. The pairs measured on both sides fix each
    side's passes and failures among them; the unmeasured pairs may add to either."""
    both, only_a, only_b = check["both_pass"], check["only_a"], check["only_b"]
    unmeasured = check["unmeasured"]
    a_side = ("rate_a", both + only_a, only_b + check["both_fail"])
    b_side = ("rate_b", both + only_b, only_a + check["both_fail"])
    for side, passes, fails in (a_side, b_side):
        if side not in check:
            continue
        passed, measured = _rate(path, f"{where}.{side}", check[side])
        failed = measured - passed
        if not (passes <= passed <= passes + unmeasured and fails <= failed <= fails + unmeasured):
            raise ConsistencyError(
                f"{path}: check {check['name']!r}: {side} ({passed} of {measured} passed) does "
                f"not agree with its paired counts ({passes} passes and {fails} failures "
                f"measured on both sides, {unmeasured} pairs unmeasured)"
            )


def _rate(path: str, where: str, data: Any) -> tuple[int, int]:
    """One side's rate, field by field: its passed and measured counts."""
    rate = _object(path, data, where, "passed, measured, their pass rate, an interval")
    at = f"{where}."
    passed: int = _field(path, rate, at, "passed", _WHOLE, is_count)
    must = f"a whole number, {passed} (its passed) or more"
    measured: int = _field(path, rate, at, "measured", must, lambda v: is_count(v) and v >= passed)
    value = passed / measured if measured else None
    must = f"{value!r} ({passed} / {measured})" if value is not None else "null (none measured)"
    _field(path, rate, at, "pass_rate", must, lambda v: _same(v, value))
    holds = "its pass rate" if value is not None else "0 to 1: nothing was measured"
    must = f"two numbers from 0 to 1, low then high, holding {holds}"
    _field(path, rate, at, "interval", must, lambda v: _holds(v, value))
    return passed, measured


def _same(saved: Any, value: float | None) -> bool:
    return not isinstance(saved, bool) and saved == value


def _holds(interval: Any, value: float | None) -> bool:
    if not _low_high(interval) or not 0 <= interval[0] <= interval[1] <= 1:
        return False
    low, high = interval
    return (low, high) == (0, 1) if value is None else low <= value <= high


def _measure(path: str, where: str, data: Any, pairs: int) -> None:
    measure = _object(path, data, where, "a measure's means and interval")
    at = f"{where}."
    _field(path, measure, at, "name", "text", lambda v: isinstance(v, str))
    # A measure is compared over the pairs that have it on both sides: at least one.
    measured = _field(
        path, measure, at, "pairs", f"a whole number from 1 to {pairs}", lambda v: _within(v, pairs)
    )
    if measure.get("cases") is not None:  # absent or null: saved before cases were counted
        must = f"a whole number from 1 to {measured} (its pairs)"
        _field(path, measure, at, "cases", must, lambda v: _within(v, measured))
    means = [
        _field(path, measure, at, key, "a finite number", _is_number)
        for key in ("mean_a", "mean_b", "mean_difference")
    ]
    interval = _field(path, measure, at, "interval", "two finite numbers, low then high", _low_high)
    if not difference_of(means, interval):
        raise ConsistencyError(
            f"{path}: measure {measure['name']!r}: its mean difference {means[2]!r} is not "
            f"mean B − mean A ({means[1]!r} − {means[0]!r}): it was changed after it was saved"
        )


def _within(value: Any, most: int) -> bool:
    return is_count(value) and 1 <= value <= most


def _low_high(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(_is_number(end) for end in value)
        and value[0] <= value[1]
    )


def difference_of(means: Sequence[float], interval: Sequence[float]) -> bool:
    """Whether a measure's mean difference (the mean of B − A pair by pair) is its mean B
    − mean A, to within the rounding of the two ways of computing it. Each B − A rounds
    by a part in 2**53 of itself, so the rounding scales with the differences, of which
    the interval (and the means) give the size: 1e-6 of it is far above any rounding and
    far below any figure ``show`` prints."""
    mean_a, mean_b, difference = means
    gap = mean_b - mean_a
    scale = max(abs(value) for value in (*means, *interval))
    return math.isfinite(gap) and math.isclose(gap, difference, rel_tol=1e-6, abs_tol=1e-6 * scale)
