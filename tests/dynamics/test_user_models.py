"""``onrecord worldmodel run --model MODULE:FACTORY``: a researcher's own model through the
whole experiment, through the real command line and real CartPole.

One smoke run (shared by the tests of this module) holds the docs' ``LinearDelta``
(written from docs/world-models.md into a module of its own), a model whose predict
raises and one whose fit raises; its modules are deleted before the replay.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import onrecord

DOCS = Path(__file__).resolve().parents[2] / "docs" / "world-models.md"

# Models that fail in the run (never before it): the run completes for the others.
FAILING = """
import numpy as np
from my_models import LinearDelta


class RaisingPredict(LinearDelta):
    model_id = "raising_predict/v1"  # an "_": its other-environment files must map back

    def predict(self, initial_states, actions, *, uncertainty=True):
        raise RuntimeError("predict is broken")


class FailingFit(LinearDelta):
    model_id = "failing-fit/v1"

    def fit(self, transitions):
        raise ValueError("singular matrix")


def failing_fit(simulator):
    return FailingFit(simulator) if simulator.env_id == "CartPole-v1" else None
"""

# Factories refused before anything is written.
REFUSED = """
from my_models import LinearDelta

NOT_CALLABLE = 3


def raises(simulator):
    raise ValueError("no GPU here")


def not_a_model(simulator):
    return object()


def none(simulator):
    return None


def builtin_id(simulator):
    model = LinearDelta(simulator)
    model.model_id = "bayes-linear/v1"
    return model


def named(model_id):
    def factory(simulator):
        model = LinearDelta(simulator)
        model.model_id = model_id
        return model

    return factory


file_a, file_b = named("my_model/v1"), named("my/model_v1")  # both files are my_model_v1
upper = named("MY_model/v1")  # my_model_v1 too, on a case-insensitive file system


def bad_id(simulator):
    model = LinearDelta(simulator)
    model.model_id = "../escape"
    return model
"""


def _docs_block(start: str, language: str = "python") -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(), flags=re.S)
    found = [block for block in blocks if start in block]
    assert len(found) == 1, start
    return found[0]


def _modules(folder: Path) -> Path:
    folder.mkdir()
    (folder / "my_models.py").write_text(_docs_block("# my_models.py"))
    (folder / "failing_models.py").write_text(FAILING)
    (folder / "refused_models.py").write_text(REFUSED)
    return folder


def _docs_commands(folder: Path, output: Path) -> list[tuple[dict[str, str], list[str]]]:
    """The docs' bash lines as (environment, onrecord arguments), run from ``folder``."""
    commands = []
    for line in _docs_block("--model my_models:LinearDelta", "bash").splitlines():
        words = shlex.split(line.replace("/tmp/wm-mine", str(output)), comments=True)
        env = dict(word.split("=", 1) for word in words[: words.index("onrecord")])
        env = {k: str(folder / v) if v == "." else v for k, v in env.items()}
        commands.append((env, words[words.index("onrecord") + 1 :]))
    return commands


@pytest.fixture(scope="module")
def user_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("user-models")
    folder, run_dir = _modules(base / "modules"), base / "run"
    (run_env, run_args), (replay_env, replay_args) = _docs_commands(folder, run_dir)
    assert replay_env == {}  # the replay needs no PYTHONPATH: it imports nothing
    extra = ["--model", "failing_models:RaisingPredict", "--model", "failing_models:failing_fit"]
    with pytest.MonkeyPatch.context() as patch:
        for key, value in run_env.items():
            patch.setenv(key, value)
        run = onrecord(*run_args, *extra)
    assert run.returncode == 0, run.stderr
    shutil.rmtree(folder)  # the replay cannot import what is not there
    replayed = onrecord(*replay_args)
    return {
        "dir": run_dir,
        "run": run,
        "replay": replayed,
        "verify": onrecord("verify", run_dir),
        "tables": json.loads((run_dir / "tables.json").read_text()),
        "protocol": json.loads((run_dir / "protocol.json").read_text()),
    }


