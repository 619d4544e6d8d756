"""The examples in README.md and docs/ run as a reader would copy them, and print what the
pages say they print; every public name and every command-line option is documented."""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from onrecord.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# Definitions the README example leaves to the reader (`your_agent`,
# `make_fresh_environment`, `read_committed_state`): an invoice environment whose action 1
# posts the invoice and action 0 finishes.
README_PRELUDE = """
import gymnasium as gym

class InvoiceEnv(gym.Env):
    action_space = gym.spaces.Discrete(2)
    observation_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.rows = []
        return 0, {}

    def step(self, action):
        if action == 1:
            self.rows.append({"invoice_id": "invoice-17", "amount_cents": 1234})
        return 1, 0.0, action == 0, False, {}

holder = {}

def make_fresh_environment():
    holder["env"] = InvoiceEnv()
    return holder["env"]

def read_committed_state():
    return {"invoice_rows": list(holder["env"].rows), "protected": "original"}

_script = iter([1, 0])

def your_agent(observation, info):
    return next(_script)
"""


def _blocks(page: Path, language: str = "python") -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), flags=re.S)


def _run(code: str, namespace: dict[str, Any], name: str) -> dict[str, Any]:
    exec(compile(code, name, "exec"), namespace)
    return namespace


@pytest.fixture
def readme_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    """The README example, run with the reader's three definitions; what it printed is
    kept as ``printed``."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme"}
    _run(README_PRELUDE, namespace, "prelude")
    capsys.readouterr()
    _run(_blocks(ROOT / "README.md")[0], namespace, "README.md")
    namespace["printed"] = capsys.readouterr().out
    return namespace


def test_the_readme_example_accepts_one_correct_posting(
    readme_namespace: dict[str, Any], tmp_path: Path
) -> None:
    assert readme_namespace["printed"] == "accept\n"
    assert readme_namespace["decision"].exit_code == 0
    saved = json.loads((tmp_path / "invoice-outcome.json").read_text())
    assert saved["schema"] == "onrecord.report/v1"


def test_the_checks_page_checks_pass_on_the_readme_episode(
    readme_namespace: dict[str, Any],
) -> None:
    from onrecord.episode import evaluate_episode

    namespace = _run(_blocks(DOCS / "checks.md")[0], readme_namespace, "docs/checks.md")
    report = evaluate_episode(
        namespace["episode"], [namespace["check"], namespace["protected_never_changed"]]
    )
    statuses = {r.name: (r.status, r.version) for r in report.trials[0].results}
    assert statuses == {
        "posted_once": ("pass", "invoice-once-v1"),
        "protected_never_changed": ("pass", "v1"),
    }


def test_the_policy_and_comparison_examples_print_what_the_pages_say(
    readme_namespace: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    namespace = _run(_blocks(DOCS / "reports-and-policies.md")[0], readme_namespace, "policies")
    decision = namespace["decision"]
    # posted_once passes; the globs and "style" match no check: indeterminate, exit 2
    assert (decision.decision, decision.exit_code) == ("indeterminate", 2)
    assert decision.reasons == (
        "no check in the report matches 'dynamics/pole_angle/*'",
        "no check in the report matches 'style'",
        "no check in the report matches 'safety/*'",
    )
    namespace["report_a"] = namespace["report_b"] = namespace["report"]
    _run(_blocks(DOCS / "comparison.md")[0], namespace, "docs/comparison.md")
    assert capsys.readouterr().out.splitlines() == [
        "posted_once 0 0 1.0 ()",  # a report compared with itself: p = 1
        "return 0.0 (0.0, 0.0)",
        "steps 0.0 (0.0, 0.0)",
    ]


def test_the_world_model_example_prints_errors_per_horizon(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("scipy")
    _run(_blocks(DOCS / "world-models.md")[0], {"__name__": "wm"}, "docs/world-models.md")
    out = capsys.readouterr().out
    assert "model=persistence/v1 status=ok" in out
    for coordinate, unit in (("x", "m"), ("velocity", "m/s"), ("angle", "rad")):
        for horizon in (1, 4):
            assert re.search(rf"{coordinate} h{horizon}: error [-+][0-9.e-]+ {unit}\n", out)
    assert "x h1: error -0.0007944 m" in out


def test_the_writing_a_task_walkthrough_runs_and_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    page = DOCS / "writing-a-task.md"
    python, toml = _blocks(page), _blocks(page, "toml")
    namespace = _run(python[0], {"__name__": "walkthrough"}, "copy the task file")
    with open("tasks.toml", "a") as file:  # "append your task to it"
        file.write("\n" + toml[0])
    for index, code in enumerate(python[1:], start=1):
        _run(code, namespace, f"docs/writing-a-task.md block {index}")
    out = capsys.readouterr().out.splitlines()
    diff = ast.literal_eval(out[0])  # the printed allocations diff
    assert len(diff["created"]) == 1
    assert diff["changed"] == diff["deleted"] == []
    assert all(status == "pass" for _, status in ast.literal_eval(out[1]))
    assert out[2] == "accept"


def test_the_runs_python_example_accepts_the_careful_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = _blocks(DOCS / "runs.md")[0]
    _run(code, {"__name__": "__main__"}, "docs/runs.md")
    assert capsys.readouterr().out == "accept 0\n"
    lines = (tmp_path / "runs" / "careful" / "episodes.jsonl").read_bytes().count(b"\n")
    assert lines == 33 * 5 * 3


def test_the_cli_gate_example_policy(
    tmp_path: Path, readme_namespace: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(_blocks(DOCS / "cli.md", "toml")[0])
    report = tmp_path / "invoice-outcome.json"
    # posted_once passes; latency_budget is not in the report: indeterminate
    assert main(["gate", str(report), "--policy", str(policy)]) == 2
    assert "no check in the report matches 'latency_budget'" in capsys.readouterr().out
    misspelt = tmp_path / "misspelt.toml"
    misspelt.write_text('[[requirements]]\ncheck = "posted_once"\ncritcal = false\n')
    assert main(["gate", str(report), "--policy", str(misspelt)]) == 3
    assert "unknown field(s) ['critcal']" in capsys.readouterr().err


def test_the_ledger_experiment_and_the_demo_pages_keep_its_directory_verifiable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """domain-ledger.md's results, and the demo's HTML step: it once wrote a merged
    report into the ledger directory, which then failed `onrecord verify`."""
    from onrecord.cli._render import make_console
    from onrecord.cli.demo import _html
    from onrecord.runner import plan_run, start_run

    out = tmp_path / "demo-output"
    assert main(["ledger", "run", "--output-dir", str(out / "ledger")]) == 0
    printed = re.sub(r"[│┃]", " ", capsys.readouterr().out)
    ablation = {line.split()[0]: line.split()[1:] for line in printed.splitlines() if line.split()}
    assert ablation["final_answer"] == ["14", "14", "8"]
    assert ablation["final_posting"] == ["14", "8", "2"]  # forbidden_then_restored, seeds 7, 8
    assert ablation["full_policy"] == ["14", "6", "0"]
    for agent in ("careful", "double_poster", "change_and_restore", "skips_notes"):
        start_run(out / "remittance" / agent, plan_run("remittance", agent, tasks=["full-01"]))
    pages = _html(out, {}, make_console())
    assert {page.name for page in pages} == {
        "remittance-careful.html",
        "remittance-double_poster.html",
        "remittance-change_and_restore.html",
        "ledger.html",
        "compare-careful-vs-skips_notes.html",
    }
    assert main(["verify", str(out / "ledger"), str(out / "ledger.report.json")]) == 0
    assert main(["ledger", "analyze", str(out / "ledger")]) == 0


PUBLIC_PACKAGES = (
    "onrecord",
    "onrecord.episode",
    "onrecord.report",
    "onrecord.envkit",
    "onrecord.runner",
    "onrecord.dynamics",
    "onrecord.dynamics.experiment",
    "onrecord.dynamics_metrics",
    "onrecord.integrations.gymnasium",
    "onrecord.html",
    "onrecord.examples",
    "onrecord.domains.ledger",
    "onrecord.domains.remittance",
)


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_public_name_is_documented(package: str) -> None:
    module = importlib.import_module(package)
    text = "\n".join(page.read_text() for page in DOCS.glob("*.md"))
    missing = [
        name
        for name in module.__all__
        if not re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text)
    ]
    assert missing == [], f"{package}: not named anywhere in docs/"


def _options(parser: argparse.ArgumentParser, prefix: str) -> list[tuple[str, str]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _options(sub, f"{prefix} {name}")
        else:
            found += [
                (prefix, flag)
                for flag in action.option_strings
                if flag != "-h" and flag != "--help"
            ]
    return found


def test_every_command_and_option_is_in_cli_md() -> None:
    text = (DOCS / "cli.md").read_text()
    options = _options(build_parser(), "onrecord")
    assert ("onrecord run", "--env-config") in options
    sections = re.split(r"\n## ", text)
    for command, flag in options:
        if command == "onrecord":
            assert f"`onrecord {flag}`" in text
            continue
        words = command.split()[1:]
        section = [s for s in sections if s.startswith(f"`onrecord {words[0]}")]
        assert section, f"docs/cli.md has no section for {command}"
        assert any(re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", s) for s in section), (
            f"docs/cli.md does not document {command} {flag}"
        )


def _anchors(page: Path) -> set[str]:
    """The ``#anchors`` GitHub makes of ``page``'s headings: the text as shown (links as
    their text, no backticks or emphasis), lowercased, every character but letters,
    digits, ``_``, ``-`` and spaces dropped, spaces as ``-``; a repeated one gets ``-1``,
    ``-2``… Headings inside fenced code blocks are code, not headings."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    anchors: set[str] = set()
    counts: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, flags=re.M):
        shown = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").replace("*", "")
        slug = re.sub(r"[^\w\- ]", "", shown.strip().lower()).replace(" ", "-")
        repeat = counts.get(slug, 0)
        anchors.add(f"{slug}-{repeat}" if repeat else slug)
        counts[slug] = repeat + 1
    return anchors


