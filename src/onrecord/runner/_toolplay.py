"""The tool-world agent loop, shared by ``ToolWorldProvider`` and the remittance domain.

A tool-world agent is built once per episode and then called once per step:

* ``act(observation) -> {"tool": name, "arguments": {...}}``, where the observation is
  ``{"task", "tools", "step", "last"}``: the task's input, the tools' JSON schemas, the
  step number (0 first) and the previous call's ``{"tool", "status", "result",
  "error"}`` (``None`` at the first step). Anything else (a bare tool name such as
  ``"finish"``, a list, a mapping without a string ``"tool"`` or with other keys) is
  logged as a rejected ``invalid_action`` call that says what was wrong; nothing changes.
* It is built by the runner's agent: a function marked with ``agent_factory``, called
  with the episode's ``AgentContext``; otherwise any callable, called with the task's
  input (a class whose instances are ``act`` fits as it is). ``act`` may be async: it
  is awaited, and the episode recorded as a plain one's (``_toolplay_async``); the
  builder may not (an async one built nothing: the agent's own failure).

The episode ends at a successful call of the finish tool, when the agent raises, or at
the step limit.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from onrecord._async import discard, is_async_callable
from onrecord._exceptions import describe
from onrecord.case import EvalCase
from onrecord.envkit import ToolEpisode, ToolWorld
from onrecord.envkit._outcome import plain_name, safe_repr
from onrecord.envkit.evaluate import declares_unfinished, episode_trial
from onrecord.episode import OutcomeCheck
from onrecord.report import Trial
from onrecord.runner._provider import AGENT_FACTORY_MARK, AgentContext, EpisodeSpec, failing_agent
from onrecord.runner._toolplay_async import agent_error, play_async, refuse_async_in_loop

__all__ = ["Act", "build_act", "play_tool_world", "read_call", "tool_world_trial"]

Act = Callable[[Mapping[str, Any]], Any]
"""A tool-world agent for one episode: observation in, tool call out."""


def build_act(agent: Any, spec: EpisodeSpec) -> Act:
    """The ``act`` callable of one episode. A builder that raises, or builds something
    that is not callable, gives an agent that raises at its first step: the agent's own
    failure, recorded in its episode (``AgentSetupError``)."""
    try:
        if getattr(agent, AGENT_FACTORY_MARK, False):
            act = agent(AgentContext(spec.case, spec.repeat, spec.seed))
        else:
            act = agent(spec.case.input)
    except Exception as exc:  # the agent's failure, recorded in its episode
        return failing_agent(f"building the agent raised {describe(exc)}", exc)
    if inspect.iscoroutine(act):  # an async builder: its body never ran
        discard(act)
        return failing_agent(
            "the agent builder is an async function, so it returned a coroutine without "
            "building the agent; make it a plain def returning act (act itself may be "
            "async)"
        )
    if not callable(act):
        return failing_agent(
            "a tool-world agent must build a callable act(observation) -> "
            f'{{"tool": ..., "arguments": {{...}}}}, got {type(act).__name__}'
        )
    return act  # type: ignore[no-any-return]


def play_tool_world(
    world: ToolWorld,
    case: EvalCase,
    act: Act,
    *,
    task: Any,
    tools: Sequence[Mapping[str, Any]],
    seed: int,
    run_id: str | None,
    max_steps: int,
    finish_tool: str = "finish",
) -> tuple[str, str | None]:
    """Reset ``world`` for ``case`` and drive ``act`` until a successful ``finish_tool``
    call, an exception from the agent or ``max_steps``; returns ``(ending, agent_error)``
    (``finished``, ``agent_error`` or ``step_limit``), also declared to the world
    (``end_episode``). The end state, audit history, diff and action log stay in the
    world until its next reset. An async ``act`` (or one returning an awaitable) is
    awaited on an event loop of its own (``_toolplay_async``)."""
    refuse_async_in_loop(act)
    world.reset(seed=seed, run_id=run_id, case=case)
    ending, error = _play(_Steps(world, task, tools, max_steps, finish_tool), act)
    # Declared here, the one place that knows it, so an episode saved from the world
    # (``save_episode``, ``RemittanceEnvironment.run``) records the ending the runner
    # records instead of "undeclared".
    world.end_episode(ending, error)
    return ending, error


def _play(steps: _Steps, act: Act) -> tuple[str, str | None]:
    if is_async_callable(act):
        return play_async(steps, act)
    for observation in steps.observations():
        try:
            action = act(observation)
        except Exception as exc:  # the agent's own failure is evidence, not a crash
            return "agent_error", agent_error(exc)
        if inspect.isawaitable(action):  # a plain act handing back its async work
            return play_async(steps, act, action)
        if steps.take(action):
            return "finished", None
    return "step_limit", None


class _Steps:
    """An episode's steps: observations out, the agent's calls in."""

    def __init__(
        self,
        world: ToolWorld,
        task: Any,
        tools: Sequence[Mapping[str, Any]],
        max_steps: int,
        finish_tool: str,
    ) -> None:
        self._world, self._task, self._tools = world, task, tools
        self._max_steps, self._finish_tool = max_steps, finish_tool
        self._step = 0
        self._last: dict[str, Any] | None = None

    def observations(self) -> Iterator[dict[str, Any]]:
        while self._step < self._max_steps:
            yield {"task": self._task, "tools": self._tools, "step": self._step, "last": self._last}

    def take(self, action: Any) -> bool:
        tool, arguments, problem = read_call(action)
        if problem is None:
            event = self._world.call(tool, arguments)
        else:  # never run: a bare "finish" must not end the episode as if finished
            event = self._world.reject_call(tool, arguments, "invalid_action", problem)
        self._step += 1
        self._last = {key: event[key] for key in ("tool", "status", "result", "error")}
        return bool(event["tool"] == self._finish_tool and event["status"] == "ok")


_CALL_SHAPE = '{"tool": NAME, "arguments": {...}}'


def read_call(action: Any) -> tuple[Any, Any, str | None]:
    """``(tool, arguments, problem)`` of what the agent returned: the call to make when
    ``problem`` is ``None`` (``arguments`` left out is a call without arguments, and
    ``null`` too, as the world reads it), else the tool named (``""`` if none) and what
    to log as the rejected call. Never raises: the action is the agent's object, whose
    ``keys``/``__getitem__``/``__eq__`` may raise or lie, so it is read exactly once
    (each listed field once) and every decision and the call use that one reading."""
    try:
        return _read_call(action)
    except Exception as exc:  # the agent's code, run by reading its call
        problem = f"the call cannot be read ({describe(exc)}): return {_CALL_SHAPE}"
        return "", {"$unreadable": safe_repr(action)}, problem


def _read_call(action: Any) -> tuple[Any, Any, str | None]:
    if not isinstance(action, Mapping):
        problem = f"the agent returned a {type(action).__name__}, not a call: return {_CALL_SHAPE}"
        return "", action, problem
    pairs = [(key, action[key]) for key in list(action)]
    fields = {
        name: value
        for name, value in ((plain_name(key), value) for key, value in pairs)
        # By type first: a str subclass's own __eq__ must not decide what "tool" is.
        if type(name) is str and name in ("tool", "arguments")
    }
    # Shown by repr, sorted: keys may be of mixed types, unhashable or unprintable.
    extra = sorted(safe_repr(key, 80) for key, _ in pairs if plain_name(key) not in fields)
    tool = plain_name(fields.get("tool"))
    if type(tool) is not str:
        return "", _logged(pairs), f'the call has no string "tool" field: return {_CALL_SHAPE}'
    if extra:
        # A misspelt "args" would otherwise be dropped and the tool run without the
        # arguments the agent meant to send.
        return (
            tool,
            _logged(pairs),
            (
                f'the call has unknown fields [{", ".join(extra)}]; only "tool" and '
                '"arguments" are allowed'
            ),
        )
    return tool, fields.get("arguments", {}), None


def _logged(pairs: list[tuple[Any, Any]]) -> Any:
    """The rejected call as read, for the log (a list of pairs if keys are unhashable)."""
    try:
        return dict(pairs)
    except TypeError:
        return pairs


def tool_world_trial(
    episode: ToolEpisode,
    checks: Sequence[OutcomeCheck],
    repeat: int = 0,
    *,
    finish_tool: str = "finish",
) -> Trial:
    """The kit's trial plus a coverage issue when the log does not end with a successful
    ``finish_tool`` call (the agent hit the step limit: merged into the kit's line for
    that ending; a crash is the kit's issue, which names the exception), or when the
    agent tried a write tool after it."""
    actions = episode.actions
    writes = frozenset(episode.manifest.get("writes", ()))
    done = [i for i, e in enumerate(actions) if e["tool"] == finish_tool and e["status"] == "ok"]
    if done:
        trial = episode_trial(episode, checks, repeat)
        # Calls after the finish are refused (the world has ended) and change nothing: a
        # read is harmless, but a write attempt means "done" was not the agent's last
        # word (without the kit's guard it would have landed), so it is not accepted.
        late = [e for e in actions[done[0] + 1 :] if e["tool"] in writes]
        if not late:
            return trial
        issue = (
            f"the agent finished at step {actions[done[0]]['step']}, then tried "
            f"{late[0]['tool']} at step {late[0]['step']} (refused: nothing changed)"
        )
        return replace(trial, coverage_issues=(*trial.coverage_issues, issue))
    if episode.manifest.get("ending") == "agent_error":
        # The kit's issue names the agent's exception ("ended with agent_error: ..."):
        # a second, generic one would count one cause twice.
        return episode_trial(episode, checks, repeat)
    # An action that named no tool (a bare string, a list) is logged under "": shown as
    # such, not as "()".
    last = (
        f"after step {actions[-1]['step']} ({actions[-1]['tool'] or 'an invalid action'})"
        if actions
        else "before its first call"
    )
    if declares_unfinished(episode.manifest):
        # The kit's issue says the declared ending (step_limit): one line for one cause,
        # which also says where the episode stopped.
        return episode_trial(episode, checks, repeat, stopped_at=last)
    trial = episode_trial(episode, checks, repeat)
    issue = f"the episode ended {last} without a successful {finish_tool} call"
    return replace(trial, coverage_issues=(*trial.coverage_issues, issue))