MINE, RAISING, UNFIT = "linear-delta/v1", "raising_predict/v1", "failing-fit/v1"


@pytest.mark.slow
def test_the_docs_model_runs_every_stage_beside_the_builtins(user_run: dict[str, Any]) -> None:
    tables, out = user_run["tables"], user_run["run"].stdout
    for name in ("heldout_metrics", "development_metrics", "interventions", "persistence"):
        assert MINE in tables[name], name
    loop = {row["model_id"]: row for row in tables["closed_loop"]}
    assert loop[MINE]["reached_cap"] == loop[MINE]["seeds"] == 3  # it balances, as promised
    assert loop[MINE]["failed_runs"] == 0
    effect = tables["headline"]["cart_velocity_h1_action_effect_error"]
    assert effect[MINE] == pytest.approx(effect["bayes-linear/v1"], rel=0.05)
    assert tables["headline"]["cart_velocity_h1_interval_90"][MINE]["coverage"] is None
    assert tables["decisions"][MINE]["next-step-angle"]["decision"] == "accept"
    assert MINE in tables["other_envs"]["Pendulum-v1"]
    assert MINE in tables["other_envs"]["Acrobot-v1"]
    assert (user_run["dir"] / "models" / "linear-delta_v1.json").is_file()
    assert (user_run["dir"] / "reports" / "linear-delta_v1.report.json").is_file()
    # The printed tables: a row of each, and one progress step more per --model.
    assert re.search(r"│ linear-delta/v1 +│ 500 +│ 3/3 ", out)
    assert re.search(r"│ linear-delta/v1 +│ indeterminate +│ accept +│ accept", out)
    assert user_run["run"].stderr.splitlines()[-1].startswith("world-model steps 20/20 ")


@pytest.mark.slow
def test_models_that_fail_in_the_run_are_recorded_not_scored(user_run: dict[str, Any]) -> None:
    tables, out = user_run["tables"], user_run["run"].stdout
    loop = {row["model_id"]: row for row in tables["closed_loop"]}
    for model in (RAISING, UNFIT):
        metrics = tables["heldout_metrics"][model]
        assert metrics["model_errors"] == metrics["forecasts"] == 40
        assert loop[model]["failed_runs"] == loop[model]["seeds"] == 3
        assert loop[model]["mean_return"] is None
        assert loop[model]["normalized_score"] is None
        assert tables["headline"]["cart_velocity_h1_action_effect_error"][model] is None
        assert re.search(rf"│ {model} +│ cart_velocity │ 1 │ 0/0 \(40 of 40 failed\)", out)
    # The fit's failure is what its forecasts say, and what models/ID.json holds.
    saved = json.loads((user_run["dir"] / "models" / "failing-fit_v1.json").read_text())
    assert saved == {"fit_error": "fit(transitions) raised ValueError: singular matrix"}
    line = (user_run["dir"] / "forecasts" / "heldout" / "failing-fit_v1.jsonl").read_text()
    assert "FitFailed" in line
    assert "singular matrix" in line
    # Only where its factory gave a model: RaisingPredict on Pendulum, failing_fit nowhere.
    assert RAISING in tables["other_envs"]["Pendulum-v1"]
    assert UNFIT not in tables["other_envs"]["Pendulum-v1"]


@pytest.mark.slow
def test_the_protocol_records_the_user_models(user_run: dict[str, Any]) -> None:
    protocol = user_run["protocol"]
    assert protocol["models"][-3:] == [MINE, RAISING, UNFIT]
    mine, raising, unfit = protocol["user_models"]
    assert mine == {
        "spec": "my_models:LinearDelta",
        "model_id": MINE,
        "describe": {"kind": "linear-delta", "weights": None},
        "other_envs": {"Pendulum-v1": MINE, "Acrobot-v1": MINE},
    }
    assert raising["spec"] == "failing_models:RaisingPredict"
    assert unfit["other_envs"] == {"Pendulum-v1": None, "Acrobot-v1": None}


