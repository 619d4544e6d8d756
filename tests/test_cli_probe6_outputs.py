"""Output options that write a file, run as a real process: ``-`` is not a file name
(``report -o -`` and ``compare --html -`` wrote a file named "-" into the working
directory, and ``> page.html`` got nothing), and a path through a file is refused up
front naming the option, for every option (``--output``, ``--html``, ``-o``, ``--json``
failed on writing with "nasty.json: File exists")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_process import onrecord
from tests.core.test_ci_outputs import make_report


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("outputs")
    return make_report({"posted": ["pass", "fail", "pass"]}).save_json(folder / "a.report.json")


@pytest.mark.parametrize(
    "options",
    [("report", "{a}", "-o", "-"), ("report", "{a}", "-o", "{cwd}/p.html", "--json", "-")],
)
def test_report_refuses_dash_and_writes_no_file_named_dash(
    report: Path, tmp_path: Path, options: tuple[str, ...]
) -> None:
    args = [item.format(a=report, cwd=tmp_path) for item in options]
    result = onrecord(*args, cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert "writes a file, not stdout" in result.stderr
    assert sorted(tmp_path.iterdir()) == []


def test_compare_html_refuses_dash(report: Path, tmp_path: Path) -> None:
    result = onrecord("compare", report, report, "--html", "-", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert "--html -: this option writes a file" in result.stderr
    assert sorted(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("option", "options"),
    [
        (
            "--html",
            ("compare", "{a}", "{a}", "--html", "{blocker}/x.html", "--markdown", "{cwd}/s.md"),
        ),
        ("-o/--out", ("report", "{a}", "-o", "{blocker}/x.html")),
        ("--json", ("report", "{a}", "-o", "{cwd}/r.html", "--json", "{blocker}/d.json")),
        ("--output", ("gate", "{a}", "--policy", "{policy}", "--output", "{blocker}/d.json")),
    ],
)
def test_a_path_through_a_file_is_refused_naming_the_option(
    report: Path, tmp_path: Path, option: str, options: tuple[str, ...]
) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file, not a folder\n")
    policy = tmp_path / "policy.toml"
    policy.write_text('name = "p"\n[[requirements]]\ncheck = "posted"\n')
    args = [item.format(a=report, cwd=tmp_path, blocker=blocker, policy=policy) for item in options]
    result = onrecord(*args)
    assert result.returncode == 3, result.stderr
    assert f"{option} {blocker}/" in result.stderr
    assert "is a file, not a directory" in result.stderr
    assert sorted(tmp_path.iterdir()) == [blocker, policy]
