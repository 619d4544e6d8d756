"""Round 38 layout: the report's check table is wide only when it fits framed with every
number and interval on one line; else narrow, which shows the same facts whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onrecord._tables import fitted_table
from tests.cli_process import onrecord

_INTERVAL = re.compile(r"\d+\.\d% – \d+\.\d%")
_PERCENT = re.compile(r"\d+\.\d%")


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("round38") / "run"
    done = onrecord("run", "cartpole", "--agent", "balances", "--seeds", "0-2", "--out", out)
    assert done.returncode == 0, done.stderr
    return out


def _check_table(text: str) -> list[str]:
    """The lines of the report's check table (from its top border to the note under it)."""
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if "95% intervals are Wilson" in line)
    start = max(i for i, line in enumerate(lines[:end]) if "sha256:" in line)
    return lines[start + 1 : end]


@pytest.mark.parametrize("columns", [80, 100, 110, 120, 160])
def test_show_never_splits_an_interval_or_a_rate(cartpole_run: Path, columns: int) -> None:
    done = onrecord("show", cartpole_run, columns=columns)
    assert done.returncode == 0, done.stderr
    table = _check_table(done.stdout)
    rows = [line for line in table if "pole_within_limits" in line or "survived" in line]
    assert len(rows) == 2, "\n".join(table)
    for row in rows:  # each row's rate and interval whole on the name's line
        assert _INTERVAL.search(row), "\n".join(table)
        assert len(_PERCENT.findall(row)) == 3, "\n".join(table)  # the rate and interval
    assert table[0].startswith("┏"), "\n".join(table)  # framed: the outer border kept
    assert all(len(line) <= columns for line in table)


_WIDE = [(80, False), (100, False), (110, False), (160, True)]


@pytest.mark.parametrize(("columns", "wide"), _WIDE)
def test_wide_only_when_it_truly_fits(cartpole_run: Path, columns: int, wide: bool) -> None:
    table = _check_table(onrecord("show", cartpole_run, columns=columns).stdout)
    headers = "\n".join(line for line in table if "┃" in line)
    assert ("version" in headers) is wide, "\n".join(table)
    if wide:  # one header line: every header whole
        assert "of which errors" in headers, "\n".join(table)


def test_unbroken_columns_keep_their_cells_on_one_line() -> None:
    """An interval beside a column with more to spare: the spare one wraps."""
    table = fitted_table("check", "note", "95% interval", unbroken=("95% interval",))
    table.add_row("pole", "a rather long note that can wrap", "43.9% – 100.0%")
    assert table.fits_framed(40)
    assert not table.fits_framed(30)
    from rich.console import Console

    console = Console(width=40, record=True)
    console.print(table)
    assert "43.9% – 100.0%" in console.export_text()


def test_unbroken_names_a_header() -> None:
    with pytest.raises(ValueError, match="unbroken"):
        fitted_table("check", unbroken=("interval",))


@pytest.mark.browser
def test_html_measures_past_twenty_fold_into_details(cartpole_run: Path, tmp_path: Path) -> None:
    """Dozens of measures (as a world model's report has): the first 20 shown, the rest
    behind a "N more measures" summary that opens to every one of them."""
    from onrecord.html import render_report_page, report_data
    from tests.html.test_browser_probe import _drive

    data = report_data(cartpole_run)
    base = data["summary"]["measures"][0]
    data["summary"]["measures"] = [{**base, "name": f"m{n:02d}"} for n in range(35)]
    page = tmp_path / "measures.html"
    page.write_text(render_report_page(data))
    driver = (
        "const shown=()=>[...document.querySelectorAll("
        "'#measure-summary-section tr[data-measure]')]"
        ".filter(r=>r.checkVisibility()).map(r=>r.dataset.measure);"
        "out.before=shown();"
        "const more=document.getElementById('measure-more');"
        "out.summary=more.querySelector('summary').textContent;"
        "more.querySelector('summary').click();out.after=shown();"
    )
    out = _drive(page, driver, tmp_path)
    names = [f"m{n:02d}" for n in range(35)]
    assert out["before"] == names[:20]
    assert out["summary"] == "15 more measures"
    assert out["after"] == names
