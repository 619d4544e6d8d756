"""The report page's script (``rows.js`` then ``report.js``, package data): renders the
episode detail views from the embedded data (timeline, row diff, audit history, failing
checks) and filters the task table."""

from importlib import resources

__all__ = ["EPISODE_SCRIPT"]


def _read(name: str) -> str:
    # UTF-8 whatever the locale: under LANG=C without UTF-8 mode, read_text() decoded it
    # as ASCII and every onrecord command died on import (exit 1, i.e. "reject").
    return resources.files("onrecord.html").joinpath(name).read_text(encoding="utf-8")


# One script, two files (report.js stays under ~400 lines): rows.js defines the row diff
# and audit history views that report.js then builds with its own helpers. One <script>
# element, as before: a page read without script drops it whole.
EPISODE_SCRIPT = _read("rows.js") + _read("report.js")
