"""World-model evaluation: forecasts bound to actual transitions, and decision usefulness.

Capture (``capture_forecast``, ``capture_forecasts``) binds a model's forecast of an
actual reference episode to that episode by digest. Scoring lives in
``onrecord.dynamics_metrics``. The shipped models, controls and planners measure whether a
model responds to actions, keeps state, knows its uncertainty, and helps a planner in
fresh real environments.
"""

# The names below are imported on first use (PEP 562): the commands that read records
# (``onrecord verify``, ``gate``, ``show``, ``compare``) import ``ForecastEvidence`` to
# recognise forecast records, and importing every name here loaded gymnasium and the
# simulators (~60 ms) for it.
# ``TYPE_CHECKING = False`` as in ``onrecord/__init__``: the same to type checkers.
from onrecord._lazy import lazy_attributes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from onrecord.dynamics._batch import batch_predictor, capture_forecasts, request_predictor
    from onrecord.dynamics._capture import capture_forecast
    from onrecord.dynamics._closed_loop import ClosedLoopRun, load_runs, run_closed_loop, save_runs
    from onrecord.dynamics._closed_loop_stats import closed_loop_summary, prediction_gap
    from onrecord.dynamics._controls import (
        EffectTable,
        PairedReference,
        capture_pairs,
        effect_table,
    )
    from onrecord.dynamics._envs import (
        SIMULATORS,
        Coordinate,
        Simulator,
        StateResetWrapper,
        get_simulator,
    )
    from onrecord.dynamics._evidence import (
        FORECAST_SCHEMA,
        ForecastEvidence,
        load_forecasts,
        save_forecasts,
    )
    from onrecord.dynamics._models import (
        BayesianLinearModel,
        BootstrapEnsembleModel,
        PersistenceModel,
        RandomModel,
    )
    from onrecord.dynamics._oracle import OracleModel
    from onrecord.dynamics._planners import (
        CrossEntropyPlanner,
        ExhaustivePlanner,
        NonFinitePrediction,
        PlanChoice,
        Planner,
        RandomShootingPlanner,
        score_plans,
    )
    from onrecord.dynamics._protocol import Prediction, Transitions, WorldModel
    from onrecord.dynamics._references import capture_plan, random_plan

__all__ = [
    "FORECAST_SCHEMA",
    "SIMULATORS",
    "BayesianLinearModel",
    "BootstrapEnsembleModel",
    "ClosedLoopRun",
    "Coordinate",
    "CrossEntropyPlanner",
    "EffectTable",
    "ExhaustivePlanner",
    "ForecastEvidence",
    "NonFinitePrediction",
    "OracleModel",
    "PairedReference",
    "PersistenceModel",
    "PlanChoice",
    "Planner",
    "Prediction",
    "RandomModel",
    "RandomShootingPlanner",
    "Simulator",
    "StateResetWrapper",
    "Transitions",
    "WorldModel",
    "batch_predictor",
    "capture_forecast",
    "capture_forecasts",
    "capture_pairs",
    "capture_plan",
    "closed_loop_summary",
    "effect_table",
    "get_simulator",
    "load_forecasts",
    "load_runs",
    "prediction_gap",
    "random_plan",
    "request_predictor",
    "run_closed_loop",
    "save_forecasts",
    "save_runs",
    "score_plans",
]

# Public name -> the module that defines it.
_LAZY = {
    "FORECAST_SCHEMA": "onrecord.dynamics._evidence",
    "SIMULATORS": "onrecord.dynamics._envs",
    "BayesianLinearModel": "onrecord.dynamics._models",
    "BootstrapEnsembleModel": "onrecord.dynamics._models",
    "ClosedLoopRun": "onrecord.dynamics._closed_loop",
    "Coordinate": "onrecord.dynamics._envs",
    "CrossEntropyPlanner": "onrecord.dynamics._planners",
    "EffectTable": "onrecord.dynamics._controls",
    "ExhaustivePlanner": "onrecord.dynamics._planners",
    "ForecastEvidence": "onrecord.dynamics._evidence",
    "NonFinitePrediction": "onrecord.dynamics._planners",
    "OracleModel": "onrecord.dynamics._oracle",
    "PairedReference": "onrecord.dynamics._controls",
    "PersistenceModel": "onrecord.dynamics._models",
    "PlanChoice": "onrecord.dynamics._planners",
    "Planner": "onrecord.dynamics._planners",
    "Prediction": "onrecord.dynamics._protocol",
    "RandomModel": "onrecord.dynamics._models",
    "RandomShootingPlanner": "onrecord.dynamics._planners",
    "Simulator": "onrecord.dynamics._envs",
    "StateResetWrapper": "onrecord.dynamics._envs",
    "Transitions": "onrecord.dynamics._protocol",
    "WorldModel": "onrecord.dynamics._protocol",
    "batch_predictor": "onrecord.dynamics._batch",
    "capture_forecast": "onrecord.dynamics._capture",
    "capture_forecasts": "onrecord.dynamics._batch",
    "capture_pairs": "onrecord.dynamics._controls",
    "capture_plan": "onrecord.dynamics._references",
    "closed_loop_summary": "onrecord.dynamics._closed_loop_stats",
    "effect_table": "onrecord.dynamics._controls",
    "get_simulator": "onrecord.dynamics._envs",
    "load_forecasts": "onrecord.dynamics._evidence",
    "load_runs": "onrecord.dynamics._closed_loop",
    "prediction_gap": "onrecord.dynamics._closed_loop_stats",
    "random_plan": "onrecord.dynamics._references",
    "request_predictor": "onrecord.dynamics._batch",
    "run_closed_loop": "onrecord.dynamics._closed_loop",
    "save_forecasts": "onrecord.dynamics._evidence",
    "save_runs": "onrecord.dynamics._closed_loop",
    "score_plans": "onrecord.dynamics._planners",
}


# ``__getattr__`` is hidden from type checkers, which would take a module ``__getattr__``
# to answer every name (see ``onrecord/__init__``).
_attribute, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
if not TYPE_CHECKING:
    __getattr__ = _attribute
del TYPE_CHECKING, lazy_attributes  # not attributes of the package
