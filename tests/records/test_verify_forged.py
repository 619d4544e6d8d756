"""What `onrecord verify` checks beyond a digest, and what it says about files that are
not records: a record re-sealed after an edit (its digest recomputed) still fails when
what it says no longer follows from its own numbers or the files beside it; a foreign
file, an HTML page or its data is refused saying what it is."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.html import write_report
from tests.cli_process import onrecord


@pytest.fixture
def copy(written: dict[str, Path], tmp_path: Path) -> Callable[[str], Path]:
    """A copy of everything written; returns the copy of a kind's path."""
    root = written["report"].parent
    shutil.copytree(root, tmp_path / "copy", symlinks=True)
    return lambda kind: tmp_path / "copy" / written[kind].relative_to(root)


def _reseal(path: Path, edit: Callable[[dict[str, Any]], None], line: int = 0) -> None:
    """Edit a record (a line of JSON Lines) and recompute its digest, as a forger would."""
    lines = path.read_bytes().splitlines()
    data = orjson.loads(lines[line])
    edit(data)
    data["digest"] = content_digest(data)
    lines[line] = record_bytes(data).rstrip(b"\n")
    path.write_bytes(b"\n".join(lines) + b"\n")


def _refused(path: Path, *expected: str) -> str:
    done = onrecord("verify", str(path))
    assert done.returncode == 3, (done.stdout, done.stderr)
    for text in expected:
        assert text in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


def _flip(data: dict[str, Any]) -> None:
    data["decision"] = "accept" if data["decision"] != "accept" else "reject"


@pytest.mark.parametrize("kind", ["gate decision", "ledger decision", "remittance decision"])
def test_a_resealed_verdict_contradicts_its_requirements(
    copy: Callable[[str], Path], kind: str
) -> None:
    path = copy(kind)
    _reseal(path, _flip)
    _refused(path, str(path), "its requirements' statuses and coverage issues make it")


def test_a_run_decision_resealed_with_another_verdict(copy: Callable[[str], Path]) -> None:
    path = copy("run decision")
    _reseal(path, lambda data: _flip(data["decision"]))
    _refused(path, str(path), "make it 'reject'")


def test_a_decision_resealed_with_other_counts_is_not_what_its_policy_decides(
    copy: Callable[[str], Path],
) -> None:
    path = copy("remittance decision")
    # One more pass, not fewer: fewer passes than cases is refused before any policy.
    _reseal(path, lambda data: data["requirements"][0].update(passed=3))
    _refused(path, f"{path} is not what", "policy.json decides for", "careful.report.json")


def test_a_decision_beside_another_report(copy: Callable[[str], Path]) -> None:
    path = copy("ledger decision")
    other = orjson.loads(copy("report").read_bytes())["digest"]

    def retarget(data: dict[str, Any]) -> None:
        data["report_digest"] = other

    _reseal(path, retarget)
    _refused(path, "decides a report other than the report.json beside it")


def test_a_comparison_resealed_with_another_p_value(copy: Callable[[str], Path]) -> None:
    path = copy("comparison")
    _reseal(path, lambda data: data["checks"][0].update(p_value=0.01))
    _refused(path, str(path), "has p = 0.01, but its discordant counts (0, 0) give 1.0")
    _reseal(path, lambda data: data["checks"][0].update(both_pass=7, p_value=1.0))
    _refused(path, "counts do not add up to 2 pairs")


def test_summaries_resealed_with_another_decision(copy: Callable[[str], Path]) -> None:
    ledger = copy("ledger summary")
    _reseal(ledger, lambda data: data["episodes"][0]["decisions"].update(full_policy="reject"))
    _refused(ledger, f"{ledger} says 'reject' where", "decision.json says 'accept'")
    suite = copy("remittance summary")
    _reseal(suite, lambda data: data["agents"]["careful"].update(decision="reject"))
    _refused(suite, "careful.decision.json says 'accept'")


def test_closed_loop_records_must_reference_their_episodes(copy: Callable[[str], Path]) -> None:
    path = copy("wm closed loop")
    _reseal(path, lambda data: data.update(seed=99), line=1)
    _refused(path, f"{path}: line 2 (seed 99) references an episode run with seed 1")
    _reseal(path, lambda data: data.update(episode="e" * 64), line=1)
    _refused(path, "references episode eeeeeeeeeeee, which is not in the run")
    _reseal(path, lambda data: data.update(predicted_returns="many"), line=0)
    _refused(path, "line 1: a closed-loop record has exactly the fields")


def test_a_file_added_to_an_experiment_directory(copy: Callable[[str], Path]) -> None:
    added = copy("wm tables").with_name("notes.json")
    added.write_bytes(copy("wm tables").read_bytes())
    _refused(added, f"{added} is not listed in", "it was added after the run")


