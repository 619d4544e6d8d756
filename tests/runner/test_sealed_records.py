"""Record bytes written without re-serializing the evidence (``_sealed``), and the
per-step observers' fast paths, give exactly what the general paths give."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord._canonical import canonical_bytes, content_digest, record_bytes, to_portable
from onrecord.errors import DigestMismatch
from onrecord.examples import cartpole_task
from onrecord.runner import EpisodeSpec, GymnasiumProvider, RunStore, plan_run, start_run
from onrecord.runner._agents_and_checks import load_agent
from onrecord.runner._examples import cartpole, frozenlake
from onrecord.runner._gym import unwrapped_state
from onrecord.runner._job import EpisodeJob, RunContext, _result, fingerprint
from onrecord.runner._registry import EnvironmentRef
from onrecord.runner._sealed import CapturedEvidence, digest_of_canonical, record_line
from onrecord.runner._store_lines import iterate_records


def _legacy_line(job: EpisodeJob, evidence: dict[str, Any], trial: dict[str, Any]) -> bytes:
    """The record line as the runner wrote it before: from the parsed evidence, the
    record serialized for its digest and again for its bytes."""
    record = {
        "schema": "onrecord.run.episode/v1",
        "run_id": job.context.run_id,
        "case_id": job.key[0],
        "repeat": job.repeat,
        "seed": job.seed,
        "evidence": evidence,
        "trial": trial,
        "fingerprint": fingerprint(evidence, ()),
        "action_log": {"events": 0, "bytes": 0, "sha256": hashlib.sha256(b"").hexdigest()},
        "files": {},
    }
    record["digest"] = content_digest(record)
    return record_bytes(record)


def _episode(provider: GymnasiumProvider, agent: str, seed: int, grade: bool) -> Any:
    case = provider.tasks()[0]
    context = RunContext(
        "run-x", EnvironmentRef("x", "provider", "x:y"), agent, ("default",), {}, 500
    )
    job = EpisodeJob(context, case.to_dict(), 3, seed)
    steps = provider.default_max_steps  # type: ignore[attr-defined]
    output = provider.run_episode(
        EpisodeSpec(case, 3, seed, steps, None, "run-x"), load_agent(provider, agent)
    )
    trial = provider.trial(output.subject, provider.default_checks(), 3).to_dict()
    return job, output, trial if grade else {"not": "graded"}


@pytest.mark.parametrize(
    ("make", "agent"),
    [(cartpole, "balances"), (cartpole, "always_left"), (frozenlake, "walks_into_hole")],
)
@pytest.mark.parametrize("graded", [True, False])
def test_spliced_record_line_is_the_record_serialized_from_parsed_evidence(
    make: Any, agent: str, graded: bool
) -> None:
    # Graded first or not: a check reading a column decodes it inside the evidence, the
    # fingerprint must come out the same from a decoded or a still-spliced column.
    job, output, trial = _episode(make(), agent, 7, graded)
    assert type(output.evidence) is CapturedEvidence
    parsed = output.subject.data
    assert fingerprint(output.evidence, ()) == fingerprint(parsed, ())
    new = _result(job, output, trial, "pass").record
    assert new == _legacy_line(job, parsed, trial)
    # Reading the mapping parses the same record.
    assert dict(output.evidence) == parsed
    assert len(output.evidence) == len(parsed)
    assert output.evidence["digest"] == output.subject.digest


def test_two_episodes_never_share_evidence_bytes() -> None:
    # Different seeds and cases: each record holds its own episode, not one cached.
    provider = cartpole()
    first, second = _episode(provider, "balances", 1, True), _episode(provider, "balances", 2, True)
    lines = [_result(job, out, trial, "pass").record for job, out, trial in (first, second)]
    assert lines[0] != lines[1]
    for (job, output, trial), line in zip((first, second), lines, strict=True):
        assert line == _legacy_line(job, output.subject.data, trial)
    lake = _episode(frozenlake(), "walks_to_goal", 1, True)
    assert _result(*lake[:3], "pass").record == _legacy_line(lake[0], lake[1].subject.data, lake[2])


@pytest.mark.parametrize(
    "record",
    [
        {"a": 1, "z": [1.5, "x"]},
        {"action_log": {"bytes": 0}, "case_id": "c", "evidence": {"k": "v"}, "trial": {}},
        {"only_after": 1},  # no key sorts before "digest"
        {"b": 1},  # none after it
    ],
)
def test_record_line_equals_record_bytes_with_content_digest(record: dict[str, Any]) -> None:
    expected = record_bytes({**record, "digest": content_digest(record)})
    assert record_line(record) == expected
    line = record_line(record)
    parsed = {**record, "digest": content_digest(record)}
    assert digest_of_canonical(line, parsed) == content_digest(parsed)


@pytest.mark.parametrize(
    "stored",
    ["0" * 64, "", 'quote"inside', "é", 12, None, ["x"]],
)
def test_digest_of_canonical_never_accepts_a_digest_it_did_not_compute(stored: Any) -> None:
    record = {"action_log": {}, "case_id": "c", "evidence": {"x": 1}, "digest": stored}
    line = canonical_bytes(record) + b"\n"
    body = {key: value for key, value in record.items() if key != "digest"}
    assert digest_of_canonical(line, record) == content_digest(body)
    assert digest_of_canonical(line, record) != stored


def test_an_edited_record_is_still_refused_on_reading(tmp_path: Path) -> None:
    run = tmp_path / "run"
    start_run(run, plan_run("frozenlake", "walks_to_goal", seeds=[0, 1]))
    path = run / "episodes.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # The same length and still canonical: only the digest can tell.
    lines[1] = lines[1].replace(b'"seed":1', b'"seed":0', 1)
    path.write_bytes(b"".join(lines))
    with pytest.raises(DigestMismatch, match="line 2 does not match its digest"):
        list(iterate_records(RunStore.open(run), path))


@pytest.mark.parametrize(
    "state",
    [
        np.array([0.1, -2.5, 3e-8, 1e300]),
        np.array([[1.0, 2.0], [3.0, 4.5]], dtype=np.float32),
        np.array([1, -7, 2**40], dtype=np.int64),
        np.array([2**64 - 1], dtype=np.uint64),
        np.array([True, False]),
        np.array(2.5),
        np.zeros((0, 3)),
        np.array([1e308, 1e308]),  # a sum that overflows: the general path
        np.array([1.0, np.nan]),
        np.array([np.inf, 0.0]),
        np.array([np.inf, -np.inf]),
        np.array([1 + 2j]),
        np.array(["text"]),
        np.arange(12, dtype=np.float16).reshape(3, 4)[:, ::2],  # not contiguous
        [0.5, 1.5],
        None,
    ],
    ids=lambda value: repr(value)[:40],
)
def test_unwrapped_state_is_what_to_portable_makes_of_the_state(state: Any) -> None:
    class Holder(gym.Env[Any, Any]):
        def __init__(self) -> None:
            self.state = state

    try:
        expected = to_portable(state, "$.state")
    except Exception:
        expected = None
    got = unwrapped_state(gym.wrappers.TimeLimit(Holder(), 10))
    assert canonical_bytes(got) == canonical_bytes(expected)
    assert got == expected


def test_cartpole_observer_gives_the_floats_of_every_state_value() -> None:
    observe = cartpole_task().observe
    env = gym.make("CartPole-v1")
    env.reset(seed=5)
    for _ in range(5):
        state = env.unwrapped.state  # type: ignore[attr-defined]
        observed = observe(env)
        assert observed == {"state": [float(value) for value in state]}
        assert all(type(value) is float for value in observed["state"])
        env.step(0)
    env.unwrapped.state = (np.float32(0.25), 1, 2.0, np.float64(3))  # type: ignore[attr-defined]
    assert observe(env) == {"state": [0.25, 1.0, 2.0, 3.0]}
    env.unwrapped.state = None  # type: ignore[attr-defined]
    with pytest.raises(TypeError):  # before a reset: fails as it always did
        observe(env)


@pytest.mark.parametrize(
    ("make", "task", "agent"),
    [(cartpole, "cartpole_task", "balances"), (frozenlake, "frozenlake_task", "walks_to_goal")],
)
def test_example_environments_without_the_env_checker_record_the_same_episode(
    make: Any, task: str, agent: str
) -> None:
    # The runner's example providers skip Gymnasium's passive checker; run_gym_task
    # (gymnasium.make's default, checker on) must record the same episode.
    import onrecord.examples as examples

    gym_task = getattr(examples, task)()
    agents = {**examples.CARTPOLE_AGENTS, **examples.FROZENLAKE_AGENTS}
    checked = examples.run_gym_task(gym_task, agents[agent](), seed=4)
    _, output, _ = _episode(make(), agent, 4, False)
    assert fingerprint(output.evidence, ()) == fingerprint(checked.data, ())
    assert output.subject.data["environment"] == checked.data["environment"]
