"""``compare`` refused for an input it cannot read says why in its CI summary and page.

1. ``onrecord compare A B --markdown "$GITHUB_STEP_SUMMARY" --html page.html`` wrote a
   summary for locks that differ or an incomplete run, and nothing when A or B could not
   be read at all — a missing file or run directory, a report changed after saving, an
   interrupted run without ``report.json``, a run's ``run.json`` or a saved episode given
   instead of a report — so the CI job failed with an empty summary (and, for a missing
   file, no page either). It now appends ``### ⛔ onrecord compare: refused (exit 3)``
   with the error and the commands it names, as ``gate`` does, and writes the page with
   the error. A refused destination or a usage error still writes nothing.
2. "case sets differ: 1 only in A (e.g. ['case-1']), 0 only in B (e.g. [])" printed
   Python lists: the cases are named plainly now.

Real runs of the remittance environment, compared by the installed command.
"""

from __future__ import annotations

import html
import shutil
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from onrecord._lock_diff import lock_differences
from onrecord.domains.remittance import RemittanceEnvironment, ScriptedAgent
from tests.cli_process import onrecord
from tests.domains.test_remittance_play import TASK

HEADING = "### ⛔ onrecord compare: refused (exit 3)"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two complete runs, ``a`` and ``b``, of the careful agent (full-01, seeds 0-1)."""
    folder = tmp_path_factory.mktemp("compare53")
    for name in ("a", "b"):
        done = onrecord(
            *("run", "remittance", "--agent", "careful", "--tasks", "full-01"),
            *("--seeds", "0-1", "--out", folder / name, "--no-progress"),
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return folder


def _missing_file(runs: Path, tmp: Path) -> tuple[Path, str]:
    return tmp / "nothere.json", f"no such file: {tmp / 'nothere.json'}"


def _missing_run(runs: Path, tmp: Path) -> tuple[Path, str]:
    return tmp / "runs" / "gone", f"no such file: {tmp / 'runs' / 'gone'}"


def _tampered(runs: Path, tmp: Path) -> tuple[Path, str]:
    copy = tmp / "tampered"
    shutil.copytree(runs / "b", copy)
    report = copy / "report.json"
    report.write_bytes(report.read_bytes().replace(b'"pass"', b'"fail"'))
    return copy, "it was changed after saving"


def _interrupted(runs: Path, tmp: Path) -> tuple[Path, str]:
    # What a run killed before grading leaves: its episodes, no report.json.
    copy = tmp / "interrupted"
    shutil.copytree(runs / "b", copy)
    (copy / "report.json").unlink()
    (copy / "decision.json").unlink()
    return copy, "has no report.json: the run was interrupted with 2 of 2 planned episodes"


def _run_json(runs: Path, tmp: Path) -> tuple[Path, str]:
    return runs / "b" / "run.json", "schema is 'onrecord.run/v1', expected 'onrecord.report/v1'"


def _saved_episode(runs: Path, tmp: Path) -> tuple[Path, str]:
    env = RemittanceEnvironment(TASK)
    folder = tmp / "episode"
    env.run(ScriptedAgent("careful", env.brief), folder)
    env.close()
    return folder, "is a saved tool-world episode (save_episode), not a run directory"


UNREADABLE: dict[str, Callable[[Path, Path], tuple[Path, str]]] = {
    "missing file": _missing_file,
    "missing run directory": _missing_run,
    "tampered report": _tampered,
    "interrupted run": _interrupted,
    "run.json": _run_json,
    "saved episode": _saved_episode,
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_an_input_that_cannot_be_read_is_said_in_the_summary_and_page(
    runs: Path, tmp_path: Path, case: str
) -> None:
    source, said = UNREADABLE[case](runs, tmp_path)
    summary, page = tmp_path / "summary.md", tmp_path / "page.html"
    summary.write_text("## an earlier step\n")  # $GITHUB_STEP_SUMMARY, appended to
    done = onrecord("compare", runs / "a", source, "--markdown", summary, "--html", page)
    assert done.returncode == 3, done.stdout + done.stderr
    assert said in " ".join(done.stderr.split())
    text = summary.read_text()
    assert text.startswith(f"## an earlier step\n\n{HEADING}\n"), text
    assert "nothing was compared" in text
    assert said in text.replace("\\", "")  # the error, escaped as record text is
    assert said in html.unescape(page.read_text())


def test_an_interrupted_run_names_the_resume_command_to_copy(runs: Path, tmp_path: Path) -> None:
    source, _ = _interrupted(runs, tmp_path)
    summary = tmp_path / "summary.md"
    done = onrecord("compare", source, runs / "a", "--markdown", summary)
    assert done.returncode == 3
    lines = summary.read_text().splitlines()
    block = lines.index("**Commands it names** (then compare again):")
    assert lines[block + 2 : block + 5] == ["```", f"onrecord run --resume {source}", "```"]


def test_the_summary_goes_to_stdout_alone_with_dash(runs: Path, tmp_path: Path) -> None:
    done = onrecord("compare", runs / "a", tmp_path / "nothere.json", "--markdown", "-")
    assert done.returncode == 3
    assert done.stdout.startswith(HEADING + "\n"), done.stdout
    assert f"no such file: {tmp_path / 'nothere.json'}" in done.stdout.replace("\\", "")
    assert done.stdout.endswith("</sub>\n")  # the summary and nothing else


def test_a_missing_file_still_gets_the_page_with_the_error(runs: Path, tmp_path: Path) -> None:
    # Before: a file that does not exist (an OSError, not onrecord's own error) left no
    # page, while a damaged one had a page saying why.
    page = tmp_path / "page.html"
    done = onrecord("compare", tmp_path / "nothere.json", runs / "b", "--html", page)
    assert done.returncode == 3
    assert f"no such file: {tmp_path / 'nothere.json'}" in html.unescape(page.read_text())


def _manifest_folder(tmp: Path) -> Path:
    folder = tmp / "listed"
    folder.mkdir()
    (folder / "manifest.json").write_bytes(orjson.dumps({"schema": "onrecord.experiment/v1"}))
    return folder


@pytest.mark.parametrize(
    "destination",
    ["empty name", "one file twice", "through a file", "manifest-listed folder", "usage"],
)
def test_a_refused_destination_or_usage_error_writes_nothing(
    runs: Path, tmp_path: Path, destination: str
) -> None:
    summary, page = tmp_path / "summary.md", tmp_path / "page.html"
    (tmp_path / "notes.txt").write_text("a file\n")
    options: list[str | Path] = {
        "empty name": ["--markdown", "", "--html", page],
        "one file twice": ["--markdown", summary, "--html", summary],
        "through a file": ["--markdown", tmp_path / "notes.txt" / "s.md", "--html", page],
        "manifest-listed folder": [
            *("--markdown", summary, "--html", _manifest_folder(tmp_path) / "p.html")
        ],
        "usage": ["--markdown", summary, "--html", page, "--no-such-option"],
    }[destination]
    done = onrecord("compare", runs / "a", tmp_path / "nothere.json", *options)
    assert done.returncode == 3, done.stderr
    assert ("usage:" in done.stderr) == (destination == "usage")
    assert not summary.exists()
    assert not page.exists()
    assert not (tmp_path / "listed" / "p.html").exists()
    assert "no such file" not in done.stderr  # refused before A and B were read


def _lock(*cases: str) -> dict[str, object]:
    return {"cases": [{"case_id": c, "content_digest": "d", "trials": [[0, 0]]} for c in cases]}


def test_case_sets_that_differ_are_named_plainly() -> None:
    only_a = lock_differences(_lock("full-01", "full-02"), _lock("full-01"))
    assert only_a == ["case sets differ: 1 only in A (full-02), 0 only in B"]
    many = lock_differences(_lock("x"), _lock(*(f"full-{n:02d}" for n in range(1, 6))))
    assert many == [
        "case sets differ: 1 only in A (x), 5 only in B (full-01, full-02, full-03 and 2 more)"
    ]
