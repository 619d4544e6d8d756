"""Self-contained HTML reports: one file with inline CSS, script and data, viewable
offline. ``write_report`` for a run (or a report file), ``write_comparison`` for two."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from onrecord._canonical import atomic_write_bytes
from onrecord._listed_folders import refuse_inside_listed_folder
from onrecord.html._compare import comparison_data, render_comparison_page
from onrecord.html._data import report_data
from onrecord.html._report import render_report_page

__all__ = [
    "comparison_data",
    "render_comparison_page",
    "render_report_page",
    "report_data",
    "write_comparison",
    "write_report",
]


def write_report(
    source: str | Path,
    out: str | Path | None = None,
    *,
    grading: str | None = None,
    episodes: str = "auto",
    plots: str | Path | None = None,
    data_json: str | Path | None = None,
) -> Path:
    """Render the report of a run directory (or report file) to ``out`` (default
    ``RUN/report.html``, or the report file's name with ``.html``)."""
    data = report_data(source, grading=grading, episodes=episodes, plots=plots)
    path = Path(source)
    if out is None:
        out = (
            (path / "report.html")
            if grading is None
            else path / "regrades" / grading / "report.html"
        )
        if not path.is_dir():
            out = path.with_suffix(".html")
    refuse_inside_listed_folder(Path(out))
    if data_json is not None:
        refuse_inside_listed_folder(Path(data_json))
        _save_json(data_json, data)
    return atomic_write_bytes(out, render_report_page(data).encode())


def write_comparison(
    source_a: str | Path,
    source_b: str | Path,
    out: str | Path,
    *,
    data_json: str | Path | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Render the comparison of two runs (or report files); a refused comparison renders
    its reasons. Returns the path and the data."""
    refuse_inside_listed_folder(Path(out))
    if data_json is not None:
        refuse_inside_listed_folder(Path(data_json))
    data = comparison_data(source_a, source_b)
    if data_json is not None:
        _save_json(data_json, data)
    return atomic_write_bytes(out, render_comparison_page(data).encode()), data


def _save_json(path: str | Path, data: Any) -> None:
    atomic_write_bytes(
        path, orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
    )
