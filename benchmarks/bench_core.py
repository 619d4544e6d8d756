"""Evidence core: capture overhead, verification, evaluation, size, canonical JSON speed.

Run: ``python -m benchmarks.bench_core``. Every figure is a ratio against a baseline
measured in this same run, or an absolute bound with wide margin (TARGETS.md).
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import orjson

from benchmarks._timing import best_time, best_times_interleaved, row
from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord._canonical import canonical_bytes, digest_bytes
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict, evaluate_episode
from onrecord.integrations.gymnasium import capture_episode
from onrecord.report import CheckResult, EvaluationReport, Status, Trial

STEPS = 500
_NUMPY = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_SORT_KEYS


def _long_episode(
    steps: int,
    make_env: Callable[[], gym.Env[Any, Any]] | None = None,
    *,
    plain_floats: bool = False,
) -> EpisodeEvidence:
    """CartPole without its time limit and with the pole kept up by a controller, so the
    episode really lasts ``steps`` steps (on a fresh environment, or ``make_env()``'s).

    The observer is the world-model seed's, ``list(state)`` (four NumPy scalars), or with
    ``plain_floats`` the same state as four Python floats (``state.tolist()``)."""
    holder: dict[str, Any] = {}

    def seed_observer() -> Any:
        return {"state": list(holder["env"].unwrapped.state)}

    def plain_observer() -> Any:
        return {"state": holder["env"].unwrapped.state.tolist()}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = (
            make_env() if make_env else gym.make("CartPole-v1", max_episode_steps=steps + 10)
        )
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(steps):
            observation, _, terminated, truncated, _ = env.step(
                int(observation[2] + 0.5 * observation[3] > 0)
            )
            if terminated or truncated:
                return

    return capture_episode(
        factory,
        interact,
        case=CASE,
        environment_id="CartPole-v1",
        observer_id="state/v1",
        observe=plain_observer if plain_floats else seed_observer,
        seed=0,
        max_steps=steps,
    )


def main() -> None:
    print(f"# evidence core ({STEPS}-step CartPole episodes)")
    bare, observed, captured, floor, kept, checked, plain = _capture_vs_bare()
    print(
        row(
            "capture_episode / bare reset+step loop",
            f"{captured / bare:.2f}x",
            "<= 1.5x",
            captured / bare <= 1.5,
        )
    )
    print(
        row(
            "capture_episode / bare loop calling the same observer",
            f"{captured / observed:.2f}x",
            "(context)",
            True,
        )
    )
    print(
        row(
            "capture, observer giving Python floats (.tolist()) / bare",
            f"{plain / bare:.2f}x",
            "(context)",
            True,
        )
    )
    print(
        row(
            "floor: bare loop + observer serialized each step + sha256",
            f"{floor / bare:.2f}x",
            "(context)",
            True,
        )
    )
    print(
        row(
            "floor + each step's wall time and observation kept",
            f"{kept / bare:.2f}x",
            "(context)",
            True,
        )
    )
    print(
        row(
            "capture + evaluate_episode (2 state checks) / bare loop",
            f"{checked / bare:.2f}x",
            "(context)",
            True,
        )
    )
    print(
        f"{'':<58} bare {bare * 1e3:.2f} ms, bare+observer {observed * 1e3:.2f} ms, "
        f"floor {floor * 1e3:.2f} ms, floor+kept {kept * 1e3:.2f} ms, "
        f"capture {captured * 1e3:.2f} ms, "
        f"capture+checks {checked * 1e3:.2f} ms, capture (.tolist()) {plain * 1e3:.2f} ms"
    )
    episode = _long_episode(STEPS)
    data = episode.data
    verify = best_time(lambda: EpisodeEvidence.from_dict(data), repeat=30)
    print(
        row(
            "EpisodeEvidence.from_dict (verify), 500 steps",
            f"{verify * 1e3:.2f} ms",
            "<= 2 ms",
            verify <= 2e-3,
        )
    )
    with tempfile.TemporaryDirectory() as folder:
        path = episode.save_json(Path(folder) / "episode.json")
        load = best_time(lambda: EpisodeEvidence.load(path), repeat=30)
    print(
        row("EpisodeEvidence.load (read + verify), 500 steps", f"{load * 1e3:.2f} ms", "info", True)
    )
    per_step = len(episode.to_bytes()) / STEPS
    print(row("evidence bytes per CartPole step", f"{per_step:.0f} B", "<= 330 B", per_step <= 330))
    _evaluation(episode)
    _canonical_speed(data)
    _image_episode()


def _capture_vs_bare() -> tuple[float, ...]:
    """Same policy, same seed, same 500 steps: bare loop vs capture_episode."""
    env = gym.make("CartPole-v1", max_episode_steps=STEPS + 10)

    # The three baselines are written out on purpose: sharing one loop through a
    # per-step callback adds a Python call each step and inflates every baseline.
    def bare() -> None:
        env.action_space.seed(0)
        env.observation_space.seed(0)
        observation, _ = env.reset(seed=0)
        for _ in range(STEPS):
            observation, _, terminated, truncated, _ = env.step(
                int(observation[2] + 0.5 * observation[3] > 0)
            )
            if terminated or truncated:
                break

    def bare_observed() -> None:
        env.action_space.seed(0)
        env.observation_space.seed(0)
        observation, _ = env.reset(seed=0)
        states = []
        for _ in range(STEPS):
            observation, _, terminated, truncated, _ = env.step(
                int(observation[2] + 0.5 * observation[3] > 0)
            )
            states.append({"state": list(env.unwrapped.state)})
            if terminated or truncated:
                break

    def floor() -> None:
        """The least any recorder can do: serialize the observer's state each step (the
        copy keeps a small block instead of orjson's oversized one) and hash it all."""
        env.action_space.seed(0)
        env.observation_space.seed(0)
        observation, _ = env.reset(seed=0)
        states = []
        for _ in range(STEPS):
            observation, _, terminated, truncated, _ = env.step(
                int(observation[2] + 0.5 * observation[3] > 0)
            )
            states.append(orjson.dumps({"state": list(env.unwrapped.state)}, option=_NUMPY) + b",")
            if terminated or truncated:
                break
        hashlib.sha256(b"".join(states)).hexdigest()

    def floor_kept() -> None:
        """The floor, plus what every step's record holds besides its state: the step's
        wall time and the observation detached (no checks of any kind, no columns)."""
        env.action_space.seed(0)
        env.observation_space.seed(0)
        observation, _ = env.reset(seed=0)
        records = []
        clock = time.perf_counter_ns
        for _ in range(STEPS):
            start = clock()
            observation, reward, terminated, truncated, _ = env.step(
                int(observation[2] + 0.5 * observation[3] > 0)
            )
            elapsed = clock() - start
            state = orjson.dumps({"state": list(env.unwrapped.state)}, option=_NUMPY) + b","
            records.append((elapsed, observation.tobytes(), reward, state))
            if terminated or truncated:
                break
        hashlib.sha256(b"".join(record[3] for record in records)).hexdigest()

    def captured() -> EpisodeEvidence:
        return _long_episode(STEPS, lambda: env)  # the same environment as the baselines

    def captured_and_checked() -> None:
        """Capture, then the first read: two checks that look at every state."""
        evaluate_episode(captured(), STATE_CHECKS)

    def captured_plain() -> EpisodeEvidence:
        return _long_episode(STEPS, lambda: env, plain_floats=True)

    functions = (
        bare,
        bare_observed,
        captured,
        floor,
        floor_kept,
        captured_and_checked,
        captured_plain,
    )
    for _ in range(3):  # warm every path
        for function in functions:
            function()
    return tuple(best_times_interleaved(functions, rounds=101))


CASE = EvalCase("balance", case_id="bench")
STATE_CHECKS = [
    OutcomeCheck("survived", "v1", lambda e: OutcomeVerdict(e.ended != "terminated", "ok", {})),
    OutcomeCheck(
        "upright",
        "v1",
        lambda e: OutcomeVerdict(all(abs(s["state"][2]) < 0.21 for s in e.states() if s), "", {}),
    ),
]


def _evaluation(episode: EpisodeEvidence) -> None:
    checks = [
        OutcomeCheck("survived", "v1", lambda e: OutcomeVerdict(e.ended != "terminated", "ok", {})),
        OutcomeCheck(
            "final_state_seen", "v1", lambda e: OutcomeVerdict(e.final_state is not None, "ok", {})
        ),
    ]
    policy = AcceptancePolicy((CheckRequirement("survived"), CheckRequirement("final_state_seen")))
    evaluate = best_time(lambda: policy.evaluate(evaluate_episode(episode, checks)), repeat=30)
    print(
        row(
            "evaluate_episode (2 checks) + AcceptancePolicy.evaluate",
            f"{evaluate * 1e3:.2f} ms",
            "<= 3 ms",
            evaluate <= 3e-3,
        )
    )
    for label, report, repeat in (
        ("10,000 trials x 10 checks", _large_report(10_000, 10), 7),
        ("a requirement per check, 2,000", _large_report(5, 2000), 5),
    ):
        every = AcceptancePolicy(tuple(CheckRequirement(name) for name in report.check_names))
        judged = best_time(lambda every=every, report=report: every.evaluate(report), repeat=repeat)
        print(row(f"AcceptancePolicy.evaluate, {label}", f"{judged * 1e3:.0f} ms", "info", True))
    long_episode = _long_episode(2000)
    trivial = [
        OutcomeCheck(f"trivial_{i}", "v1", lambda e: OutcomeVerdict(True, "ok", {}))
        for i in range(50)
    ]
    fifty = best_time(lambda: evaluate_episode(long_episode, trivial), repeat=15)
    print(
        row(
            "50 trivial checks, 2000-step episode",
            f"{fifty * 1e3:.2f} ms",
            "<= 20 ms",
            fifty <= 20e-3,
        )
    )


def _large_report(trials: int, checks: int) -> EvaluationReport:
    """A CI-sized report: mostly passes, some failures, unmeasured and missing results."""
    statuses: list[Status] = ["pass"] * 18 + ["fail", "not_measured"]
    return EvaluationReport.from_trials(
        Trial(
            {"case_id": f"c{i}", "content_digest": f"{i:064x}"},
            0,
            {"kind": "bench"},
            tuple(
                CheckResult(f"check/{k}", "v1", statuses[(i * 7 + k) % 20], "r")
                for k in range(checks)
                if (i + k) % 97
            ),
        )
        for i in range(trials)
    )


def _canonical_speed(data: dict[str, Any]) -> None:
    body = canonical_bytes(data)
    seconds = best_time(lambda: digest_bytes(canonical_bytes(data)), repeat=30)
    rate = len(body) / seconds / 1e6
    print(row("canonical JSON + sha256 throughput", f"{rate:.0f} MB/s", ">= 200 MB/s", rate >= 200))


class _Frames(gym.Env[Any, int]):
    """84×84 RGB observations, as an Atari-style pixel environment produces."""

    observation_space = gym.spaces.Box(0, 255, (84, 84, 3), dtype="uint8")
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.observation_space.sample(), 0.0, False, False, {}


def _image_episode() -> None:
    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(100):
            env.step(0)

    episode = capture_episode(
        _Frames,
        interact,
        case=CASE,
        environment_id="frames",
        observer_id="none",
        observe=dict,
        seed=0,
        max_steps=100,
    )
    record = len(episode.to_bytes())
    frames = sum(len(blob) for blob in episode.blobs.values())
    print(
        row(
            "100 84×84×3 frames: JSON record / raw frame bytes",
            f"{record / frames:.4f}",
            "arrays ≥ 1 KiB beside",
            record < frames / 50,
        )
    )
    print(f"{'':<58} record {record / 1024:.0f} KiB, blobs {frames / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