@pytest.mark.slow
def test_the_replay_and_verify_pass_without_the_module(user_run: dict[str, Any]) -> None:
    replayed = user_run["replay"]
    assert replayed.returncode == 0, replayed.stderr
    assert "every table and report recomputed from saved evidence matches" in replayed.stdout
    assert re.search(r"│ linear-delta/v1 +│ 500 +│ 3/3 ", replayed.stdout)
    assert user_run["verify"].returncode == 0, user_run["verify"].stderr


@pytest.mark.parametrize(
    ("models", "message"),
    [
        (["nowhere_module:make"], r"--model nowhere_module:make: cannot import 'nowhere_module'"),
        (["refused_models:missing"], r"has no attribute 'missing'"),
        (["refused_models:NOT_CALLABLE"], r"NOT_CALLABLE is int 3, not a function or class"),
        (["refused_models:raises"], r"CartPole-v1 Simulator raised ValueError: no GPU here"),
        (["refused_models:not_a_model"], r"returned object for CartPole-v1, not a WorldModel"),
        (["refused_models:none"], r"returned None for CartPole-v1"),
        (["refused_models:bad_id"], r"model_id '\.\./escape' is not a 'name/version' id"),
        (["refused_models:builtin_id"], r"'bayes-linear/v1' on CartPole-v1 is already used by a"),
        (
            ["refused_models:file_a", "refused_models:file_b"],
            r"'my/model_v1' on CartPole-v1 is already used by --model refused_models:file_a",
        ),
        (
            ["refused_models:file_a", "refused_models:upper"],
            r"'MY_model/v1' on CartPole-v1 is already used by --model refused_models:file_a",
        ),
        (
            ["my_models:LinearDelta", "my_models:LinearDelta"],
            r"'linear-delta/v1' on CartPole-v1 is already used by --model my_models",
        ),
    ],
)
def test_an_unusable_model_exits_3_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, models: list[str], message: str
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(_modules(tmp_path / "modules")))
    output = tmp_path / "run"
    flags = [word for spec in models for word in ("--model", spec)]
    result = onrecord("worldmodel", "run", "--smoke", *flags, "--output-dir", output)
    assert result.returncode == 3, result.stderr
    assert re.search(message, result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    assert not output.exists()


def test_a_fit_that_renames_the_model_is_its_failure(training: Any) -> None:
    from onrecord.dynamics import PersistenceModel, get_simulator
    from onrecord.dynamics.experiment._user_models import fitted

    class Renaming(PersistenceModel):
        def fit(self, transitions: Any) -> None:
            self.model_id = "renamed/v2"  # its files are already named by the protocol

    model, description = fitted(Renaming(get_simulator("CartPole-v1"), "mine/v1"), training)
    assert model.model_id == "mine/v1"
    assert description == {
        "fit_error": "fit(transitions) raised InputError: fit changed model_id to 'renamed/v2'"
    }


def test_a_protocol_with_a_malformed_user_model_record_is_refused() -> None:
    from onrecord.dynamics.experiment import build_protocol
    from onrecord.dynamics.experiment._user_models import user_slugs
    from onrecord.errors import SchemaError

    record = {"spec": "m:f", "model_id": "mine/v1", "describe": None}
    good = {**record, "other_envs": {"Pendulum-v1": "mine_x/v1", "Acrobot-v1": None}}
    protocol = build_protocol(smoke=True, user_models=[good])
    assert user_slugs(protocol)["Pendulum-v1"] == {"mine_x_v1": "mine_x/v1"}
    for bad in ({**good, "model_id": "other/v1"}, record, {**good, "extra": 1}):
        with pytest.raises(SchemaError, match="user_models entry"):
            user_slugs({**protocol, "user_models": [bad]})
