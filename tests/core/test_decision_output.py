"""What `onrecord run` and `gate` print about a decision in a CI log: each requirement's
measured pass rate and threshold (it printed only counts), then every reason as a line of
its own (greppable, never wrapped inside a table cell)."""

from __future__ import annotations

from pathlib import Path

from tests.cli_process import onrecord


def test_run_and_gate_show_pass_rates_thresholds_and_whole_reasons(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = onrecord("run", "frozenlake", "-a", "walks_into_hole", "-r", "3", "--out", run)
    assert done.returncode == 1, done.stderr
    policy = tmp_path / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "reached_goal"\nmin_pass_rate = 0.5\n')
    gated = onrecord("gate", run, "--policy", policy)
    assert gated.returncode == 1, gated.stderr
    for out, threshold in ((done.stdout, "≥ 100.0%"), (gated.stdout, "≥ 50.0%")):
        assert "pass rate" in out
        assert "threshold" in out
        assert "0.0% (0 of 3)" in out
        assert threshold in out
        reasons = [line for line in out.splitlines() if line.startswith("  - ")]
        assert any("'reached_goal'" in line and "needs pass rate" in line for line in reasons), out
