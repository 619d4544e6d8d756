"""Round 39: row keys that read alike, and a run graded but not decided.

A tool world's table may hold the TEXT key '1' and the INTEGER key 1 (a key column
without INTEGER affinity, or a composite key), and a text key may be '', ' 7' or 'null'.
`onrecord show` and the HTML report printed keys bare, so those rows read alike or not
at all. Real ToolWorld episodes, the real command, Chromium for the page.

A run killed between writing report.json and decision.json: `show` and `verify` said
"not graded yet", though report.json is the whole grading (verified) that `compare`,
`gate` and `report` read; only the decision is missing. Real runs, real commands, and a
real process killed while it writes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord._row_keys import key_text as terminal_key
from onrecord.envkit import Snapshot, ToolContext, ToolWorld, save_episode, tool
from onrecord.html import render_report_page, report_data, write_report
from onrecord.html._episode import _audit_rows, _diff_rows
from tests.cli_process import onrecord
from tests.test_crash_resume37 import _killed_while_held
from tests.test_show_row_history25 import _rows

BIG = 2**53 + 1
"""An INTEGER key JavaScript numbers cannot hold: it read as 2**53 on the page."""
KEYS: list[Any] = [1, "1", "", " 7", "null", "INV-17", "a, b", 1.5, "1.5", b"\x01", BIG]
SHOWN = ["1", '"1"', '""', '" 7"', '"null"', "INV-17", '"a, b"', "1.5", '"1.5"']
SHOWN += ['{"$blob":"01"}', str(BIG)]


@tool(writes=True, example={"index": 0, "note": "x"})
def set_note(ctx: ToolContext, index: int, note: str) -> None:
    """Set the note of the row keyed ``KEYS[index]``."""
    ctx.execute("UPDATE notes SET note = ? WHERE k = ?", (note, KEYS[index]))


@tool(writes=True, example={"a": 1, "b": "x"})
def add_pair(ctx: ToolContext, a: int, b: str) -> None:
    """Add a row keyed (a, b)."""
    ctx.execute("INSERT INTO pairs VALUES (?, ?, 'n')", (a, b))


def _fill(conn: Any, _rng: Any) -> None:
    conn.executemany("INSERT INTO notes VALUES (?, 'open')", [(k,) for k in KEYS])


def _episode(path: Path) -> Path:
    """Every row of ``notes`` changed, the rows 1, '1' and 'INV-17' put back, and two
    rows of ``pairs`` (a composite key) created."""
    snapshot = Snapshot.build(
        "keys39",
        # `k` has no type: no affinity, so 1 and '1' are two keys, as SQLite allows.
        "CREATE TABLE notes (k PRIMARY KEY, note TEXT NOT NULL);"
        "CREATE TABLE pairs (a, b, v, PRIMARY KEY (a, b));",
        _fill,
        seed=1,
    )
    with ToolWorld(snapshot, [set_note, add_pair]) as world:
        world.reset(seed=1)
        for index in range(len(KEYS)):
            world.call("set_note", {"index": index, "note": "changed"})
        for index in (0, 1, 5):
            world.call("set_note", {"index": index, "note": "open"})
        world.call("add_pair", {"a": 1, "b": "2"})
        world.call("add_pair", {"a": 1, "b": "x, y"})
        world.call("add_pair", {"a": 1, "b": "INV-17"})
        save_episode(world, path)
    return path


@pytest.fixture(scope="module")
def episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _episode(tmp_path_factory.mktemp("keys39") / "episode")


def _saved(episode: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    events = orjson.loads((episode / "audit.json").read_bytes())["events"]
    diff = orjson.loads((episode / "diff.json").read_bytes())
    return events, diff.get("diff", diff)


def test_show_prints_keys_that_read_apart(episode: Path) -> None:
    result = onrecord("show", episode, "--full")
    assert result.returncode == 0, result.stderr
    keys = [row[3] for row in _rows(result.stdout)]
    # Before: 1 and 1 (the INTEGER and the TEXT), an empty cell, 7, null, a, b, 1.5 twice.
    assert keys[: len(KEYS)] == SHOWN
    assert keys[len(KEYS) : len(KEYS) + 3] == ["1", '"1"', "INV-17"]
    # Before: [1,"2"], [1,"x, y"] and [1,"INV-17"], JSON whatever the text.
    assert keys[-3:] == ['(1, "2")', '(1, "x, y")', "(1, INV-17)"]


def test_rows_put_back_are_named_as_the_table_names_them(episode: Path) -> None:
    result = onrecord("show", episode)
    assert result.returncode == 0, result.stderr
    (end,) = [line for line in result.stdout.splitlines() if line.startswith("at the end:")]
    # Before: `notes rows 1, "1", "INV-17"`: the key the table printed INV-17, quoted.
    assert end.endswith('put back by its end: notes rows 1, "1", INV-17')


def test_the_rule_reads_text_bare_only_when_it_reads_as_nothing_else() -> None:
    bare = ["INV-17", "Acme Corp", "café", "a-1", "2024-01-05", "x'01'", "1 2"]
    quoted = ["", " a", "a ", "-1", "+2.5", "1e5", ".5", "0x1F", "1_000", "NaN", "-inf"]
    quoted += ["Infinity", "NULL", "None", "true", "False", "a,b", '"q"', "(1)", "[1]"]
    quoted += ["{}", "tab\there", "line\nbreak", "\u200bzero-width"]
    for text in bare:
        assert terminal_key(text) == text, text
    for text in quoted:
        assert terminal_key(text) == orjson.dumps(text).decode(), text
    for key in (1, 1.0, None, {"$blob": "00"}):
        assert terminal_key(key) == orjson.dumps(key).decode()
    assert terminal_key([float("-inf")]) == '({"$real":"-Infinity"})'
    assert terminal_key(float("inf")) == '{"$real":"Infinity"}'  # JSON read null
    assert terminal_key([1.0, "1", "a"]) == '(1.0, "1", a)'


_READ = (
    "const cells = sel => [...document.querySelectorAll(sel)].map(tr =>"
    " [...tr.cells].map(td => td.textContent));"
    "out.audit = cells('#episode-view tr.audit-row');"
    "out.diff = cells('#episode-view tr.diff-row');"
)


@pytest.mark.browser
def test_the_report_page_prints_keys_as_show_does(episode: Path, tmp_path: Path) -> None:
    from tests.html.test_browser_probe import _drive

    run = tmp_path / "run"
    made = onrecord(
        *("run", "remittance", "-a", "change_and_restore", "-s", "0", "-r", "1"),
        *("--executor", "inprocess", "--no-progress", "-o", run),
    )
    assert made.returncode == 1, made.stderr
    events, diff = _saved(episode)
    data = report_data(run)
    first = next(i for i, e in enumerate(data["episodes"]) if e["outcome"] != "pass")
    # This episode's rows, as the page's Python hands them to its script.
    data["episodes"][first].update(audit=_audit_rows(events), diff=_diff_rows(diff))
    page = tmp_path / "keys.html"
    page.write_text(render_report_page(data))
    out = _drive(page, _READ, tmp_path)
    audit_keys = [row[4] for row in out["audit"]]
    # Before: 1 and 1, "", 7, null, … and 9007199254740993 only because it came as text.
    assert audit_keys[: len(KEYS)] == SHOWN
    assert audit_keys[-3:] == ['(1, "2")', '(1, "x, y")', "(1, INV-17)"]
    changed = [row[1] for row in out["diff"] if row[1].startswith("changed")]
    # The rows still changed at the end, in the diff's key order. Before: the script
    # printed the number 9007199254740993 as 9007199254740992, and "1.5" as 1.5.
    expected = [terminal_key(item["key"]) for item in diff["notes"]["changed"]]
    assert changed == [f"changed {key}" for key in expected]
    assert f"changed {BIG}" in changed
    assert 'changed "1.5"' in changed
    assert "changed 1.5" in changed


# -- a run graded but not decided ------------------------------------------------------

RUN = ["remittance", "-a", "change_and_restore", "-s", "0", "-r", "1"]
RUN += ["--executor", "inprocess", "--no-progress"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("pending39") / "run"
    done = onrecord("run", *RUN, "-o", run)
    assert done.returncode == 1, done.stderr  # rejected: 4 of 33 episodes fail
    return run


@pytest.fixture
def undecided(finished: Path, tmp_path: Path) -> Path:
    """The run as a kill between report.json and decision.json leaves it."""
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    (run / "decision.json").unlink()
    return run


def test_verify_says_graded_but_not_decided(undecided: Path) -> None:
    verified = onrecord("verify", undecided, "--no-progress")
    assert verified.returncode == 0, verified.stderr  # incomplete, not a failure
    # Before: "report.json without decision.json: its grading was interrupted".
    assert (
        "graded (report.json verified: all 33 recorded episodes) but not decided: "
        "decision.json is missing, as a grading killed between the two files leaves it; "
        f"`onrecord run --resume {undecided}` writes it"
    ) in verified.stdout


def test_show_prints_the_grading_and_what_is_missing(undecided: Path) -> None:
    shown = onrecord("show", undecided, "--no-progress")
    assert shown.returncode == 0, shown.stderr
    # Before: "not graded yet (no decision.json, so no decision)", and no report table.
    assert "not graded yet" not in shown.stdout
    assert "report 33 trials" in shown.stdout
    assert "not decided: the report above (report.json, verified) grades every " in shown.stdout
    assert f"decide it: onrecord run --resume {undecided}" in shown.stdout
    assert "denial-01#0" in shown.stdout  # its episodes not passed, as graded
    # The command it names writes the decision, and the run then verifies whole.
    resumed = onrecord("run", "--resume", undecided, "--no-progress")
    assert resumed.returncode == 1, resumed.stderr
    assert (undecided / "decision.json").is_file()
    verified = onrecord("verify", undecided, "--no-progress")
    assert "not decided" not in verified.stdout
    assert "33 of 33 episodes, 0 regrades)" in verified.stdout


def test_an_edited_report_without_its_decision_fails_verification(undecided: Path) -> None:
    report = orjson.loads((undecided / "report.json").read_bytes())
    report["trials"][0]["repeat"] = 0 if report["trials"][0]["repeat"] else 1
    (undecided / "report.json").write_bytes(orjson.dumps(report))
    verified = onrecord("verify", undecided, "--no-progress")
    # Before: never read when decision.json was missing, so `verify` said ok (exit 0),
    # while `compare` and `report` read it.
    assert verified.returncode == 3, verified.stdout
    assert "report.json" in verified.stderr


def test_the_report_page_says_not_decided_and_how(undecided: Path, tmp_path: Path) -> None:
    page = write_report(undecided, tmp_path / "page.html").read_text()
    # Before: "no policy" and "run `onrecord gate`" for a run whose run.json has one.
    assert '<span class="badge indeterminate" id="decision">not decided</span>' in page
    assert "This run has no decision.json" in page
    assert "<code>onrecord run --resume</code> of the run directory writes it" in page


def earlier_grading(
    finished: Path, run: Path, tmp_path: Path, *, keep_decision: bool = False
) -> Path:
    """A copy of ``finished`` at ``run`` graded once over 20 episodes (the run was
    interrupted once), then resumed: the resume records the rest, removes the old
    decision, and is killed as it writes the new report.json, so the old one (20
    episodes) is left beside 33 records. With ``keep_decision`` the resume is killed
    after recording, before grading: the old decision.json is left too."""
    from onrecord.runner import RunStore
    from onrecord.runner._run import grade_store

    shutil.copytree(finished, run)
    records = (run / "episodes.jsonl").read_bytes()
    (run / "episodes.jsonl").write_bytes(b"".join(records.splitlines(keepends=True)[:20]))
    (run / "report.json").unlink()
    (run / "decision.json").unlink()
    grade_store(RunStore.open(run))
    if keep_decision:  # all 33 records back, as a resume killed before grading leaves them
        (run / "episodes.jsonl").write_bytes(records)
        return run
    _killed_while_held(
        tmp_path, "onrecord.report._report:atomic_write_bytes", "report.json",
        "run", "--resume", str(run), "--no-progress",
    )  # fmt: skip
    assert not (run / "decision.json").exists()
    return run


def test_a_grading_killed_before_its_report_reads_as_an_earlier_one(
    finished: Path, tmp_path: Path
) -> None:
    run = earlier_grading(finished, tmp_path / "run", tmp_path)
    verified = onrecord("verify", run, "--no-progress")
    assert verified.returncode == 0, verified.stderr
    assert (
        "not graded: report.json is an earlier grading (20 of the 33 recorded episodes) "
        "and decision.json is missing"
    ) in verified.stdout
    shown = onrecord("show", run, "--no-progress")
    assert shown.returncode == 0, shown.stderr
    assert "report 20 trials" not in shown.stdout  # never shown as the run's grading
    # Before: "no decision.json", as if report.json were not there at all.
    assert "not graded yet (report.json is an earlier grading, of fewer episodes" in shown.stdout
    assert "all 33 planned episodes recorded" in shown.stdout


POLICY = '[[requirements]]\ncheck = "expected_changes"\nmin_pass_rate = 0.5\n'
"""Met by the first 20 episodes' grading: an accept on them."""


