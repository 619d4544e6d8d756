"""Scoring of world-model forecasts against actual transitions.

``forecast_metrics`` scores one forecast; ``aggregate_metrics`` summarizes many per
coordinate × horizon; ``forecast_case_result`` and ``forecast_report`` turn forecasts into
report trials with checks named ``dynamics/<coordinate>/h<horizon>``.
"""

from onrecord.dynamics._aggregate import PIT_BINS, AggregateMetrics, aggregate_metrics
from onrecord.dynamics._case_result import (
    CHECK_VERSION,
    forecast_case_result,
    forecast_report,
    normalize_tolerances,
)
from onrecord.dynamics._metrics import LEVELS, ForecastMetrics, forecast_metrics

__all__ = [
    "CHECK_VERSION",
    "LEVELS",
    "PIT_BINS",
    "AggregateMetrics",
    "ForecastMetrics",
    "aggregate_metrics",
    "forecast_case_result",
    "forecast_metrics",
    "forecast_report",
    "normalize_tolerances",
]
