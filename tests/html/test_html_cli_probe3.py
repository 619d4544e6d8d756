"""The CLI and the HTML pages as a demanding user meets them: exit codes CI must not
misread (a closed pipe, a non-UTF-8 locale, a checks module that exits on import),
records never overwritten by an output flag, terminal output an agent cannot forge,
narrow terminals, errors that name the file, and pages that say what happened."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from rich.console import Console

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord.cli._render import literal, render_comparison
from onrecord.compare import compare_reports
from onrecord.envkit import save_episode
from onrecord.html import report_data, write_report
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.envkit import claims_env

ROOT = Path(__file__).resolve().parents[2]
ONRECORD = str(Path(sys.executable).parent / "onrecord")


def _run(
    *args: str, env: dict[str, str] | None = None, path: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    pythonpath = os.pathsep.join(str(p) for p in (ROOT, path) if p is not None)
    return subprocess.run(
        [ONRECORD, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": pythonpath, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        timeout=120,
    )


def _trial(
    case_id: str, repeat: int, statuses: dict[str, str], measures: dict[str, float] | None = None
) -> Trial:
    identity = {"case_id": case_id, "source_id": None, "content_digest": "0" * 64}
    results = tuple(CheckResult(name, "v1", status, "") for name, status in statuses.items())
    return Trial(
        identity, repeat, {"kind": "x", "digest": str(repeat)}, results, (), measures or {}
    )


def _accepting(tmp_path: Path) -> tuple[Path, Path]:
    report = tmp_path / "ok.report.json"
    EvaluationReport.from_trials([_trial("t", r, {"posted": "pass"}) for r in range(3)]).save_json(
        report
    )
    policy = tmp_path / "policy.json"
    AcceptancePolicy((CheckRequirement("posted"),)).save_json(policy)
    return report, policy


# -- exit codes CI reads -------------------------------------------------------------------


def test_every_command_starts_in_a_non_utf8_locale(tmp_path: Path) -> None:
    # report.js was read in the locale's encoding: under LC_ALL=POSIX (no UTF-8 mode)
    # every command died on import with exit 1, which CI reads as "reject".
    report, policy = _accepting(tmp_path)
    done = _run(
        "gate", str(report), "--policy", str(policy), env={"LC_ALL": "POSIX", "PYTHONUTF8": "0"}
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-800:]


def test_text_the_terminal_cannot_encode_prints_readably(tmp_path: Path) -> None:
    # onrecord's own arrow as ASCII (it printed as ``\\u2192``); it never crashed.
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    EvaluationReport.from_trials([_trial("t", 0, {"c": "pass"})]).save_json(a)
    EvaluationReport.from_trials([_trial("t", 0, {"c": "fail"})]).save_json(b)
    done = _run("compare", str(a), str(b), env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-800:]
    assert b"t#0: pass->fail" in done.stdout


def _with_closed_stdout(*args: str) -> int:
    """The exit code of a command whose stdout is a pipe nobody reads (``| head -0``)."""
    read, write = os.pipe()
    os.close(read)  # closed before the command starts: its first write gets EPIPE
    try:
        done = subprocess.run(
            [ONRECORD, *args],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=write,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )
    finally:
        os.close(write)
    return done.returncode


def test_a_closed_pipe_keeps_the_gates_decision_and_output_file(tmp_path: Path) -> None:
    # rich exits 1 on a broken pipe: an accepted report piped to head failed CI as a
    # reject, and --output (written after printing) was lost.
    report, policy = _accepting(tmp_path)
    out = tmp_path / "decision.json"
    code = _with_closed_stdout("gate", str(report), "--policy", str(policy), "--output", str(out))
    assert code == 0
    assert orjson.loads(out.read_bytes())["decision"] == "accept"
    assert _with_closed_stdout("compare", str(report), str(report)) == 0
    assert _with_closed_stdout("verify", str(report), str(policy)) == 0


@pytest.fixture
def episode_dir(tmp_path: Path) -> Path:
    with claims_env.world(claims_env.snapshot()) as world:
        world.reset(case=EvalCase("Allocate", case_id="alloc"), seed=7, run_id="r")
        world.call("allocate", {"claim_id": 17, "amount": 5.0})
        return save_episode(world, tmp_path / "episode").path


def test_a_checks_module_that_exits_on_import_is_bad_input(
    episode_dir: Path, tmp_path: Path
) -> None:
    # sys.exit(0) in an imported module ended `onrecord check` with 0: "all checks pass".
    (tmp_path / "exits_ok.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "exits_msg.py").write_text("import sys\nsys.exit('bye')\n")
    for module in ("exits_ok", "exits_msg"):
        done = _run(
            "check",
            "envkit/rejected_calls_changed_nothing",
            "--episode",
            str(episode_dir),
            "--import",
            module,
            path=tmp_path,
        )
        assert done.returncode == 3, (module, done.stdout, done.stderr)
        assert f"--import {module}".encode() in done.stderr


def test_a_check_named_twice_or_weighted_twice_is_refused(episode_dir: Path) -> None:
    name = "envkit/rejected_calls_changed_nothing"
    other = "envkit/diff_matches_expected"
    # Before: run twice and counted twice in the score ("measured weight 10 of 11").
    done = _run("check", name, name, other, "--episode", str(episode_dir))
    assert done.returncode == 3, done.stdout
    assert b"more than once" in done.stderr
    # Before: the last --weight silently won.
    done = _run(
        "check", name, other, "--episode", str(episode_dir),
        "--weight", f"{name}=5", "--weight", f"{name}=0",
    )  # fmt: skip
    assert done.returncode == 3, done.stdout
    # Before: each weight finite, their sum inf: score nan, and --json printed NaN.
    done = _run(
        "check", name, other, "--episode", str(episode_dir), "--json",
        "--weight", f"{name}=1e308", "--weight", f"{other}=1e308",
    )  # fmt: skip
    assert done.returncode == 3, done.stdout


# -- records are never overwritten -----------------------------------------------------------


def test_output_flags_never_overwrite_a_saved_record(remittance_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(remittance_run, run)
    report, decision = (run / "report.json").read_bytes(), (run / "decision.json").read_bytes()
    policy = tmp_path / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "expected_changes"\n')
    attempts = [
        ("report", str(run), "-o", str(run / "report.json")),  # meant --json
        ("report", str(run), "--json", str(run / "run.json")),
        ("compare", str(run), str(run), "--json", str(run / "report.json")),
        ("compare", str(run), str(run), "--html", str(run / "report.json")),
        ("gate", str(run / "report.json"), "--policy", str(policy),
         "--output", str(run / "decision.json")),
    ]  # fmt: skip
    for args in attempts:
        done = _run(*args)
        assert done.returncode == 3, args
        assert b"would overwrite a saved record" in done.stderr, args
    assert (run / "report.json").read_bytes() == report
    assert (run / "decision.json").read_bytes() == decision
    assert _run("verify", str(run)).returncode == 0
    # A directory as output: the message names it, not a temporary file beside it.
    done = _run("report", str(run), "-o", str(tmp_path))
    assert done.returncode == 3
    assert b".tmp" not in done.stderr
    assert f"-o/--out {tmp_path} is a directory".encode() in done.stderr
    # Writing a page again over the previous one is fine.
    assert _run("report", str(run), "-o", str(tmp_path / "r.html")).returncode == 0
    assert _run("report", str(run), "-o", str(tmp_path / "r.html")).returncode == 0


# -- errors name the file --------------------------------------------------------------------


def test_gate_names_the_file_when_report_and_policy_are_swapped(tmp_path: Path) -> None:
    report, policy = _accepting(tmp_path)
    done = _run("gate", str(policy), "--policy", str(report))
    assert done.returncode == 3
    assert f"error: {policy}: ".encode() in done.stderr
    done = _run("gate", str(report), "--policy", str(report))
    assert done.returncode == 3
    assert f"error: {report}: ".encode() in done.stderr


def test_a_mistyped_report_file_is_not_called_an_unfinished_run(tmp_path: Path) -> None:
    done = _run("report", str(tmp_path / "reprot.json"))
    assert done.returncode == 3
    assert b"no such report file" in done.stderr
    assert b"--resume" not in done.stderr


# -- terminal output ---------------------------------------------------------------------------

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@given(st.text())
@example("\\u")  # found on CI: a backslash before "u" is doubled
def test_printed_record_text_holds_no_terminal_or_bidi_controls(text: str) -> None:
    from onrecord.cli._render import plain  # new: text for plain print()

    shown = plain(text)
    assert not _CONTROLS.search(shown)
    if not _CONTROLS.search(text):
        # Unchanged, but for backslashes before a "u", doubled: "\\u0007" typed in a name
        # must print unlike the control BEL shown as an escape.
        assert shown == re.sub(r"\\+(?=u)", lambda run: run.group() * 2, text)
    out = io.StringIO()
    Console(file=out, width=400, emoji=False, highlight=False).print(literal(text), end="")
    assert "\x1b" not in out.getvalue()
    assert not set(out.getvalue()) & {
        chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
    }


def test_an_agents_escape_sequences_are_shown_not_obeyed(episode_dir: Path, tmp_path: Path) -> None:
    # "\x1b[1A\x1b[2K" moves up and erases a line: an agent's output could erase the
    # verdict printed above it; U+202E reverses the rest of the line.
    (tmp_path / "forged.py").write_text(
        "from onrecord.envkit import check\n"
        "from onrecord.episode import OutcomeVerdict\n"
        "@check('probe3/forged')\n"
        "def forged(episode):\n"
        "    return OutcomeVerdict(False, 'x\\x1b[1A\\x1b[2Kpass \\u202eliaf', {})\n"
    )
    done = _run(
        "check", "probe3/forged", "--episode", str(episode_dir), "--import", "forged",
        path=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    assert b"\x1b" not in done.stdout
    assert b"\\u001b[1A\\u001b[2Kpass \\u202eliaf" in done.stdout
    report = tmp_path / "r.json"
    EvaluationReport.from_trials(
        [_trial("case\x1b[2J\u202e", 0, {"c\x1b]0;t\x07": "fail"})]
    ).save_json(report)
    done = _run("show", str(report))
    assert done.returncode == 0
    assert b"\x1b" not in done.stdout
    assert "\u202e".encode() not in done.stdout


def _comparison() -> Any:
    name = "allocations_sum_to_line_and_more"
    # nine discordant pairs: every one is listed (beyond ten, "… N more" is meant)
    a = [_trial(f"t{i}", 0, {name: "pass"}, {"tiny": 1e-6 * i}) for i in range(9)]
    b = [_trial(f"t{i}", 0, {name: "fail"}, {"tiny": 2e-6 * i}) for i in range(9)]
    return compare_reports(EvaluationReport.from_trials(a), EvaluationReport.from_trials(b))


def test_a_narrow_terminal_wraps_names_and_numbers_rather_than_cutting_them() -> None:
    comparison = _comparison()
    out = io.StringIO()
    render_comparison(Console(file=out, width=40, emoji=False), comparison)
    text = out.getvalue()
    assert "…" not in text  # before: "al…" for the check, "0…" for p = 0.003906
    digits = "".join(re.findall(r"[\d.e+-]", text))
    assert f"{comparison.checks[0].p_value:.4g}" in digits


def test_a_small_measure_interval_is_not_printed_as_zero() -> None:
    comparison = _comparison()
    out = io.StringIO()
    render_comparison(Console(file=out, width=200, emoji=False), comparison)
    low, high = comparison.measures[0].interval
    assert 0 < low < high < 1e-4
    assert "[0.00, 0.00]" not in out.getvalue()
    assert f"[{low:+.4g}, {high:+.4g}]" in out.getvalue()


# -- HTML pages --------------------------------------------------------------------------------


def test_findings_list_failures_first_and_name_evaluator_errors(tmp_path: Path) -> None:
    trials = [
        _trial("t", r, {"a_unmeasured": "not_measured", "b_errs": "evaluator_error",
                        "c_fails": "fail"})
        for r in range(2)
    ]  # fmt: skip
    EvaluationReport.from_trials(trials).save_json(tmp_path / "r.json")
    findings = report_data(tmp_path / "r.json")["findings"]
    assert findings[0].startswith("c_fails failed in 2 of 2")
    assert "a_unmeasured was not measured in 2 episodes" in findings
    assert not any(f.startswith("b_errs was not measured") for f in findings)
    assert any(f.startswith("b_errs errored in 2 episodes") for f in findings)
    page = write_report(tmp_path / "r.json").read_text()
    row = re.search(r'<tr data-check="b_errs">(.*?)</tr>', page)
    assert row
    assert 'data-field="errors" data-value="2"' in row.group(1)


def test_compare_html_explains_an_interrupted_run_instead_of_leaving_an_old_page(
    remittance_run: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(remittance_run, run)
    (run / "report.json").unlink()
    (run / "decision.json").unlink()
    page = tmp_path / "compare.html"
    page.write_text("yesterday's comparison")
    done = _run("compare", str(remittance_run), str(run), "--html", str(page))
    assert done.returncode == 3
    text = page.read_text()
    assert "yesterday" not in text
    assert "refused" in text
    assert "no report.json" in text


def test_two_report_files_of_the_same_name_are_told_apart(tmp_path: Path) -> None:
    for name, status in (("v1", "pass"), ("v2", "fail")):
        (tmp_path / name).mkdir()
        EvaluationReport.from_trials([_trial("t", 0, {"c": status})]).save_json(
            tmp_path / name / "report.json"
        )
    page = tmp_path / "c.html"
    done = _run(
        "compare", str(tmp_path / "v1" / "report.json"), str(tmp_path / "v2" / "report.json"),
        "--html", str(page),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    embedded = re.search(r'id="onrecord-data">(.*?)</script>', page.read_text())
    assert embedded
    data = orjson.loads(embedded.group(1))
    assert data["a"]["label"] != data["b"]["label"]
    assert "v1" in data["a"]["label"]
    assert "v2" in data["b"]["label"]


def test_report_takes_a_regrade_directory_as_compare_does(
    remittance_run: Path, tmp_path: Path
) -> None:
    from onrecord.runner import regrade_run

    run = tmp_path / "run"
    shutil.copytree(remittance_run, run)
    regrade_run(run, name="v2")
    # Before: "… is not a run directory (it has no run.json); start a run with `onrecord run`".
    done = _run("report", str(run / "regrades" / "v2"), "-o", str(tmp_path / "g.html"))
    assert done.returncode == 0, done.stderr
    data = report_data(run / "regrades" / "v2")
    assert data["run"]["grading"] == "v2"
    assert data == report_data(run, grading="v2")