def test_files_without_a_digest_need_their_directory(
    copy: Callable[[str], Path], tmp_path: Path
) -> None:
    for kind, text in (
        ("wm protocol", "a world-model protocol carries no digest of its own"),
        ("wm tables", "JSON without an onrecord schema"),
        ("ledger database", "a SQLite database, not a record"),
    ):
        alone = tmp_path / kind.replace(" ", "-") / copy(kind).name
        alone.parent.mkdir()
        shutil.copy(copy(kind), alone)
        _refused(alone, str(alone), text)
    log = tmp_path / "actions.jsonl"
    shutil.copy(copy("tool-world episode") / "actions.jsonl", log)
    _refused(log, "an action log, not a record")


def test_files_that_are_not_records(written: dict[str, Path], tmp_path: Path) -> None:
    foreign = {
        "edited.json": b'{"a": 1}\n',
        "object.json": b'{"a":1}\n',
        "list.json": b"[1,2]\n",
        "other.json": b'{"digest":"x","schema":"someone.else/v1"}\n',
        "text.txt": b"hello\n",
        "empty.json": b"",
    }
    for name, raw in foreign.items():
        (tmp_path / name).write_bytes(raw)
        stderr = _refused(tmp_path / name, str(tmp_path / name), "onrecord verify reads")
        assert "restore" not in stderr  # before: "edited after saving; restore the original"
    _refused(tmp_path / "other.json", "unknown schema 'someone.else/v1'")
    page = write_report(
        written["run directory"], tmp_path / "page.html", data_json=tmp_path / "d.json"
    )
    _refused(page, "an onrecord HTML page, a view of a run or report, not a record")
    _refused(tmp_path / "d.json", "the data of an onrecord HTML page (`--json`), not a record")


def test_gate_and_compare_outputs_are_made_again_not_protected(
    written: dict[str, Path], tmp_path: Path
) -> None:
    # They now carry a digest; running the command again still replaces them.
    report, policy = str(written["report"]), str(written["policy"])
    out = tmp_path / "gate.json"
    for _ in range(2):
        assert onrecord("gate", report, "--policy", policy, "--output", str(out)).returncode == 0
        assert (
            onrecord("compare", report, report, "--json", str(tmp_path / "c.json")).returncode == 0
        )
    assert onrecord("verify", str(out), str(tmp_path / "c.json")).returncode == 0
    # Other records stay protected from output options.
    ledger = tmp_path / "decision.json"
    shutil.copy(written["ledger decision"], ledger)
    done = onrecord("gate", report, "--policy", policy, "--output", str(ledger))
    assert done.returncode == 3
    assert "would overwrite a saved record" in done.stderr


def test_no_output_option_writes_into_a_directory_its_manifest_pins(
    copy: Callable[[str], Path],
) -> None:
    # Before: `compare --json`, `--html` and `gate --output` added a file to a worldmodel
    # or ledger output directory, which then failed verification ("added ['c.json']").
    report, policy = str(copy("report")), str(copy("policy"))
    for directory in (copy("wm directory"), copy("ledger directory") / "runs"):
        for command in (
            ("compare", report, report, "--json", str(directory / "c.json")),
            ("compare", report, report, "--html", str(directory / "c.html")),
            ("gate", report, "--policy", policy, "--output", str(directory / "g.json")),
        ):
            done = onrecord(*command)
            assert done.returncode == 3, (command, done.stdout, done.stderr)
            assert "whose manifest.json lists every file it holds" in done.stderr
    assert (
        onrecord("verify", str(copy("wm directory")), str(copy("ledger directory"))).returncode == 0
    )


def test_a_gate_decision_of_a_partial_run_verifies(tmp_path: Path) -> None:
    # `gate` turns an accept of an incomplete run into indeterminate, with a reason: the
    # verdict no longer follows from the requirements alone, and still verifies.
    from tests.html.test_browser_probe import _partial_lake

    _partial_lake(tmp_path / "lake")
    policy = tmp_path / "lenient.toml"
    policy.write_text('[[requirements]]\ncheck = "*"\nmin_pass_rate = 0.01\ncritical = false\n')
    out = tmp_path / "gate.json"
    done = onrecord("gate", str(tmp_path / "lake"), "--policy", str(policy), "--output", str(out))
    assert done.returncode == 2, done.stderr
    done = onrecord("verify", str(out))
    assert done.returncode == 0, done.stderr
    assert (
        "policy decision (indeterminate, 1 requirement; not decided again: that needs the "
        "report it decides as report.json beside it and its policy as policy.json or "
        "policy.toml beside it or up to two folders up, so only its digest, and its statuses "
        "and verdict against its own counts, were checked)"
    ) in done.stdout
    _reseal(out, lambda data: data["reasons"].append("the run is incomplete: twice"))
    _refused(out, "make it 'accept'")
