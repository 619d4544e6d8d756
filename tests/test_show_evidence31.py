"""``onrecord show RUN --episode CASE#REPEAT`` prints the evidence of the verdicts that
did not pass (every broken rule, the tile an agent ended on), so a CI log says what a
check measured without opening report.json; the evidence of those that passed on
request (``--all-evidence``), long values and lists cut unless ``--full``, record text
printed literally. Real runs made by the real CLI; each printed hint run as printed."""

from __future__ import annotations

import shlex
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from onrecord.cli._run_episode import render_tool_calls
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from tests.cli_process import line_after
from tests.runner.conftest import onrecord

LONG = " ".join(f"w{index}" for index in range(100))  # 389 characters of short words
MARKUP = "[bold]not bold[/] [/] \\[red] ends in a backslash \\"
CLOSING = "[/] closes nothing " + LONG  # cut after 160 characters, "[/]" in what is kept
BACKSLASHES = "a" * 157 + "\\\\\\[/]" + " after the cut"  # the cut ends in 3 backslashes


def _measured(episode: EpisodeEvidence) -> OutcomeVerdict:
    """Fails with evidence a reviewer must read whole, and record text that looks like
    markup or holds a terminal control."""
    return OutcomeVerdict(
        False,
        "[bold]measured[/]",
        {
            "steps": episode.measures["steps"],
            "[red]key[/]": MARKUP,
            "control": "erase\x1b[2Jline",
            "long": LONG,
            "cut": BACKSLASHES,
            "closing": CLOSING,
            "broken": [f"rule {index} broken" for index in range(25)],
        },
    )


CHECKS = [
    OutcomeCheck("measured", "v1", _measured),
    OutcomeCheck("unsure", "v1", lambda episode: OutcomeVerdict(None, "cannot tell", {})),
    OutcomeCheck("fine", "v1", lambda episode: OutcomeVerdict(True, "ok", {"kept": 4242})),
]
"""Checks of a FrozenLake run (``--checks tests.test_show_evidence31:CHECKS``)."""

STRICT = [
    OutcomeCheck("strict", "v2", lambda episode: OutcomeVerdict(False, "too long", {"limit": 7777}))
]
"""The check a regrade grades the run with."""


def _show(*args: str | Path, columns: int = 200) -> str:
    shown = onrecord("show", *map(str, args), "--no-progress", env={"COLUMNS": str(columns)})
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return shown.stdout


def _run(command: str, columns: int = 200) -> str:
    words = shlex.split(command)
    assert words[:2] == ["onrecord", "show"], command
    return _show(*words[2:], columns=columns)


