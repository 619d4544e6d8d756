"""The report page's script (``report.js``, package data): renders the episode detail
views from the embedded data (timeline, row diff, audit history, failing checks) and
filters the task table."""

from importlib import resources

__all__ = ["EPISODE_SCRIPT"]

# UTF-8 whatever the locale: under LANG=C without UTF-8 mode, read_text() decoded it as
# ASCII and every onrecord command died on import (exit 1, i.e. "reject").
EPISODE_SCRIPT = resources.files("onrecord.html").joinpath("report.js").read_text(encoding="utf-8")
