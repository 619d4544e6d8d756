"""`onrecord verify` and `onrecord show` on every kind of record onrecord writes, and on
hostile text: records are verified whole, errors name the file (and line) and exit 3,
and text from a record is printed as written, never as rich markup or emoji."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import gymnasium as gym
import orjson
import pytest

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord._canonical import content_digest, record_bytes
from onrecord.dynamics import save_forecasts
from onrecord.dynamics.experiment._store import write_manifest
from onrecord.envkit import save_episode
from onrecord.episode import OutcomeCheck, OutcomeVerdict, evaluate_episode
from onrecord.integrations.gymnasium import capture_episode
from onrecord.report import EvaluationReport
from onrecord.runner import regrade_run
from tests.dynamics.test_capture import capture, persistence, seed_reference
from tests.envkit import claims_env
from tests.runner.test_regrade import _lake_run
from tests.warm_client import run_onrecord

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "[/]case[red] :warning: ünï 💥"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return run_onrecord(list(args), env=env, cwd=ROOT, timeout=120)


def _hostile_records(tmp_path: Path) -> dict[str, Path]:
    def interact(env: Any, observation: Any, info: Any) -> str:
        env.step(0)
        return "[/]done"

    episode = capture_episode(
        lambda: gym.make("FrozenLake-v1"),
        interact,
        case=EvalCase("[bold]hi[/]", case_id=HOSTILE),
        environment_id="[/]env",
        observer_id="[bold]obs",
        observe=lambda: {"s": "[/]"},
        seed=0,
        max_steps=5,
    )
    check = OutcomeCheck("[/]chk", "[bold]v1", lambda e: OutcomeVerdict(False, "[/] bad", {}))
    paths = {name: tmp_path / f"{name}.json" for name in ("episode", "report", "policy")}
    paths["episode"].write_bytes(record_bytes(episode.data))
    evaluate_episode(episode, [check]).save_json(paths["report"])
    AcceptancePolicy((CheckRequirement("[/]chk"),), name="[/]pol").save_json(paths["policy"])
    return paths


def test_show_prints_markup_and_emoji_codes_in_records_literally(tmp_path: Path) -> None:
    paths = _hostile_records(tmp_path)
    shown = {name: cli("show", str(path)) for name, path in paths.items()}
    for name, done in shown.items():  # before: rich.errors.MarkupError, exit 1
        assert done.returncode == 0, f"{name}: {done.stderr}"
    assert f"episode {HOSTILE}  env=[/]env  observer=[bold]obs" in shown["episode"].stdout
    assert "│ [/]chk │ [bold]v1 │" in shown["report"].stdout
    assert f"coverage: {HOSTILE}#0" in shown["report"].stdout
    assert "policy [/]pol" in shown["policy"].stdout


def test_show_a_report_of_zero_trials(tmp_path: Path) -> None:
    EvaluationReport.from_trials([]).save_json(tmp_path / "zero.json")
    done = cli("show", str(tmp_path / "zero.json"))
    assert done.returncode == 0, done.stderr
    assert "report 0 trials  pass rate n/a" in done.stdout


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "run"
    _lake_run(path)
    regrade_run(path, ["tests.runner.helpers:SHORT_V2"], name="v2")
    return path


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("", "run directory (2 of 2 episodes, 1 regrade)"),
        ("run.json", "run directory"),
        ("episodes.jsonl", "run directory"),
        ("decision.json", "run decision (accept, 2 of 2 episodes)"),
        ("regrades/v2", "regrade directory (2 changed verdicts)"),
        ("regrades/v2/changes.json", "regrade directory"),
    ],
)
def test_verify_reads_run_and_regrade_directories(run_dir: Path, name: str, kind: str) -> None:
    done = cli("verify", str(run_dir / name))
    # Before: "is a directory" / "unknown schema" / "not valid JSON", exit 3.
    assert done.returncode == 0, done.stderr
    assert f"  {kind}" in done.stdout


def test_show_a_regrade_directory_lists_its_changes(run_dir: Path) -> None:
    done = cli("show", str(run_dir / "regrades" / "v2"))
    assert done.returncode == 0, done.stderr
    assert "frozenlake/goal#0 short: pass → fail" in done.stdout
    assert "decision: reject  (2 of 2 episodes)" in done.stdout


def test_verify_refuses_a_tampered_run_directory_naming_the_file(
    run_dir: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(run_dir), str(copy)], check=True)
    decision = copy / "regrades" / "v2" / "decision.json"
    data = orjson.loads(decision.read_bytes())
    data["decision"]["decision"] = "accept"
    decision.write_bytes(record_bytes(data))
    done = cli("verify", str(copy))
    assert done.returncode == 3
    assert f"{decision} does not match its digest" in done.stderr


def test_verify_a_saved_tool_world_episode_directory(tmp_path: Path) -> None:
    with claims_env.world(claims_env.snapshot()) as world:
        world.reset(case=EvalCase("Allocate", case_id="alloc"), seed=7, run_id="r")
        world.call("allocate", {"claim_id": 17, "amount": 5.0})
        episode = save_episode(world, tmp_path / "ep")
    done = cli("verify", str(episode.path), str(episode.path / "manifest.json"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(f"tool-world episode (1 steps)  sha256:{episode.digest}") == 2
    (episode.path / "diff.json").write_bytes(b"{}\n")
    done = cli("verify", str(episode.path))
    assert done.returncode == 3
    assert "diff.json does not match the sha256 in its manifest" in done.stderr


def test_verify_a_forecast_jsonl_file_and_name_its_bad_line(tmp_path: Path) -> None:
    forecasts = [capture(seed_reference(seed=seed), persistence) for seed in (1, 2, 3)]
    path = save_forecasts(tmp_path / "forecasts.jsonl", forecasts)
    done = cli("verify", str(path))
    # Before: "not valid JSON (unexpected content after document)", exit 3.
    assert done.returncode == 0, done.stderr
    assert "ForecastEvidence lines (3 records)" in done.stdout
    shown = cli("show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("cartpole:") == 3
    lines = path.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[1])
    record["model_id"] = "other/v1"
    path.write_bytes(lines[0] + record_bytes(record) + lines[2])
    done = cli("verify", str(path))
    assert done.returncode == 3
    assert f"{path}: line 2: forecast digest is" in done.stderr


def test_verify_a_world_model_style_output_directory(tmp_path: Path) -> None:
    out = tmp_path / "wm"
    (out / "data").mkdir(parents=True)
    (out / "data" / "a.json").write_bytes(b"{}\n")
    write_manifest(out)
    done = cli("verify", str(out))
    assert done.returncode == 0, done.stderr
    assert "world-model output (1 files)" in done.stdout
    (out / "data" / "a.json").write_bytes(b"[]\n")
    done = cli("verify", str(out))
    assert done.returncode == 3
    assert "data/a.json does not match its sha256" in done.stderr


def _resealed(path: Path, target: Path, edit: Any) -> Path:
    data = orjson.loads(path.read_bytes())
    edit(data)
    data["digest"] = content_digest(data)
    target.write_bytes(record_bytes(data))
    return target


def test_digest_consistent_garbage_is_refused_naming_the_file(tmp_path: Path) -> None:
    paths = _hostile_records(tmp_path)
    report = _resealed(paths["report"], tmp_path / "r.json", lambda d: d.update(trials="x"))
    policy = _resealed(
        paths["policy"], tmp_path / "p.json", lambda d: d.update(requirements=[{"check": 1}])
    )
    for path in (report, policy):
        done = cli("verify", str(path))
        assert done.returncode == 3, done.stdout + done.stderr
        assert done.stderr.startswith(f"onrecord verify: error: {path}: "), done.stderr


@pytest.mark.parametrize(
    "content", [b"", b"{", b"\x00\xff\xfe junk", b"[1, 2]\n", b'{"schema": "x"}\n']
)
def test_verify_bad_files_exit_3_without_a_traceback(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    done = cli("verify", str(path))
    assert done.returncode == 3
    assert "Traceback" not in done.stderr
    assert str(path) in done.stderr


def test_an_os_error_without_a_file_is_not_called_a_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: "onrecord verify: error: a file: Connection refused".
    import onrecord.cli.verify as verify
    from onrecord.cli.main import main

    def refused(args: object) -> int:
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(verify, "run", refused)
    assert main(["verify", "x.json"]) == 3
    err = capsys.readouterr().err
    assert "ConnectionRefusedError: Connection refused" in err
    assert "a file" not in err
