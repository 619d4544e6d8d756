"""Hostile input to what was added today: a saved decision's incomplete-run reason, a
run's ``errors.jsonl`` and ``episodes.jsonl``, and a refused gate's CI files.

* ``verify`` parses the incomplete-run reason of a decision beside a copied report:
  a 5,000-digit count was a ValueError (int() refuses over 4,300 digits) reported as a
  "malformed record"; "١" (Arabic-Indic one, which ``\\d`` matches and int() reads as
  1) passed as gate's; a case id holding ", " made an honest reason fail to parse.
* Beside a run's own report, the saved cause of the missing episodes was taken as
  saved whatever it said ("7 timed out, 3 were waived by me" for one episode).
* A line of ``errors.jsonl`` nested thousands deep crashed ``show``, ``gate`` and
  ``verify`` with a RecursionError traceback; the file was read whole.
* ``run --resume`` counted ``episodes.jsonl``'s lines by reading the whole file.
"""

from __future__ import annotations

import json
import shutil
import tracemalloc
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from onrecord._canonical import content_digest, record_bytes
from onrecord.cli._gate_decided import _parsed
from onrecord.cli._gate_refused import refused_junit, refused_markdown
from onrecord.cli._partial import NEVER_ACCEPTED, missing_why, partial_decision, why_of_errors
from onrecord.policy import INCOMPLETE_RUN, PolicyDecision
from onrecord.report import EvaluationReport
from onrecord.runner import RunStore
from onrecord.runner._resumable import _remaining
from tests.cli_process import onrecord
from tests.sleeping_agent import write_sleeping_agent

POLICY = '[[requirements]]\ncheck = "expected_changes"\n'


def _reason(text: str) -> str:
    return f"{INCOMPLETE_RUN}{text}; {NEVER_ACCEPTED}"


def _decision() -> PolicyDecision:
    return PolicyDecision(
        decision="accept",
        outcomes=(),
        reasons=(),
        coverage_issues=(),
        report_digest="0" * 64,
        policy_digest="0" * 64,
    )


# --- the incomplete-run reason, as parsed -------------------------------------------


def _splits_plainly(case_id: str) -> bool:
    """A case id whose ", "-pieces (but the last) do not end in ``#N``: gate's list of
    episodes is then read back as it was written."""
    pieces = case_id.split(", ")[:-1]
    return not any(p.rpartition("#")[2].isdigit() and "#" in p for p in pieces)


_CASE_IDS = st.text(min_size=1, max_size=20).filter(_splits_plainly)
_ERRORS = st.text(max_size=30) | st.sampled_from(
    ["timed out: after 2 s", "the worker process died", "KeyError: 'x'", "boom"]
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    st.lists(st.tuples(_CASE_IDS, st.integers(0, 10**6)), min_size=1, max_size=12, unique=True),
    st.lists(_ERRORS, max_size=12),
)
def test_every_honest_reason_parses_back(
    episodes: list[tuple[str, int]], errors: list[str]
) -> None:
    names = [f"{case}#{repeat}" for case, repeat in episodes]
    assume(len(set(names)) == len(names))
    why = why_of_errors(errors[: len(names)])  # at most one error per missing episode
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    made = partial_decision(_decision(), len(names), shown, why)  # as `gate` writes it
    assert _parsed(made.reasons[-1]) == (len(names), names[:5])


@given(st.text(max_size=300))
def test_any_text_parses_or_is_none(text: str) -> None:
    for reason in (text, _reason(text), _reason(f"1 planned episodes have no trial{text}")):
        parsed = _parsed(reason)
        assert parsed is None or (parsed[0] >= 1 and parsed[1])


@pytest.mark.parametrize(
    "text",
    [
        "9" * 5000 + " planned episodes have no trial (a#0)",
        "1 planned episodes have no trial: " + "9" * 5000 + " timed out (a#0)",
        "6 planned episodes have no trial (a#0, a#1, a#2, a#3, a#4 and " + "9" * 5000 + " more)",
        "\u0661 planned episodes have no trial (a#0)",  # Arabic-Indic one
        "1 planned episodes have no trial: \uff11 timed out (a#0)",  # fullwidth one
        "01 planned episodes have no trial (a#0)",
        "1 planned episodes have no trial (a)",  # not an episode
    ],
)
def test_a_count_gate_never_writes_is_not_its_reason(text: str) -> None:
    assert _parsed(_reason(text)) is None


