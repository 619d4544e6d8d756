"""Round 43: names holding a newline on the report page, and gate decisions verified.

A task id ``"posted\\nonce"`` rendered in HTML as ``posted once``: another task's name.
The page shows it as the terminal's tables do, ``posted\\nonce``, in the rows Python
writes and in those its script builds. A real tool world under a real run, its page in
headless Chromium.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onrecord import EvalCase
from onrecord.envkit import Snapshot, no_other_changes
from onrecord.runner import ToolWorldProvider, plan_run, start_run
from tests.cli_process import onrecord
from tests.test_values_and_stale_round40 import SCHEMA, _populate, drop, put, writer

NAMES = ["posted\nonce", "posted once", "tab\there"]


def world() -> Any:
    """Three tasks whose ids differ only in a newline, a space or a tab."""
    return ToolWorldProvider(
        Snapshot.build("labels43", SCHEMA, _populate),
        [put, drop],
        environment_id="labels43/v1",
        tasks=[EvalCase({"n": 0}, {"rules": [no_other_changes()]}, case_id=n) for n in NAMES],
        agents={"writer": writer},
        max_steps=20,
    )


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("labels43")
    start_run(folder / "run", plan_run(f"{__name__}:world", "writer", seeds=[0]))
    made = onrecord("report", folder / "run", "-o", folder / "page.html")
    assert made.returncode == 0, made.stderr
    return folder / "page.html"


_READ = (
    "const texts = sel => [...document.querySelectorAll(sel)].map(e => e.innerText);"
    "out.tasks = texts('#tasks tbody tr td:first-child');"
    "out.episodes = texts('#episode-list tr td:first-child');"
    "out.heading = texts('#episode-view h2');"
)


def test_a_name_with_a_newline_is_shown_as_one(page: Path, tmp_path: Path) -> None:
    from tests.html.test_browser_probe import _drive

    shown = {"posted\\nonce", "posted once", "tab\\there"}
    without = _drive(page, _READ, tmp_path, script=False)  # the rows Python writes
    assert set(without["tasks"]) == shown, without
    out = _drive(page, _READ, tmp_path)  # and those the script builds
    assert not out["errors"], out
    assert set(out["tasks"]) == shown, out
    assert set(out["episodes"]) == shown, out
    heading = out["heading"][0].split(" #")[0].removeprefix("Episode ")
    assert heading in shown, out
