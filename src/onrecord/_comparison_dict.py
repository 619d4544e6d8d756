"""A comparison's portable form: ``Comparison.from_dict`` rebuilds one from ``to_dict()``
(or what ``onrecord compare --json`` saved), each field checked as ``onrecord verify``
checks it (``_comparison_fields``: one check, so the two refuse the same comparisons
with the same words), and ``check_to_dict`` is a check's part of ``to_dict()``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord._compare_rates import pass_rate_from_dict
from onrecord._comparison_fields import check_comparison_fields
from onrecord._exceptions import describe
from onrecord.compare import CheckComparison, Comparison, DiscordantPair, MeasureComparison
from onrecord.errors import SchemaError

__all__ = ["NOT_A_COMPARISON", "check_to_dict", "comparison_from_dict"]


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


NOT_A_COMPARISON = "not a comparison (Comparison.to_dict())"
"""What opens ``Comparison.from_dict``'s refusals (``verify`` opens them with the file)."""


def comparison_from_dict(data: Mapping[str, Any], where: str = NOT_A_COMPARISON) -> Comparison:
    """See ``Comparison.from_dict``; ``where`` opens each refusal (``verify`` passes the
    file)."""
    check_comparison_fields(where, data)
    try:  # every field was checked above: this is only a net
        return Comparison(
            pairs=int(data["pairs"]),
            checks=tuple(_check_from_dict(check) for check in data["checks"]),
            measures=tuple(_measure_from_dict(measure) for measure in data["measures"]),
            report_a=str(data["report_a"]),
            report_b=str(data["report_b"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"{where}: {describe(exc)}") from exc


def _check_from_dict(data: Mapping[str, Any]) -> CheckComparison:
    return CheckComparison(
        name=str(data["name"]),
        both_pass=int(data["both_pass"]),
        only_a=int(data["only_a"]),
        only_b=int(data["only_b"]),
        both_fail=int(data["both_fail"]),
        unmeasured=int(data["unmeasured"]),
        p_value=float(data["p_value"]),
        discordant=tuple(
            DiscordantPair(
                case_id=str(pair["case_id"]),
                content_digest=str(pair["content_digest"]),
                repeat=int(pair["repeat"]),
                passed_a=pair["a"] == "pass",
            )
            for pair in data["discordant"]
        ),
        # absent from a comparison saved before the pass rates were recorded
        rate_a=pass_rate_from_dict(data.get("rate_a")),
        rate_b=pass_rate_from_dict(data.get("rate_b")),
    )


def _measure_from_dict(data: Mapping[str, Any]) -> MeasureComparison:
    low, high = data["interval"]
    return MeasureComparison(
        name=str(data["name"]),
        pairs=int(data["pairs"]),
        mean_a=float(data["mean_a"]),
        mean_b=float(data["mean_b"]),
        mean_difference=float(data["mean_difference"]),
        interval=(float(low), float(high)),
        # absent from a comparison saved before measures counted their cases
        cases=int(data["cases"]) if data.get("cases") is not None else None,
    )