def test_an_earlier_grading_with_its_decision_reads_as_one(finished: Path, tmp_path: Path) -> None:
    run = earlier_grading(finished, tmp_path / "run", tmp_path, keep_decision=True)
    assert (run / "decision.json").exists()
    earlier = (
        "report.json and decision.json are an earlier grading (20 of the 33 recorded "
        f"episodes), as a resume killed before grading leaves them; `onrecord run --resume {run}` "
        "grades the run"
    )
    verified = onrecord("verify", run, "--no-progress")
    assert verified.returncode == 0, verified.stderr  # genuine files, of an earlier grading
    # Before: "ok … (33 of 33 episodes, 0 regrades)", nothing said of the report.
    assert earlier in " ".join(verified.stdout.split())
    shown = onrecord("show", run, "--no-progress")
    assert shown.returncode == 0, shown.stderr
    # Before: "report 20 trials", "decision: reject (20 of 33 episodes)" and
    # "incomplete run: 20 of 33 planned episodes recorded", for 33 recorded episodes.
    assert "report 20 trials" not in shown.stdout
    assert "20 of 33 episodes" not in shown.stdout
    assert "incomplete run" not in shown.stdout
    assert "all 33 planned episodes recorded" in shown.stdout
    assert "not graded yet (report.json and decision.json are an earlier grading" in shown.stdout
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)  # met by the 20 episodes: gate accepted on them before
    refusal = (
        f"{run} is not graded: its report.json and decision.json are an earlier grading "
        "(20 of the 33 recorded episodes), as a resume killed before grading leaves them; "
        f"`onrecord run --resume {run}` grades the run"
    )
    saved = tmp_path / "gate.decision.json"
    # Before: exit 2, "the run is incomplete: 13 planned episodes have no trial
    # (hidden-01#0, …)", for 33 recorded episodes.
    for command in (("gate", run, "--policy", policy, "--output", saved), ("compare", run, run)):
        refused = onrecord(*command)
        assert refused.returncode == 3, refused.stdout
        assert refusal in " ".join(refused.stderr.split())
        assert "no trial" not in refused.stdout + refused.stderr
    assert not saved.exists()  # nothing written for a run that is not graded
