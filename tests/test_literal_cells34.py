"""Record text ending in a backslash prints as the record holds it: rich's ``escape``
doubled a final backslash (so that markup after it stays markup), and every table cell
or line that ended in a case id, check name, version or reason showed "…\\\\" for
"…\\". And a check's evidence holding a long nested mapping (expected_changes' diff) is
split one level down, a row per key, rather than one JSON value cut after 160
characters. Real runs, gates and comparisons made by the real CLI in subprocesses."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from onrecord.cli._render import literal
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from tests.runner.conftest import onrecord

ONE = "odd[bold]ends\\"  # one final backslash, and markup before it
THREE = "three[/]three\\\\\\"  # three, after a closing tag that closes nothing
CASE_ONE, CASE_THREE = "case[bold]one\\", "case[/]three\\\\\\"
REASON = "reason [bold]ends\\"
TABLE = {"created": [{"id": n, "note": f"row-{n}-" + "x" * 40} for n in range(3)], "changed": []}
"""One table of a diff: 217 characters as JSON, over the 160 a value is cut at."""


def _failing(episode: EpisodeEvidence) -> OutcomeVerdict:
    evidence = {
        "diff": {"adjustments": TABLE, "allocations": TABLE},
        "small": {"a": 1, "b": [2]},
        "wide": {f"k{n:02}": "v" * 20 for n in range(14)},
        "path": "C:\\dir\\",
    }
    return OutcomeVerdict(False, REASON, evidence)


CHECKS = [
    OutcomeCheck(ONE, "v1\\", _failing),
    OutcomeCheck(THREE, "v1", lambda episode: OutcomeVerdict(True, "fine " + THREE, {})),
]
"""Checks of a FrozenLake run (``--checks tests.test_literal_cells34:CHECKS``)."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("literal")
    tasks = folder / "tasks.jsonl"
    tasks.write_bytes(
        b"".join(orjson.dumps({"case_id": c, "input": 1}) + b"\n" for c in (CASE_ONE, CASE_THREE))
    )
    done = onrecord(
        "run", "frozenlake", "-a", "walks_into_hole", "--tasks-file", str(tasks),
        "--checks", "tests.test_literal_cells34:CHECKS", "--executor", "inprocess",
        "--no-progress", "-o", str(folder / "run"),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # rejected: ONE fails
    return folder / "run"


def _ok(*args: str | Path, code: int = 0) -> str:
    done = onrecord(*map(str, args))
    assert done.returncode == code, done.stdout + done.stderr
    return done.stdout


def _cells(stdout: str, first: str) -> list[str]:
    """The cells of the table row whose first cell is ``first``."""
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.strip("│ ").split("│")]
        if cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in:\n{stdout}")


def test_show_of_a_run_prints_names_with_their_backslashes(run: Path) -> None:
    stdout = _ok("show", run, "--no-progress")
    assert _cells(stdout, ONE)[:2] == [ONE, "v1\\"]  # the report's table: was "\\\\"
    assert _cells(stdout, THREE)[1] == "v1"
    assert "  failed: " + ONE + "\n" in stdout  # the decision's line ends in the name
    # "episodes not passed": the episode and the checks it did not pass
    assert _cells(stdout, CASE_ONE + "#0")[1:] == ["fail", ONE]
    assert _cells(stdout, CASE_THREE + "#0")[1:] == ["fail", ONE]


def test_show_of_an_episode_prints_ids_reasons_and_versions_whole(run: Path) -> None:
    stdout = _ok("show", run, "--episode", CASE_ONE + "#0", "--no-progress")
    assert stdout.startswith(f"episode {CASE_ONE}#0  seed 0  ")
    assert _cells(stdout, ONE)[:4] == [ONE, "v1\\", "fail", REASON]
    assert f"episode {CASE_ONE}  env=" in stdout  # the steps' header
    assert _evidence(stdout)["path"] == "C:\\dir\\"  # a Text already: unchanged


def test_compare_and_gate_print_check_names_with_their_backslashes(
    run: Path, tmp_path: Path
) -> None:
    compared = _ok("compare", run, run)
    assert _cells(compared, ONE)[1:5] == ["0", "0", "0", "2"]
    assert _cells(compared, THREE)[1:5] == ["2", "0", "0", "0"]
    policy = tmp_path / "policy.toml"
    policy.write_text(f'name = "p"\n[[requirements]]\ncheck = {_json(ONE)}\n')
    gated = _ok("gate", run, "--policy", policy, code=1)
    assert "  failed: " + ONE + "\n" in gated
    assert _cells(gated, ONE)[:3] == [ONE, "yes", "failed"]
    assert _cells(gated, ONE)[1:4] == ["yes", "failed", "0.0% (0 of 2)"]


def _printed(markup: str) -> str:
    console = Console(width=300, emoji=False, color_system=None, file=io.StringIO())
    console.print(markup, end="", highlight=False)
    out = console.file.getvalue()
    assert isinstance(out, str)
    return out


@pytest.mark.parametrize(
    "value",
    ["a\\", "a\\\\", "a\\\\\\", "[bold]x\\", "[/]\\\\", "\\", "x\\[bold]", "re \\[0-9\\]", "\\["],
)
def test_literal_prints_backslashes_as_written_whatever_follows(value: str) -> None:
    assert _printed(literal(value)) == value  # the end of a cell or line
    assert _printed(f"{literal(value)}#0") == value + "#0"
    assert _printed(f"{literal(value)} [dim]note[/]") == value + " note"
    # markup right after it: neither swallowed (printed as text) nor crashing
    assert _printed(f"[bold]{literal(value)}[/] after") == value + " after"
    assert _printed(f"({literal(value)}[dim])[/]") == f"({value})"


def _evidence(stdout: str) -> dict[str, str]:
    """key → value of the evidence table (wrapped lines joined)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("evidence of"))
    rows: dict[str, str] = {}
    key = ""
    for line in lines[start + 4 :]:
        if not line.startswith("│"):
            break
        _, name, value = (cell.strip() for cell in line.strip("│").split("│"))
        key = name or key
        rows[key] = rows.get(key, "") + value
    return rows


def _json(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def test_a_long_nested_mapping_is_split_one_level_down(run: Path) -> None:
    rows = _evidence(_ok("show", run, "--episode", CASE_ONE + "#0", "--no-progress"))
    assert "diff" not in rows  # one value cut after 160 characters before
    for table in ("adjustments", "allocations"):  # each table on a row of its own
        assert rows[f"diff.{table}"].startswith(_json(TABLE)[:150])
        assert rows[f"diff.{table}"].endswith(f"… ({len(_json(TABLE))} characters)")
    assert rows["small"] == _json({"a": 1, "b": [2]})  # short: one row, as before
    assert [rows[f"wide.k{n:02}"] for n in range(10)] == ["v" * 20] * 10
    assert rows["wide.…"] == "… 4 more (14 keys)"


def test_full_prints_the_same_rows_each_whole(run: Path) -> None:
    rows = _evidence(_ok("show", run, "--episode", CASE_ONE + "#0", "--full", "--no-progress"))
    assert rows["diff.adjustments"] == rows["diff.allocations"] == _json(TABLE)
    assert [rows[f"wide.k{n:02}"] for n in range(14)] == ["v" * 20] * 14
    assert "wide.…" not in rows
