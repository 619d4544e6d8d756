"""A comparison's portable form: ``Comparison.from_dict`` rebuilds one from ``to_dict()``
(or what ``onrecord compare --json`` saved), each field checked for its shape, and
``check_to_dict`` is a check's part of ``to_dict()``."""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral
from typing import Any

from onrecord._compare_rates import pass_rate_from_dict
from onrecord._exceptions import describe
from onrecord.compare import CheckComparison, Comparison, DiscordantPair, MeasureComparison
from onrecord.errors import SchemaError

__all__ = ["check_to_dict", "comparison_from_dict"]


def check_to_dict(check: CheckComparison) -> dict[str, Any]:
    """A check's portable form: its counts, p-value, discordant pairs and pass rates."""
    # Rates not recorded (a comparison saved before them) stay absent: such a record
    # read back and written again is the record it was.
    rates = {
        name: rate.to_dict()
        for name, rate in (("rate_a", check.rate_a), ("rate_b", check.rate_b))
        if rate is not None
    }
    body = {key: value for key, value in vars(check).items() if key not in ("rate_a", "rate_b")}
    return body | {"discordant": [pair.to_dict() for pair in check.discordant]} | rates


def comparison_from_dict(data: Mapping[str, Any]) -> Comparison:
    """See ``Comparison.from_dict``."""
    try:
        return Comparison(
            pairs=_count(data["pairs"]),
            checks=tuple(_check_from_dict(check) for check in data["checks"]),
            measures=tuple(_measure_from_dict(measure) for measure in data["measures"]),
            report_a=str(data["report_a"]),
            report_b=str(data["report_b"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"not a comparison (Comparison.to_dict()): {describe(exc)}") from exc


def _count(value: Any) -> int:
    if not isinstance(value, Integral) or isinstance(value, bool) or value < 0:
        raise ValueError(f"a count must be a non-negative integer, not {value!r:.40}")
    return int(value)


def _check_from_dict(data: Mapping[str, Any]) -> CheckComparison:
    return CheckComparison(
        name=str(data["name"]),
        both_pass=_count(data["both_pass"]),
        only_a=_count(data["only_a"]),
        only_b=_count(data["only_b"]),
        both_fail=_count(data["both_fail"]),
        unmeasured=_count(data["unmeasured"]),
        p_value=float(data["p_value"]),
        discordant=tuple(
            DiscordantPair(
                case_id=str(pair["case_id"]),
                content_digest=str(pair["content_digest"]),
                repeat=_count(pair["repeat"]),
                passed_a=_passed_a(pair),
            )
            for pair in data["discordant"]
        ),
        # absent from a comparison saved before the pass rates were recorded
        rate_a=pass_rate_from_dict(data.get("rate_a")),
        rate_b=pass_rate_from_dict(data.get("rate_b")),
    )


def _passed_a(pair: Mapping[str, Any]) -> bool:
    sides = (pair["a"], pair["b"])
    if sides not in (("pass", "fail"), ("fail", "pass")):
        raise ValueError(f"a discordant pair is pass/fail or fail/pass, not {sides!r:.40}")
    return bool(sides[0] == "pass")


def _measure_from_dict(data: Mapping[str, Any]) -> MeasureComparison:
    low, high = data["interval"]
    return MeasureComparison(
        name=str(data["name"]),
        pairs=_count(data["pairs"]),
        mean_a=float(data["mean_a"]),
        mean_b=float(data["mean_b"]),
        mean_difference=float(data["mean_difference"]),
        interval=(float(low), float(high)),
        # absent from a comparison saved before measures counted their cases
        cases=_count(data["cases"]) if data.get("cases") is not None else None,
    )
