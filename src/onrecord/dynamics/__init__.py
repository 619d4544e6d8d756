"""World-model evaluation: forecasts bound to actual transitions, and decision usefulness.

Capture (``capture_forecast``, ``capture_forecasts``) binds a model's forecast of an
actual reference episode to that episode by digest. Scoring lives in
``onrecord.dynamics_metrics``. The shipped models, controls and planners measure whether a
model responds to actions, keeps state, knows its uncertainty, and helps a planner in
fresh real environments.
"""

from onrecord.dynamics._batch import batch_predictor, capture_forecasts, request_predictor
from onrecord.dynamics._capture import capture_forecast
from onrecord.dynamics._closed_loop import ClosedLoopRun, load_runs, run_closed_loop, save_runs
from onrecord.dynamics._closed_loop_stats import closed_loop_summary, prediction_gap
from onrecord.dynamics._controls import EffectTable, PairedReference, capture_pairs, effect_table
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
