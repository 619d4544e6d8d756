"""Reports: trials of check results, a lock that says what they are comparable with,
summary statistics, verified save and load."""

from onrecord.report._measures import MeasureSummary, summarize_measures
from onrecord.report._report import REPORT_SCHEMA, EvaluationReport, build_lock
from onrecord.report._results import STATUSES, CheckResult, Status, Trial
from onrecord.report._summary import CheckSummary, ReportSummary, summarize

__all__ = [
    "REPORT_SCHEMA",
    "STATUSES",
    "CheckResult",
    "CheckSummary",
    "EvaluationReport",
    "MeasureSummary",
    "ReportSummary",
    "Status",
    "Trial",
    "build_lock",
    "summarize",
    "summarize_measures",
]
