"""The ledger experiment on real SQLite files with the real capture_episode."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from onrecord.cli.main import main
from onrecord.domains.ledger import (
    VARIANTS,
    LedgerResult,
    analyze_ledger_dir,
    create_ledger,
    idempotent_post,
    run_ledger_experiment,
    save_ledger_result,
    unsafe_post,
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, LedgerResult]:
    out = tmp_path_factory.mktemp("ledger")
    result = run_ledger_experiment(out)
    save_ledger_result(result, out)
    return out, result


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_each_variant_gets_its_required_decision_for_both_seeds(
    saved: tuple[Path, LedgerResult], variant: object
) -> None:
    _, result = saved
    got = {
        (e.seed, e.attempt): e.decisions["full_policy"]
        for e in result.episodes
        if e.variant == variant.name
    }  # type: ignore[attr-defined]
    expected = {
        (seed, attempt + 1): decision
        for seed in (7, 8)
        for attempt, decision in enumerate(variant.expected)
    }  # type: ignore[attr-defined]
    assert got == expected


def test_native_runs_cover_terminal_failure_and_truncation(
    saved: tuple[Path, LedgerResult],
) -> None:
    _, result = saved
    assert {c["name"]: c["decision"].decision for c in result.classic} == {
        "frozenlake_goal": "accept",
        "frozenlake_hole": "reject",
        "cartpole_survives": "accept",
        "cartpole_falls": "reject",
        "cartpole_truncation_unexpected": "indeterminate",
    }


def test_ablation_shows_what_weaker_graders_accept(saved: tuple[Path, LedgerResult]) -> None:
    _, result = saved
    rows = {
        row["grader"]: (row["episodes"], row["accepted"], row["accepted_violating"])
        for row in result.ablation()
    }
    assert rows == {
        "final_answer": (14, 14, 8),
        "final_posting": (14, 8, 2),
        "full_policy": (14, 6, 0),
    }


def test_failed_attempt_keeps_its_history_after_a_passing_retry(
    saved: tuple[Path, LedgerResult],
) -> None:
    out, result = saved
    first, second = (e for e in result.episodes if e.variant == "safe_recovery" and e.seed == 7)
    assert first.decisions["full_policy"] == "indeterminate"
    assert any("env error" in issue for issue in first.evidence.coverage_issues)
    # The retry starts from the committed row of the failed attempt, and adds none.
    assert len(second.evidence.initial["state"]["postings"]) == 1
    assert len(second.evidence.final_state["postings"]) == 1
    with sqlite3.connect(out / "runs" / first.name / "ledger.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM postings").fetchone() == (1,)


def test_restored_change_is_caught_by_audit_history_not_final_state(
    saved: tuple[Path, LedgerResult],
) -> None:
    _, result = saved
    episode = next(e for e in result.episodes if e.variant == "forbidden_then_restored")
    final, initial = episode.evidence.final_state, episode.evidence.initial["state"]
    assert final["protected"] == initial["protected"]
    verdict = episode.report.trials[0].result("protected_untouched")
    assert verdict is not None
    assert verdict.status == "fail"
    assert verdict.reason == "The protected record was written 2 times and then restored"


def test_analyze_recomputes_offline_and_catches_tampering(
    saved: tuple[Path, LedgerResult], tmp_path: Path
) -> None:
    out, _ = saved
    assert analyze_ledger_dir(out).ok
    copy = tmp_path / "copy"
    import shutil

    shutil.copytree(out, copy)
    with sqlite3.connect(copy / "runs" / "correct-seed7-attempt1" / "ledger.sqlite") as db:
        db.execute("DELETE FROM postings")
    problems = analyze_ledger_dir(copy).problems
    assert problems == [
        "runs/correct-seed7-attempt1/ledger.sqlite: sha256 differs from the manifest"
    ]


def test_handlers_idempotent_versus_unsafe(tmp_path: Path) -> None:
    counts = []
    for handler in (idempotent_post, unsafe_post):
        path = create_ledger(tmp_path / f"{handler.__name__}.sqlite", seed=7)
        with sqlite3.connect(path) as db:
            invoice = db.execute("SELECT invoice_id FROM invoices").fetchone()[0]
            handler(db, invoice)
            handler(db, invoice)
            counts.append(db.execute("SELECT COUNT(*) FROM postings").fetchone()[0])
    assert counts == [1, 2]


def test_cli_run_and_analyze(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ledger-outcomes"
    assert main(["ledger", "run", "--output-dir", str(out)]) == 0
    assert main(["ledger", "analyze", str(out)]) == 0
    assert "23 decisions recomputed, verified" in capsys.readouterr().out
    (out / "summary.json").write_text("{}")
    assert main(["ledger", "analyze", str(out)]) == 3
    assert main(["ledger", "run", "--output-dir", str(out)]) == 3  # not empty: refused
