"""Gymnasium environments as providers: any registered id, or a factory callable."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import gymnasium as gym
import numpy as np

from onrecord._async import discard
from onrecord._canonical import NDARRAY_TAG, to_portable
from onrecord._exceptions import describe
from onrecord.case import EvalCase
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict, episode_trial
from onrecord.errors import InputError
from onrecord.integrations.gymnasium import capture_episode
from onrecord.report import Trial
from onrecord.runner._provider import (
    AGENT_FACTORY_MARK,
    AgentContext,
    AgentFactory,
    EnvironmentProvider,
    EpisodeOutput,
    EpisodeSpec,
    SavedEpisode,
    failing_agent,
)
from onrecord.runner._sealed import BLOB_PREFIX, CapturedEvidence, saved_evidence

__all__ = ["COMPLETED", "GymnasiumProvider", "as_interact", "random_agent"]

EnvFactory = Callable[[], gym.Env[Any, Any]]
TaskEnvFactory = Callable[[EvalCase], gym.Env[Any, Any]]
Interact = Callable[[Any, Any, dict[str, Any]], Any]
Observe = Callable[[gym.Env[Any, Any]], Any]
# One environment type for ``make``/``make_for_task`` and ``observe``, so an observer
# typed for the user's own ``gym.Env`` subclass is accepted beside its factory.
_Env = TypeVar("_Env", bound=gym.Env[Any, Any])


def _completed(episode: EpisodeEvidence) -> OutcomeVerdict:
    completion = episode.environment["completion"]
    allowed = ("terminated", "truncated") if completion == "either" else (completion,)
    if episode.ended == "setup_error":
        return OutcomeVerdict(None, "the environment could not be set up", {"ended": "setup_error"})
    return OutcomeVerdict(
        episode.ended in allowed,
        f"the episode must end {' or '.join(allowed)}",
        {"ended": episode.ended, "steps": episode.measures["steps"]},
    )


COMPLETED = OutcomeCheck("completed", "v1", _completed)
"""Passes when the episode ended the way its case declares complete."""


def unwrapped_state(env: gym.Env[Any, Any]) -> Any:
    """The simulator's own ``state`` attribute when it has a portable one, else None: an
    observer independent of what the agent was told."""
    state = getattr(env.unwrapped, "state", None)
    if type(state) is np.ndarray and state.dtype.kind in "biuf":
        # Called every step: an array (CartPole's state) is tagged here directly, as
        # ``to_portable`` tags it, when every value is finite (a sum that is finite
        # proves it; an overflowing one only takes the full path) -- ~1 µs instead of
        # ~13 µs, which was more than the bare environment step.
        data = state.ravel().tolist()
        total = sum(data)
        if total - total == 0:
            return {
                NDARRAY_TAG: {"dtype": state.dtype.str, "shape": list(state.shape), "data": data}
            }
    try:
        return to_portable(state, "$.state")
    except InputError:
        return None


def random_agent(context: AgentContext) -> Interact:
    """Samples the action space until the episode ends; repeats draw different actions."""

    def interact(env: Any, observation: Any, info: dict[str, Any]) -> str:
        env.action_space.seed(context.seed * 1_000_003 + context.repeat)
        while True:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                return "ended"

    return interact


def noop_agent(context: AgentContext) -> Interact:
    """Returns at once without acting: shows what an agent that gives up looks like."""
    return lambda env, observation, info: "gave up"


def as_interact(agent: Any, spec: EpisodeSpec) -> Interact:
    """The ``interact(env, observation, info)`` callable for one episode: factories marked
    with ``agent_factory`` are called with the episode's context first."""
    if getattr(agent, AGENT_FACTORY_MARK, False):
        try:
            agent = agent(AgentContext(spec.case, spec.repeat, spec.seed))
        except Exception as exc:  # the agent's failure, recorded in its episode
            return failing_agent(f"the agent factory raised {describe(exc)}", exc)
    if inspect.iscoroutine(agent):  # an async factory: its body never ran
        discard(agent)
        return failing_agent(
            "the agent factory is an async function, so it returned a coroutine without "
            "building the agent; make it a plain def returning the agent (whose interact "
            "may be async)"
        )
    if not callable(agent):
        return failing_agent(
            f"the agent must be callable as agent(env, observation, info), got "
            f"{type(agent).__name__}"
        )
    return agent  # type: ignore[no-any-return]


