"""A saved comparison (``onrecord compare --json``, ``onrecord.comparison/v1``) checked
field by field, then for figures that follow from one another, before ``show`` reads it.

Its digest is recomputed by whoever edits it, so a forged comparison verifies as far as
its fields are checked. A discordant pair whose ``a`` was a list was "malformed record
(TypeError: unhashable type: 'list')"; a measure's ``cases`` of -1 or ``true`` verified,
then ``show`` failed without naming the file; ``report_a: true`` was summarized
"A: sha256:True"; ``mean_a`` edited alone showed means whose difference was not their
"B − A"; ``p_value: true`` passed for a p of 1. Each is now refused (exit 3) naming the
file and the field (``checks[0].discordant[2].a``) and what it must be.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from onrecord._comparison_dict import comparison_from_dict
from onrecord._stats import mcnemar_exact_p
from onrecord.cli._bundle import Bundle, digested
from onrecord.cli._decision_fields import field_error, is_count, is_digest
from onrecord.errors import ConsistencyError, SchemaError

__all__ = ["difference_of", "verify_comparison"]

_COUNTS = ("both_pass", "only_a", "only_b", "both_fail", "unmeasured")
_WHOLE = "a whole number, 0 or more"


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _is_probability(value: Any) -> bool:
    return _is_number(value) and 0 <= value <= 1


def _field(
    path: Path, data: Mapping[str, Any], where: str, key: str, must: str, ok: Callable[[Any], bool]
) -> Any:
    """``data[key]`` if ``ok``; else refused as ``WHERE.KEY``."""
    value = data.get(key)
    if not ok(value):
        raise field_error(path, f"{where}{key}", must, value)
    return value


def _items(path: Path, data: Mapping[str, Any], where: str, key: str) -> list[Any]:
    items: list[Any] = _field(path, data, where, key, "a list", lambda v: isinstance(v, list))
    return items


def _object(path: Path, value: Any, where: str, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise field_error(path, where, f"an object ({what})", value)
    return value


def verify_comparison(path: Path, data: dict[str, Any]) -> Bundle:
    """``onrecord compare --json``: digest, fields, and counts, p-values, rates and means
    that follow from one another."""
    digested(path, data)
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
    try:  # what `show` reads: every field it needs was checked above
        comparison_from_dict(data)
    except SchemaError as exc:
        raise SchemaError(f"{path}: {exc}") from exc
    # In compare's words and order ("2 paired trials  A: … vs  B: …"), its sides by the
    # reports' digests: the file holds no other name for them.
    summary = (
        f"{pairs} paired trials, A: sha256:{data['report_a'][:16]} vs B: "
        f"sha256:{data['report_b'][:16]}; {len(checks)} checks, {len(measures)} measures"
    )
    return Bundle("comparison", data["digest"], summary, record=data)


def _once_each(path: Path, key: str, names: Sequence[str]) -> None:
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:  # compare gives each check and each measure one row
        raise ConsistencyError(f"{path}: '{key}' lists {twice[0]!r} more than once")


def _check(path: Path, where: str, data: Any, pairs: int) -> None:
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


def _pair(path: Path, where: str, data: Any) -> tuple[str, str, int]:
    pair = _object(path, data, where, "a discordant pair")
    at = f"{where}."
    case_id = _field(path, pair, at, "case_id", "text", lambda v: isinstance(v, str))
    digest = _field(path, pair, at, "content_digest", "text", lambda v: isinstance(v, str))
    repeat = _field(path, pair, at, "repeat", _WHOLE, is_count)
    side = _field(path, pair, at, "a", '"pass" or "fail"', lambda v: v in ("pass", "fail"))
    other = "fail" if side == "pass" else "pass"
    _field(path, pair, at, "b", f'"{other}" (its "a" is "{side}")', lambda v: v == other)
    return case_id, digest, repeat


def _rates(path: Path, where: str, check: Mapping[str, Any]) -> None:
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


def _rate(path: Path, where: str, data: Any) -> tuple[int, int]:
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


def _measure(path: Path, where: str, data: Any, pairs: int) -> None:
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
        isinstance(value, list)
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
