"""The report page's script (``report.js``, package data): renders the episode detail
views from the embedded data (timeline, row diff, audit history, failing checks) and
filters the task table."""

from importlib import resources

__all__ = ["EPISODE_SCRIPT"]

EPISODE_SCRIPT = resources.files("onrecord.html").joinpath("report.js").read_text()
