# ruff: noqa: E501
"""The world-model seed document's example, with ``multivon_eval`` renamed ``onrecord``,
runs as written."""

from __future__ import annotations

import contextlib
import io


def test_seed_world_model_example_runs_verbatim() -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        # fmt: off
        # --- from the seed, renamed ---
        import gymnasium as gym

        from onrecord import EvalCase
        from onrecord.dynamics import capture_forecast
        from onrecord.dynamics_metrics import forecast_metrics
        from onrecord.integrations.gymnasium import capture_episode

        actions = [0, 1, 0, 1]  # fix the complete plan before executing the reference
        holder = {}

        def factory():  # type: ignore[no-untyped-def]
            holder["env"] = gym.make("CartPole-v1")
            return holder["env"]

        def interact(env, observation, info):  # type: ignore[no-untyped-def]
            for action in actions:
                _, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    break

        reference = capture_episode(
            factory, interact,
            case=EvalCase("Predict these CartPole actions", case_id="cartpole:7", source_id="seed:7"),
            environment_id="CartPole-v1/native", observer_id="native-state/v1",
            observe=lambda: {"state": list(holder["env"].unwrapped.state)},
            seed=7, max_steps=len(actions),
        )

        def persistence(request):  # type: ignore[no-untyped-def]
            return {"states": [list(request["initial_state"]) for _ in request["actions"]]}

        forecast = capture_forecast(
            reference, persistence, model_id="persistence/v1", contract="cartpole-vector/v1",
            coordinates={"x": "m", "velocity": "m/s", "angle": "rad", "angular_velocity": "rad/s"},
            horizons=[1, 4], planned_actions=actions,
        )
        print(forecast_metrics(forecast))
        # --- end of the seed's code ---
        # fmt: on
    assert forecast.status == "ok"
    assert forecast.action_scope == "planned"
    assert "velocity h1" in printed.getvalue()