for _factory in (random_agent, noop_agent):
    setattr(_factory, AGENT_FACTORY_MARK, True)


class GymnasiumProvider(EnvironmentProvider):
    """Episodes of a Gymnasium environment, captured with ``capture_episode``."""

    def __init__(
        self,
        make: Callable[[], _Env] | None = None,
        *,
        environment_id: str,
        tasks: Sequence[EvalCase] = (),
        checks: Sequence[OutcomeCheck] = (COMPLETED,),
        observe: Callable[[_Env], Any] = unwrapped_state,
        observer_id: str = "onrecord.unwrapped-state/v1",
        agents: Mapping[str, AgentFactory] | None = None,
        make_for_task: Callable[[EvalCase], _Env] | None = None,
    ) -> None:
        # Exactly one factory: ``make()`` builds the same environment for every task,
        # ``make_for_task(case)`` one set up for the episode's task (its stock, its
        # documents), which the environment is otherwise never told.
        if (make is None) == (make_for_task is None):
            raise InputError(
                "GymnasiumProvider needs exactly one of make (a function of no arguments) "
                "and make_for_task (a function of the task's EvalCase) returning a fresh "
                "gymnasium.Env"
            )
        for name, value in (("make", make), ("make_for_task", make_for_task)):
            if value is not None and not callable(value):
                raise InputError(f"GymnasiumProvider {name} must be callable, got {value!r}")
        self.make: EnvFactory | None = make
        self.make_for_task: TaskEnvFactory | None = make_for_task
        self.environment_id = environment_id
        self._tasks = tuple(tasks) or (
            EvalCase({"environment": environment_id}, case_id=environment_id, completion="either"),
        )
        self._checks = tuple(checks)
        # Called only with what ``make``/``make_for_task`` built: an ``_Env``.
        self._observe = cast(Observe, observe)
        self.observer_id = observer_id
        self._agents = (
            dict(agents) if agents is not None else {"random": random_agent, "noop": noop_agent}
        )

    def tasks(self) -> Sequence[EvalCase]:
        return self._tasks

    def default_checks(self) -> Sequence[OutcomeCheck]:
        return self._checks

    def reference_agents(self) -> Mapping[str, AgentFactory]:
        return self._agents

    def run_episode(self, spec: EpisodeSpec, agent: Any) -> EpisodeOutput:
        holder: list[gym.Env[Any, Any]] = []

        def factory() -> gym.Env[Any, Any]:
            if self.make_for_task is not None:
                holder.append(self.make_for_task(spec.case))
            else:
                assert self.make is not None
                holder.append(self.make())
            return holder[0]

        evidence = capture_episode(
            factory,
            as_interact(agent, spec),
            case=spec.case,
            environment_id=self.environment_id,
            observer_id=self.observer_id,
            observe=lambda: self._observe(holder[0]),
            seed=spec.seed,
            max_steps=spec.max_steps,
            options=spec.options,
        )
        # Large observation arrays travel as side files named by their sha256.
        blobs = {f"{BLOB_PREFIX}{digest}": blob for digest, blob in evidence.blobs.items()}
        # Saved from the episode's own bytes, never parsed again (``_sealed``).
        return EpisodeOutput(CapturedEvidence(evidence), evidence, files=blobs)

    def load_subject(self, saved: SavedEpisode) -> EpisodeEvidence:
        return saved_evidence(saved)

    def trial(self, subject: Any, checks: Sequence[OutcomeCheck], repeat: int) -> Trial:
        return episode_trial(subject, checks, repeat)
