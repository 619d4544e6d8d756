"""``ToolWorldEnv``: a ``gymnasium.Env`` over a tool world, with JSON text actions and
observations. Grade episodes with checks over saved evidence, not with rewards."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import gymnasium
from gymnasium import spaces

from onrecord.case import EvalCase
from onrecord.envkit.world import ToolWorld
from onrecord.errors import InputError

__all__ = ["ACTION_CHARSET", "CHARSET", "ToolWorldEnv"]

CHARSET = "".join(chr(code) for code in range(32, 127))
"""Printable ASCII: observations are JSON with non-ASCII characters escaped."""
ACTION_CHARSET = CHARSET + "\t\n\r"
"""What an action's text may hold: printable ASCII and JSON's whitespace, i.e. any JSON
text with non-ASCII characters written as ``\\u`` escapes (as ``json.dumps`` does)."""
_ACTION_CHARS = frozenset(ACTION_CHARSET)

_MIN_TEXT = 512
"""Smallest ``max_text``: the notice that replaces a too-long observation must fit."""


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":"))


class ToolWorldEnv(gymnasium.Env[str, str]):
    """Actions: ``{"tool": name, "arguments": {...}}`` as JSON text (or a dict).
    Observations: JSON text of ``{"step", "state_version", "status", "result", "error"}``;
    the reset observation lists the tools and the task. ``finish_tool`` ends the episode."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium convention

    def __init__(
        self,
        world: ToolWorld,
        *,
        case: EvalCase | None = None,
        finish_tool: str = "finish",
        max_text: int = 65536,
        max_action_text: int = 4096,
        max_steps: int | None = None,
    ) -> None:
        if not isinstance(world, ToolWorld):
            raise InputError(f"ToolWorldEnv needs a ToolWorld, got {type(world).__name__}")
        if case is not None and not isinstance(case, EvalCase):
            raise InputError(
                f"ToolWorldEnv case must be an EvalCase or None, got {type(case).__name__}"
            )
        if not isinstance(finish_tool, str) or not finish_tool:
            raise InputError(
                f"ToolWorldEnv finish_tool must be a non-empty tool name, got {finish_tool!r}"
            )
        # The notice that replaces a too-long observation must itself fit max_text, or
        # an observation would fall outside observation_space.
        _require_length("max_text", max_text, _MIN_TEXT)
        _require_length("max_action_text", max_action_text, 1)
        if max_steps is not None:
            _require_length("max_steps", max_steps, 1)
        self.world = world
        self.case = case
        self.finish_tool = finish_tool
        self.max_text = max_text
        self.max_action_text = max_action_text
        self.max_steps = max_steps
        """Steps after which the env truncates the episode and declares ``step_limit``."""
        self._steps = 0
        self.action_space = spaces.Text(
            max_length=max_action_text, min_length=0, charset=ACTION_CHARSET
        )
        self.observation_space = spaces.Text(max_length=max_text, min_length=0, charset=CHARSET)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        run_id = _run_id(options)  # refused before anything changes
        super().reset(seed=seed)
        episode_seed = seed if seed is not None else int(self.np_random.integers(2**31))
        self.world.reset(seed=episode_seed, case=self.case, run_id=run_id)
        self._steps = 0
        tools = self.world.tool_schemas()
        if self.finish_tool not in self.world.tools:
            tools.append(
                {
                    "name": self.finish_tool,
                    "description": "End the episode.",
                    "parameters": {
                        "type": "object",
                        "properties": {},
                        "additionalProperties": False,
                    },
                }
            )
        task = None if self.case is None else self.case.input
        return self._observe({"step": 0, "state_version": 0, "tools": tools, "task": task}), {
            "state_version": 0
        }

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._steps += 1
        outside = _outside_space(action, self.max_action_text)
        if outside is not None:  # refused whole, as the action space says
            event = self.world.reject_call("", action, "invalid_action", outside)
            return self._answer(event, finished=False)
        tool, arguments, problem = _parse(action)
        builtin_finish = (
            tool == self.finish_tool
            and tool not in self.world.tools
            and problem is None
            and not self.world.ended  # after the end it is refused like any call
        )
        if builtin_finish and arguments not in (None, {}):
            # The built-in finish takes no arguments; anything else is a malformed call.
            event = self.world.reject_call(
                tool,
                arguments,
                "invalid_arguments",
                f"{tool}: the built-in {tool!r} takes no arguments; send "
                f'{{"tool": "{tool}"}} or {{"tool": "{tool}", "arguments": {{}}}}',
            )
            return self._answer(event, finished=False)
        if builtin_finish:
            self.world.end_episode("finished")
            info = {"state_version": self.world.state_version, "finished": True}
            return (
                self._observe(
                    {
                        "step": self.world.step,
                        "status": "finished",
                        "state_version": self.world.state_version,
                    }
                ),
                0.0,
                True,
                False,
                info,
            )
        if problem is not None:
            event = self.world.reject_call(tool, arguments, "invalid_action", problem)
        else:
            # Also the built-in finish after the episode ended: refused (episode_ended)
            # and logged like any call then, so the ending declared (step_limit, ...)
            # is never overwritten with "finished".
            event = self.world.call(tool, arguments)
        # A world may declare its own finish tool (e.g. one carrying a message).
        return self._answer(event, finished=tool == self.finish_tool and event["status"] == "ok")

    def _answer(
        self, event: dict[str, Any], *, finished: bool
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        shown = {key: event[key] for key in ("step", "state_version", "status", "result", "error")}
        info = {"state_version": event["state_version"], "status": event["status"]}
        if finished:
            self.world.end_episode("finished")
        # A step refused because the episode had ended reports the end again, so an
        # agent looping until `terminated` stops instead of being refused forever.
        terminated = self.world.ended
        truncated = not terminated and self.max_steps is not None and self._steps >= self.max_steps
        if truncated:  # told to the world, so the saved episode records why it ended
            self.world.end_episode("step_limit")
        return self._observe(shown), 0.0, terminated, truncated, info

    def _observe(self, value: dict[str, Any]) -> str:
        text = _text(value)
        if len(text) <= self.max_text:
            return text
        # Say what became of the call: an agent told only "too long" could repeat a
        # write that succeeded.
        status = value.get("status")
        return _text(
            {
                "step": value.get("step"),
                "state_version": value.get("state_version"),
                "status": "too_long",
                "error": f"the call's status is {str(status)[:16]!r}, but its observation "
                f"has {len(text)} characters, more than max_text={self.max_text}; ask "
                "for less at a time",
            }
        )


def _require_length(field: str, value: Any, least: int) -> None:
    if type(value) is not int or value < least:
        raise InputError(f"ToolWorldEnv {field} must be an int of at least {least}, got {value!r}")


def _outside_space(action: Any, max_length: int) -> str | None:
    """Why a text action lies outside the action space (too long, or a character that
    is not ``ACTION_CHARSET``), or None. A dict action is a harness's convenience and
    has no text to measure."""
    if not isinstance(action, str):
        return None
    if len(action) > max_length:
        return (
            f"the action has {len(action)} characters, more than max_action_text="
            f"{max_length}; send less at a time"
        )
    if _ACTION_CHARS.issuperset(action):
        return None
    at, char = next((i, c) for i, c in enumerate(action) if c not in _ACTION_CHARS)
    return (
        f"the action holds {char!r} (U+{ord(char):04X}) at position {at}; actions are "
        "ASCII JSON text: write other characters inside strings as \\u escapes (e.g. "
        '"caf\\u00e9"), as json.dumps does by default'
    )


def _run_id(options: Any) -> str | None:
    """The ``run_id`` option; the only option there is."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InputError(
            f"reset options must be a dict such as {{'run_id': 'run-1'}} or None, "
            f"got {type(options).__name__}"
        )
    unknown = sorted(map(repr, set(options) - {"run_id"}))
    if unknown:
        raise InputError(f"reset options {unknown} are unknown; the only option is 'run_id'")
    run_id = options.get("run_id")
    if run_id is not None and not isinstance(run_id, str):
        raise InputError(f"reset option 'run_id' must be a string or None, got {run_id!r}")
    return run_id


class _DuplicateKey(ValueError):
    """A JSON object names a key twice (``json`` would keep the last one silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Which value the agent meant is unknowable, and the log would show only one.
    built = dict(pairs)
    if len(built) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return built


def _parse(action: Any) -> tuple[str, Any, str | None]:
    """(tool, arguments, problem) from JSON text or a dict."""
    if isinstance(action, str):
        try:
            action = json.loads(action, object_pairs_hook=_unique_keys)
        except _DuplicateKey as exc:
            return "", action, f"the action is ambiguous: {exc}; send each field once"
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
            return (
                "",
                action,
                (f'the action is not JSON ({exc}); send {{"tool": NAME, "arguments": {{...}}}}'),
            )
    if not isinstance(action, dict) or not isinstance(action.get("tool"), str):
        return (
            "",
            action,
            (
                'the action must be a JSON object with a "tool" name, e.g. '
                '{"tool": "lookup", "arguments": {"id": 1}}'
            ),
        )
    # Sorted by repr: a dict action may hold keys of mixed types, which do not compare.
    extra = sorted(set(action) - {"tool", "arguments"}, key=repr)
    if extra:
        return (
            action["tool"],
            action,
            (f'the action has unknown fields {extra}; only "tool" and "arguments" are allowed'),
        )
    return action["tool"], action.get("arguments", {}), None