def test_a_case_id_holding_a_comma_is_read_back() -> None:
    reason = _reason("2 planned episodes have no trial: 2 timed out (a, b#0, c#1)")
    assert _parsed(reason) == (2, ["a, b#0", "c#1"])


# --- real runs ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of full-01 with seeds 0 and 1 whose seed-1 episode timed out, with
    ``policy.toml`` beside it."""
    root = tmp_path_factory.mktemp("hostile53")
    write_sleeping_agent(root / "mine", "agent53x", seeds=(1,))
    (root / "policy.toml").write_text(POLICY)
    run = root / "run"
    done = onrecord(
        *("run", "remittance", "--agent", "agent53x:make", "--tasks", "full-01"),
        *("--seeds", "0-1", "--episode-timeout", "2", "--no-progress"),
        *("--policy", root / "policy.toml", "--out", run),
        pythonpath=root / "mine",
        timeout=180,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    return run


def _copy(run: Path, folder: Path) -> Path:
    shutil.copytree(run, folder)
    shutil.copy(run.parent / "policy.toml", folder / "policy.toml")
    return folder


def _gated(folder: Path, report: Path, output: Path) -> Path:
    """gate's decision on ``folder`` saved at ``output``, beside ``report``'s copy and
    the policy."""
    output.parent.mkdir(parents=True, exist_ok=True)
    if report.parent != folder:
        shutil.copy(folder / "report.json", report)
        shutil.copy(folder / "policy.toml", output.parent / "policy.toml")
    done = onrecord("gate", folder, "--policy", folder / "policy.toml", "--output", output)
    assert done.returncode == 2, done.stdout + done.stderr
    return output


def _resealed(path: Path, edit: Callable[[str], str]) -> None:
    data: dict[str, Any] = json.loads(path.read_text())
    data.pop("digest")
    data["reasons"][-1] = edit(data["reasons"][-1])
    path.write_bytes(record_bytes({**data, "digest": content_digest(data)}))


def _verify(path: Path) -> tuple[int, str]:
    done = onrecord("verify", path, "--no-progress")
    return done.returncode, " ".join((done.stdout + done.stderr).split())


def test_a_forged_cause_beside_the_runs_report_is_refused(partial: Path, tmp_path: Path) -> None:
    folder = _copy(partial, tmp_path / "run")
    saved = _gated(folder, folder / "report.json", folder / "gated.json")
    assert _verify(saved)[0] == 0
    _resealed(saved, lambda reason: reason.replace("1 timed out", "7 timed out, 3 waived"))
    code, out = _verify(saved)
    assert code == 3, out
    assert "changed after it was decided" in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("count", "why"), [("9" * 5000, "4,300"), ("\u0661", "Arabic")], ids=["huge", "unicode"]
)
def test_a_forged_count_beside_a_copied_report_is_refused(
    partial: Path, tmp_path: Path, count: str, why: str
) -> None:
    folder = _copy(partial, tmp_path / "run")
    saved = _gated(folder, tmp_path / "ci/report.json", tmp_path / "ci/decision.json")
    code, out = _verify(saved)
    assert code == 0, out
    _resealed(saved, lambda reason: reason.replace("1 planned", f"{count} planned"))
    code, out = _verify(saved)
    assert code == 3, (why, out)
    assert "not the incomplete-run reason `onrecord gate` writes" in out, (why, out)


def test_a_deeply_nested_error_line_is_not_a_crash(partial: Path, tmp_path: Path) -> None:
    folder = _copy(partial, tmp_path / "run")
    saved = _gated(folder, folder / "report.json", folder / "gated.json")
    with (folder / "errors.jsonl").open("ab") as handle:
        handle.write(b"[" * 100_000 + b"\n" + b"\xff\xfe{\n" + b"[1, 2]\n" + b"7\n")
    for args, code in (
        (("show", folder), 0),
        (("gate", folder, "--policy", folder / "policy.toml"), 2),
        (("verify", saved, "--no-progress"), 0),
    ):
        done = onrecord(*args)
        out = done.stdout + done.stderr
        assert "Traceback" not in out
        assert done.returncode == code, out
        # The honest line before the junk still says what stopped the episode.
        assert "1 planned episodes have no trial: 1 timed out" in out or args[0] == "verify"


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=60) | st.from_type(type(None)).map(lambda _: b"[" * 5000)))
def test_any_errors_file_says_something_or_nothing(
    partial: Path, tmp_path_factory: pytest.TempPathFactory, lines: list[bytes]
) -> None:
    folder = tmp_path_factory.getbasetemp() / "errors53"
    if not folder.exists():
        _copy(partial, folder)
    (folder / "errors.jsonl").write_bytes(b"\n".join(lines))
    report = EvaluationReport.load(folder / "report.json")
    why = missing_why(RunStore.open(folder), report)
    assert isinstance(why, str)


def _peak(work: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


_BIG = 48 << 20  # bytes of filler: read whole, the peak is at least this


def test_a_huge_errors_file_is_read_line_by_line(partial: Path, tmp_path: Path) -> None:
    folder = _copy(partial, tmp_path / "run")
    line = json.dumps({"case_id": "other", "repeat": 0, "error": "x" * 900}).encode() + b"\n"
    with (folder / "errors.jsonl").open("ab") as handle:
        handle.write(line * (_BIG // len(line)))
    store, report = RunStore.open(folder), EvaluationReport.load(folder / "report.json")
    assert missing_why(store, report) == "1 timed out"
    assert _peak(lambda: missing_why(store, report)) < _BIG // 4


def test_resume_counts_a_huge_episodes_file_in_blocks(partial: Path, tmp_path: Path) -> None:
    folder = _copy(partial, tmp_path / "run")
    store = RunStore.open(folder)
    assert _remaining(store)
    with (folder / "episodes.jsonl").open("ab") as handle:
        handle.write(b"x" * _BIG)  # one long line: still one episode short
    assert _remaining(store)
    assert _peak(lambda: _remaining(store)) < _BIG // 4
    (folder / "episodes.jsonl").write_bytes(b"{}\n{}\n")
    assert not _remaining(store)


def test_resume_refuses_a_linked_episodes_file(partial: Path, tmp_path: Path) -> None:
    folder = _copy(partial, tmp_path / "run")
    (tmp_path / "elsewhere.jsonl").write_bytes((folder / "episodes.jsonl").read_bytes())
    (folder / "episodes.jsonl").unlink()
    (folder / "episodes.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    done = onrecord("run", "--resume", folder, "--no-progress")
    out = done.stdout + done.stderr
    assert "Traceback" not in out
    assert done.returncode == 3, out
    assert "episodes.jsonl" in out


# --- a refused gate's CI files ------------------------------------------------------


_HOSTILE = st.lists(
    st.text(st.characters(codec="utf-8"), max_size=8)
    | st.sampled_from(["`", "```", "|", "\n", "\r", "# ", "<script>", "]]>", "\x00", "\x0b"])
    | st.just("`onrecord run --resume x`"),
    max_size=12,
).map("".join)


@given(_HOSTILE, _HOSTILE, _HOSTILE)
def test_a_refused_gates_files_hold_any_message(message: str, report: str, policy: str) -> None:
    root = ET.fromstring(refused_junit(message, report=report, policy=policy))
    assert root.find("testsuite/testcase/error") is not None
    lines = refused_markdown(message, report=report, policy=policy).split("\n")
    assert lines[0] == "### ⛔ onrecord gate: refused (exit 3)"
    fences = [index for index, line in enumerate(lines) if line.startswith("```")]
    assert len(fences) in (0, 2)
    inside = set(range(fences[0] + 1, fences[1])) if fences else set()
    for index, line in enumerate(lines[1:-2], 1):  # the last: "<sub>onrecord 0.1</sub>"
        if index in inside:
            assert "`" not in line
            assert "\r" not in line
        elif index not in fences:
            assert not line.lstrip().startswith(("#", "```", "~~~", "<")), line


def test_compare_counts_an_interrupted_runs_huge_episodes_file_in_blocks(
    partial: Path, tmp_path: Path
) -> None:
    from onrecord.compare import load_source
    from onrecord.errors import InputError

    folder = _copy(partial, tmp_path / "run")
    (folder / "report.json").unlink()  # interrupted before its grading
    (folder / "decision.json").unlink(missing_ok=True)
    with (folder / "episodes.jsonl").open("ab") as handle:
        handle.write(b"x" * _BIG + b"\n")  # one more line, counted as recorded

    def refused() -> str:
        with pytest.raises(InputError) as caught:
            load_source(folder)
        return str(caught.value)

    assert "interrupted with 2 of 2 planned episodes recorded" in refused()
    assert _peak(refused) < _BIG // 4
