"""On a terminal whose encoding cannot show onrecord's own symbols (``PYTHONIOENCODING``
ascii or latin-1, a Windows CI log in cp1252) they print as readable ASCII: "needs pass
rate >= 100.0%", not "\\u2265 100.0%". Any other character (a Chinese case id or
reason) still prints as a backslash escape, never changed into something else, and the
exit code is the decision's. Real ``onrecord`` processes on a real remittance run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from onrecord import CheckRequirement
from tests.core.test_ci_outputs import make_report, save

ONRECORD = str(Path(sys.executable).parent / "onrecord")


def _onrecord(encoding: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``onrecord ARGS`` writing in ``encoding``, its output read back in it."""
    return subprocess.run(
        [ONRECORD, *map(str, args)],
        capture_output=True,
        encoding=encoding,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": encoding, "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def utf8_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    out = tmp_path_factory.mktemp("utf8") / "run"
    return _onrecord("utf-8", "run", "remittance", "--agent", "double_poster", "--out", out)


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "cp1252"])
def test_a_run_prints_its_thresholds_readably(
    encoding: str, tmp_path: Path, utf8_run: subprocess.CompletedProcess[str]
) -> None:
    args = ("run", "remittance", "--agent", "double_poster", "--out", tmp_path / "run")
    done = _onrecord(encoding, *args)
    assert "needs pass rate \u2265 100.0%" in utf8_run.stdout  # what is being replaced
    assert "needs pass rate >= 100.0%" in done.stdout
    for shown in (done.stdout, done.stderr):
        assert "\\u2265" not in shown
        assert "\\xb7" not in shown  # the progress lines' separator
    assert (done.returncode, utf8_run.returncode) == (1, 1)  # reject, as under UTF-8
    if encoding == "ascii":  # latin-1 holds the middle dot itself
        assert "episodes 33/33 - " in done.stderr
    else:
        assert "episodes 33/33 \u00b7 " in done.stderr
    # cp1252 holds the en dash of an interval: only what it cannot hold is replaced.
    dash = "\u2013" if encoding == "cp1252" else "-"
    assert f"76.4% {dash} 96.9%" in done.stdout


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_text_not_in_the_table_is_still_escaped(encoding: str, tmp_path: Path) -> None:
    report = make_report(
        {"posted": ["pass", "fail"]}, case="\u75c5\u4f8b-{i}", reason="\u539f\u56e0 {i}"
    )
    report_path, policy_path = save(tmp_path, report, CheckRequirement("posted", min_pass_rate=1))
    done = _onrecord(encoding, "gate", report_path, "--policy", policy_path)
    assert done.returncode == 1, done.stderr
    assert "\\u75c5\\u4f8b-1" in done.stdout  # the failing case's id
    assert "\\u539f\\u56e0 1" in done.stdout  # and its reason
    assert ">= 100.0%" in done.stdout


def test_an_error_message_on_stderr_is_readable_too(tmp_path: Path) -> None:
    # 33 tasks x 1 seed x 400,000 repeats: refused before anything runs.
    args = ("run", "remittance", "--agent", "careful", "--repeats", "400000")
    done = _onrecord("ascii", *args, "--out", tmp_path / "run")
    assert done.returncode == 3, done.stderr
    assert "(33 tasks x 1 seeds x 400000 repeats)" in done.stderr
    assert "\\xd7" not in done.stderr
    assert not (tmp_path / "run").exists()
