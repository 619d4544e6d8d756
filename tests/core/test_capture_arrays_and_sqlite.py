"""CartPole arrays, Taxi's numpy info, the SQLite environment (write then raise, change
then restore) and the other capture guarantees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord._canonical import from_portable
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict, evaluate_episode
from onrecord.errors import PortabilityError
from onrecord.examples import CARTPOLE_AGENTS, cartpole_task, run_gym_task
from onrecord.integrations.gymnasium import capture_episode
from tests.core import envs as envs_module
from tests.core.envs import (
    CHANGE_PROTECTED,
    FINISH,
    POST,
    RESTORE_PROTECTED,
    GenericEnv,
    InvoiceEnv,
    capture_generic,
    read_committed,
)


def test_cartpole_observations_round_trip_exactly() -> None:
    native: list[np.ndarray] = []
    holder: dict[str, Any] = {}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for action in (0, 1, 1, 0, 1):
            observation, *_ = env.step(action)
            native.append(observation.copy())

    episode = capture_episode(
        factory,
        interact,
        case=EvalCase("arrays"),
        environment_id="CartPole-v1",
        observer_id="state",
        observe=lambda: {"state": holder["env"].unwrapped.state},
        seed=11,
        max_steps=10,
    )
    reloaded = EpisodeEvidence.from_dict(episode.data)
    space = gym.make("CartPole-v1").observation_space
    decoded = space.from_jsonable([t["observation"] for t in reloaded.transitions()])
    for expected, got in zip(native, decoded, strict=True):
        assert np.array_equal(expected, got)
        assert expected.dtype == got.dtype
    assert [t["action"] for t in reloaded.transitions()] == [0, 1, 1, 0, 1]
    # the observer's float64 state is stored exactly, as numbers
    state = reloaded.transitions()[-1]["state"]["state"]
    assert all(isinstance(value, float) for value in state)


def test_cartpole_survival_task_accepts_a_perfect_truncated_run() -> None:
    task = cartpole_task()
    episode = run_gym_task(task, CARTPOLE_AGENTS["balances"](), seed=3)
    assert episode.ended == "truncated"
    assert episode.measures == {"return": 500.0, "steps": 500}
    assert episode.coverage_issues == ()
    report = evaluate_episode(episode, list(task.checks))
    assert task.policy.evaluate(report).decision == "accept"


def test_action_space_is_seeded_from_the_seed() -> None:
    def sample(env: Any, observation: Any, info: Any) -> list[int]:
        return [int(env.action_space.sample()) for _ in range(8)]

    def run(seed: int) -> Any:
        return capture_episode(
            lambda: gym.make("CartPole-v1"),
            sample,
            case=EvalCase("s"),
            environment_id="e",
            observer_id="o",
            observe=dict,
            seed=seed,
            max_steps=1,
        ).data["interact"]["returned"]

    assert run(5) == run(5)
    assert run(5) != run(6)


def test_taxi_action_mask_in_info_is_kept_with_its_dtype() -> None:
    episode = capture_episode(
        lambda: gym.make("Taxi-v4"),
        lambda env, obs, info: env.step(0),
        case=EvalCase("taxi"),
        environment_id="Taxi-v4",
        observer_id="none",
        observe=dict,
        seed=4,
        max_steps=2,
    )
    mask = from_portable(episode.initial["info"]["action_mask"])
    assert mask.dtype == np.int8
    assert mask.shape == (6,)
    native = gym.make("Taxi-v4").reset(seed=4)[1]["action_mask"]
    assert np.array_equal(mask, native)
    step_mask = from_portable(episode.transitions()[0]["info"]["action_mask"])
    assert step_mask.dtype == np.int8


def test_unportable_info_is_a_capture_error_naming_the_field() -> None:
    env = GenericEnv(
        lambda e, a: (e.observation_space.sample(), 0.0, False, False, {"handle": object()})
    )
    raised: list[Exception] = []

    def interact(e: Any, o: Any, i: Any) -> None:
        try:
            e.step(0)
        except PortabilityError as exc:
            raised.append(exc)

    episode = capture_generic(env, interact)
    assert str(raised[0]).startswith("$.info[0].handle holds a builtins.object")
    attempt = episode.attempts()[0]
    assert attempt["status"] == "env_error"
    assert attempt["error"]["message"] == str(raised[0])
    assert episode.transitions() == []  # nothing half-recorded
    assert env.closed


def test_nan_in_observer_output_is_an_observer_error_naming_the_path() -> None:
    env = GenericEnv(lambda e, a: (e.observation_space.sample(), 0.0, True, False, {}))
    episode = capture_generic(
        env, lambda e, o, i: e.step(0), observe=lambda: {"x": [1.0, float("nan")]}
    )
    assert episode.states() == [None, None, None]
    assert any("$.state.x[1] is nan" in issue for issue in episode.coverage_issues)


def test_close_failure_leaves_cleanup_unconfirmed() -> None:
    def bad_close() -> None:
        raise OSError("socket already closed")

    env = GenericEnv(
        lambda e, a: (e.observation_space.sample(), 1.0, True, False, {}), close=bad_close
    )
    episode = capture_generic(env, lambda e, o, i: e.step(1))
    line = _line_of('        raise OSError("socket already closed")')
    assert episode.data["cleanup"] == {
        "ok": False,
        "error": {
            "type": "builtins.OSError",
            "message": f"socket already closed (at {__file__}:{line} in bad_close)",
        },
    }
    assert (
        "cleanup not confirmed: close() raised builtins.OSError: socket already closed"
        f" (at {__file__}:{line} in bad_close)" in episode.coverage_issues
    )


def _invoice_episode(
    tmp_path: Path, actions: list[int], *, raise_after_commit: bool = False
) -> EpisodeEvidence:
    path = tmp_path / "ledger.sqlite"

    def interact(env: Any, observation: Any, info: Any) -> str:
        for action in actions:
            env.step(action)
        return "posted"

    return capture_episode(
        lambda: InvoiceEnv(path, raise_after_commit=raise_after_commit),
        interact,
        case=EvalCase("Post invoice once", case_id="invoice-17", source_id="document-17"),
        environment_id="invoice-environment-v1",
        observer_id="ledger-readonly-v1",
        observe=lambda: read_committed(path),
        seed=17,
        max_steps=20,
    )


def posted_once(episode: EpisodeEvidence) -> OutcomeVerdict:
    state = episode.data["final_state"]
    if state is None:
        return OutcomeVerdict(None, "No committed-state observation", {})
    rows = state["invoice_rows"]
    passed = rows == [{"invoice_id": "invoice-17", "amount_cents": 1234}]
    return OutcomeVerdict(passed, "Require exactly one correct posting", {"rows": rows})


def protected_never_changed(episode: EpisodeEvidence) -> OutcomeVerdict:
    values = [state["protected"] for state in episode.states() if state is not None]
    changed = sorted(set(values) - {"original"})
    return OutcomeVerdict(
        not changed, "the protected record never changes, even briefly", {"values_seen": changed}
    )


def _line_of(text: str, path: str = __file__) -> int:
    """The number of the line of ``path`` that is ``text``: a failure of the user's code
    is recorded with the line that raised it (since round 51), found there, not pinned."""
    with open(path, encoding="utf-8") as source:
        return source.read().splitlines().index(text) + 1


CHECKS = [
    OutcomeCheck("posted_once", "invoice-once-v1", posted_once),
    OutcomeCheck("protected_never_changed", "v1", protected_never_changed),
]
POLICY = AcceptancePolicy(
    (CheckRequirement("posted_once", critical=True), CheckRequirement("protected_never_changed"))
)


def test_write_then_raise_keeps_the_committed_write_in_evidence(tmp_path: Path) -> None:
    episode = _invoice_episode(tmp_path, [POST], raise_after_commit=True)
    attempt = episode.attempts()[0]
    assert attempt["status"] == "env_error"
    assert attempt["state"]["invoice_rows"] == [{"invoice_id": "invoice-17", "amount_cents": 1234}]
    envs = envs_module.__file__
    line = _line_of(
        '                raise ConnectionError("acknowledgement lost after commit")', envs
    )
    assert episode.failures()[0]["message"] == (
        f"acknowledgement lost after commit (at {envs}:{line} in step)"
    )
    report = evaluate_episode(episode, CHECKS)
    assert POLICY.evaluate(report).decision == "indeterminate"


def test_change_then_restore_is_caught_by_a_whole_history_check(tmp_path: Path) -> None:
    episode = _invoice_episode(tmp_path, [POST, CHANGE_PROTECTED, RESTORE_PROTECTED, FINISH])
    assert episode.final_state["protected"] == "original"  # the end state looks clean
    report = evaluate_episode(episode, CHECKS)
    decision = POLICY.evaluate(report)
    assert decision.decision == "reject"
    assert report.trials[0].result("protected_never_changed").evidence == {
        "values_seen": ["tampered"]
    }


def test_correct_posting_is_accepted(tmp_path: Path) -> None:
    episode = _invoice_episode(tmp_path, [POST, FINISH])
    assert POLICY.evaluate(evaluate_episode(episode, CHECKS)).decision == "accept"
    episode.save_json(tmp_path / "invoice.json")
    assert EpisodeEvidence.load(tmp_path / "invoice.json") == episode