def _evidence(stdout: str) -> list[tuple[str, str, str]]:
    """(check, key, value) of the evidence table, wrapped lines joined (spaces dropped:
    a line wraps at a space or folds inside a word)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("evidence of"))
    rows: list[list[str]] = []
    for line in lines[start + 4 :]:
        if not line.startswith("│"):
            break
        check, key, value = (cell.strip() for cell in line.strip("│").split("│"))
        if check or key or not rows:
            rows.append([check, key, value])
        else:
            rows[-1][2] += value
    for row, above in zip(rows[1:], rows, strict=False):  # a check named on its first row
        row[0] = row[0] or above[0]
    return [(check, key, "".join(value.split())) for check, key, value in rows]


def _squeezed(text: str) -> str:
    return "".join(text.split())


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("evidence") / "lake"
    done = onrecord(
        "run", "frozenlake", "-a", "walks_into_hole", "--checks",
        "tests.test_show_evidence31:CHECKS", "--executor", "inprocess", "--no-progress",
        "-o", str(run),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # rejected: "measured" fails
    return run


def test_the_evidence_of_a_failed_remittance_episode_is_shown(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = onrecord(
        "run", "remittance", "-a", "double_poster", "--tasks", "duplicate-01", "-s", "0",
        "-r", "1", "--executor", "inprocess", "--no-progress", "-o", str(run),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    (trial,) = orjson.loads((run / "report.json").read_bytes())["trials"]
    stdout = _show(run, "--episode", "duplicate-01#0")
    rows = _evidence(stdout)
    failed = [r for r in trial["results"] if r["status"] != "pass"]
    assert failed
    assert {check for check, _, _ in rows} == {r["name"] for r in failed}
    for result in failed:
        for key, value in result["evidence"].items():
            if isinstance(value, list) and value:
                expected = [(f"{key}[{i}]", item) for i, item in enumerate(value)]
            elif isinstance(value, dict) and len(orjson.dumps(value)) > 160:
                expected = [(f"{key}.{name}", item) for name, item in value.items()]  # diff
            else:
                expected = [(key, value)]
            for name, item in expected:
                text = item if isinstance(item, str) else orjson.dumps(item).decode()
                if len(text) > 160:
                    text = f"{text[:160]}… ({len(text):,} characters)"
                assert (result["name"], name, _squeezed(text)) in rows, (name, stdout)
    # The broken rule the reason names, now beside what was posted twice.
    assert ("balances_reconcile", "lines", _squeezed(
        '{"CL-100046":{"adjusted":8664,"allocated":21336,"balance":-15000,"billed":15000}}'
    )) in rows  # fmt: skip
    # Those that passed only on request; the hint asks for it as printed.
    sums = next(r for r in trial["results"] if r["name"] == "allocations_sum_to_line")
    assert sums["status"] == "pass"
    assert sums["evidence"]
    assert "allocations_sum_to_line" not in {check for check, _, _ in rows}
    hint = line_after("that passed left out; see it: ", stdout)
    assert shlex.split(hint)[2:] == [str(run), "--episode", "duplicate-01#0", "--all-evidence"]
    every = _evidence(_run(hint))
    assert ("allocations_sum_to_line", "sums", '{"RL-100036":10668}') in every
    assert ("no_post_over_threshold", "", "(noevidencerecorded)") in every


def test_long_values_and_lists_are_cut_unless_full(lake: Path) -> None:
    stdout = _show(lake, "--episode", "frozenlake/goal#0")
    rows = {(check, key): value for check, key, value in _evidence(stdout)}
    (trial,) = orjson.loads((lake / "report.json").read_bytes())["trials"]
    steps = trial["results"][0]["evidence"]["steps"]
    assert rows[("measured", "steps")] == str(steps)  # a number, as report.json has it
    assert rows[("measured", "long")] == _squeezed(f"{LONG[:160]}… (389 characters)")
    # The first 10 rules, one row each, then how many more.
    assert [key for _, key in rows if key.startswith("broken")] == [
        *(f"broken[{i}]" for i in range(10)),
        "broken[10…]",
    ]
    assert rows[("measured", "broken[10…]")] == _squeezed("… 15 more (25 items)")
    # A check not measured is listed with no evidence rather than left out.
    assert rows[("unsure", "")] == _squeezed("(no evidence recorded)")
    assert not any(check == "fine" for check, _ in rows)
    command = line_after("long value(s) shortened, each followed by its length; see them whole: ",
                         stdout)  # fmt: skip
    assert shlex.split(command)[2:] == [str(lake), "--episode", "frozenlake/goal#0", "--full"]
    whole = {(check, key): value for check, key, value in _evidence(_run(command))}
    assert whole[("measured", "long")] == _squeezed(LONG)
    assert whole[("measured", "broken[24]")] == _squeezed("rule 24 broken")
    assert ("measured", "broken[10…]") not in whole


def test_markup_backslashes_and_controls_in_evidence_print_literally(lake: Path) -> None:
    for full in ((), ("--full",)):
        stdout = _show(lake, "--episode", "frozenlake/goal#0", *full)
        rows = {(check, key): value for check, key, value in _evidence(stdout)}
        # Quoted (brackets in a bare key read as an index), and printed literally.
        assert rows[("measured", '["[red]key[/]"]')] == _squeezed(MARKUP)
        assert rows[("measured", "control")] == "erase\\u001b[2Jline"
        assert "\x1b" not in stdout
        cut = BACKSLASHES if full else f"{BACKSLASHES[:160]}… ({len(BACKSLASHES)} characters)"
        assert rows[("measured", "cut")] == _squeezed(cut)
        closing = CLOSING if full else f"{CLOSING[:160]}… ({len(CLOSING)} characters)"
        assert rows[("measured", "closing")] == _squeezed(closing)


def test_a_long_tool_argument_holding_a_closing_tag_is_printed() -> None:
    """The tool-call table of the same view (its cells cut as the evidence's are): a cut
    argument holding "[/]" ended `show --episode` in a MarkupError."""
    console = Console(width=200, record=True, emoji=False)
    event = {"step": 1, "tool": "note", "status": "ok", "arguments": {"text": CLOSING}}
    render_tool_calls(console, [{**event, "result": "saved in C:\\notes\\"}], None)
    printed = _squeezed(console.export_text())
    assert _squeezed('{"text":"[/] closes nothing w0 w1') in printed
    assert _squeezed("saved in C:\\notes\\│") in printed  # no backslash added


def test_every_name_and_key_stays_whole_at_80_columns(lake: Path) -> None:
    stdout = _show(lake, "--episode", "frozenlake/goal#0", "--all-evidence", columns=80)
    # Every table line fits (a hint to paste is one line, however long).
    table = [line for line in stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert all(len(line) <= 80 for line in table), stdout
    rows = _evidence(stdout)
    assert {check for check, _, _ in rows} == {"measured", "unsure", "fine"}
    keys = {key for _, key, _ in rows}
    assert {"steps", '["[red]key[/]"]', "broken[0]", "broken[10…]", "long"} <= keys
    assert ("fine", "kept", "4242") in rows
    assert "evidence of every check" in stdout
    # The --full hint keeps --all-evidence, on one line that can be pasted.
    command = line_after("see them whole: ", stdout)
    assert shlex.split(command)[-2:] == ["--all-evidence", "--full"]


def test_a_regrade_shows_the_evidence_of_its_own_verdicts(lake: Path) -> None:
    done = onrecord(
        "regrade", str(lake), "--checks", "tests.test_show_evidence31:STRICT", "--name", "strict"
    )
    # Indeterminate: the run's policy requires the checks it was graded with.
    assert done.returncode == 2, done.stdout + done.stderr
    stdout = _show(lake / "regrades" / "strict", "--episode", "frozenlake/goal#0")
    assert "verdicts of the regrade strict" in stdout
    assert _evidence(stdout) == [("strict", "limit", "7777")]


def test_all_evidence_needs_an_episode(lake: Path) -> None:
    refused = onrecord("show", str(lake), "--all-evidence", "--no-progress")
    assert refused.returncode == 3
    assert "--all-evidence needs --episode CASE#REPEAT" in refused.stderr
