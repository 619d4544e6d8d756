"""``ToolWorldEnv``: a ``gymnasium.Env`` over a tool world, with JSON text actions and
observations. Grade episodes with checks over saved evidence, not with rewards."""

from __future__ import annotations

import json
from typing import Any

import gymnasium
from gymnasium import spaces

from onrecord.case import EvalCase
from onrecord.envkit.world import ToolWorld

__all__ = ["CHARSET", "ToolWorldEnv"]

CHARSET = "".join(chr(code) for code in range(32, 127))
"""Printable ASCII: observations are JSON with non-ASCII characters escaped."""


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
    ) -> None:
        self.world = world
        self.case = case
        self.finish_tool = finish_tool
        self.max_text = max_text
        self.action_space = spaces.Text(max_length=max_action_text, min_length=0, charset=CHARSET)
        self.observation_space = spaces.Text(max_length=max_text, min_length=0, charset=CHARSET)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        episode_seed = seed if seed is not None else int(self.np_random.integers(2**31))
        run_id = (options or {}).get("run_id")
        self.world.reset(seed=episode_seed, case=self.case, run_id=run_id)
        tools = self.world.tool_schemas()
        if self.finish_tool not in self.world.tools:
            tools.append(
                {
                    "name": self.finish_tool,
                    "description": "End the episode.",
                    "parameters": {"type": "object", "properties": {}},
                }
            )
        task = None if self.case is None else self.case.input
        return self._observe({"step": 0, "state_version": 0, "tools": tools, "task": task}), {
            "state_version": 0
        }

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        tool, arguments, problem = _parse(action)
        if tool == self.finish_tool and tool not in self.world.tools and problem is None:
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
            event = self.world.call(tool, arguments)
        shown = {key: event[key] for key in ("step", "state_version", "status", "result", "error")}
        info = {"state_version": event["state_version"], "status": event["status"]}
        # A world may declare its own finish tool (e.g. one carrying a message).
        finished = tool == self.finish_tool and event["status"] == "ok"
        if finished:
            self.world.end_episode("finished")
        return self._observe(shown), 0.0, finished, False, info

    def _observe(self, value: dict[str, Any]) -> str:
        text = _text(value)
        if len(text) <= self.max_text:
            return text
        return _text(
            {
                "step": value.get("step"),
                "status": "too_long",
                "error": f"the observation has {len(text)} characters, more than "
                f"max_text={self.max_text}; ask for less at a time",
            }
        )


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
        except ValueError as exc:
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
    extra = sorted(set(action) - {"tool", "arguments"})
    if extra:
        return (
            action["tool"],
            action,
            (f'the action has unknown fields {extra}; only "tool" and "arguments" are allowed'),
        )
    return action["tool"], action.get("arguments", {}), None