def test_links_between_pages_resolve() -> None:
    """Every relative link of README.md and docs/ names a file that exists and, with a
    ``#anchor``, a heading of it (the guides and references link section to section)."""
    checked = anchored = 0
    for page in (ROOT / "README.md", *DOCS.glob("*.md")):
        prose = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            linked = page.parent / path if path else page
            assert linked.exists(), f"{page.name} links to {target}"
            checked += 1
            if anchor and linked.suffix == ".md":
                assert anchor in _anchors(linked), f"{page.name} links to {target}: no such heading"
                anchored += 1
    # The README alone links to several docs pages, and the guides to their references'
    # sections: an empty glob or a regex that matches nothing must not pass silently.
    assert checked >= 20, checked
    assert anchored >= 20, anchored


def test_a_section_named_in_quotes_is_a_heading_of_its_page() -> None:
    """``([envkit.md](envkit.md), "Under `onrecord run`")`` names a section: it must be a
    heading of that page, or the reader looks for it in vain."""
    named = 0
    for page in (ROOT / "README.md", *DOCS.glob("*.md")):
        for name, sections in re.findall(
            r"([\w-]+\.md)\)?`?((?:,? \"[^\"\n]+\")+)", page.read_text()
        ):
            linked = DOCS / name if (DOCS / name).exists() else ROOT / name
            headings = {
                heading.replace("`", "").lower()
                for heading in re.findall(r"^#{1,6}\s+(.*)$", linked.read_text(), flags=re.M)
            }
            for section in re.findall(r"\"([^\"]+)\"", sections):
                wanted = section.replace("`", "").lower()
                assert any(wanted in heading for heading in headings), (page.name, name, section)
                named += 1
    assert named >= 5, named
