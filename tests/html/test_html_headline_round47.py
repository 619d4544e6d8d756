"""Round 47: a check or measure name holding a newline reads as one line everywhere on
the page. The decision's headline ("failed: posted\\nonce") was escaped as ordinary
text, so there the newline rendered as a space, another check's name, while the
requirements table below said ``posted\\nonce``; and the episode view's script wrote
measure names with their newline. A real FrozenLake report decided by a real policy,
a real remittance run's page in headless Chromium."""

from __future__ import annotations

import copy
import html
from pathlib import Path

from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict, evaluate_episodes
from onrecord.html import report_data
from onrecord.html._decision import headline
from onrecord.html._report import render_report_page
from onrecord.policy import AcceptancePolicy, CheckRequirement
from tests.display_helpers import Tables, lake_episodes
from tests.html.test_browser_probe import _drive

NAME = "posted\nonce"
SHOWN = "posted\\nonce"


def _refused(episode: EpisodeEvidence) -> OutcomeVerdict:
    return OutcomeVerdict(False, "posted twice", {})


def test_the_headline_shows_a_check_name_as_the_requirements_table_does() -> None:
    report = evaluate_episodes(
        lake_episodes(("walks_to_goal",)), [OutcomeCheck(NAME, "v1", _refused)]
    )
    decision = AcceptancePolicy((CheckRequirement(NAME),)).evaluate(report)
    assert decision.headline == f"failed: {NAME}"
    fragment = decision._repr_html_()
    tables = Tables(fragment)
    assert tables.row("data-requirement", NAME)[0] == SHOWN
    shown = html.unescape(fragment)
    assert f"<b>failed: {SHOWN}</b>" in shown  # before: "failed: posted\nonce", a space
    assert f"failed: {NAME}" not in shown
    # The report page's headline, of the saved decision, and an incomplete run's alike.
    saved = {**decision.to_dict(), "headline": decision.headline, "verdict": "reject"}
    assert f"<b>failed: {SHOWN}</b>" in html.unescape(headline(saved))
    partial = {**saved, "verdict": "indeterminate", "recorded": 1, "expected": 2}
    assert html.unescape(headline(partial)).endswith(f"the policy: failed: {SHOWN}</b></p>")


def test_the_episode_view_writes_a_measure_name_on_one_line(
    remittance_run: Path, tmp_path: Path
) -> None:
    data = copy.deepcopy(report_data(remittance_run))
    first = next(i for i, e in enumerate(data["episodes"]) if e["outcome"] != "pass")
    measures = data["episodes"][first]["measures"]
    name = next(iter(measures))
    # A measure name is the environment's: one holding a newline, as a user's may.
    data["episodes"][first]["measures"] = {
        NAME: measures[name],
        **{k: v for k, v in measures.items() if k != name},
    }
    page = tmp_path / "page.html"
    page.write_text(render_report_page(data))
    out = _drive(
        page,
        "out.measures = [...document.querySelectorAll('#episode-view .measure')]"
        ".map(m => [m.dataset.measure, m.textContent]);",
        tmp_path,
    )
    shown = dict(out["measures"])
    assert shown[NAME] == f"{SHOWN} {measures[name]:g}", out  # before: "posted\nonce 0"
