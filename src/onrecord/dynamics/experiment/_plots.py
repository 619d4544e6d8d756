"""The experiment's PNG plots (matplotlib, imported only here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from onrecord.errors import InputError

__all__ = ["write_plots"]


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plots need matplotlib: pip install 'onrecord[plot]'") from None
    return plt


def write_plots(directory: Path, tables: dict[str, Any]) -> list[Path]:
    """Error against horizon (with denominators), coverage against width, a reliability
    diagram and closed-loop steps per model."""
    plt = _pyplot()
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, draw in (
        ("error_vs_horizon", _error_vs_horizon),
        ("coverage_vs_width", _coverage_vs_width),
        ("reliability", _reliability),
        ("closed_loop", _closed_loop),
    ):
        figure = draw(plt, tables)
        path = directory / f"{name}.png"
        # A fixed date keeps PNG bytes reproducible run to run.
        figure.savefig(path, dpi=90, metadata={"Software": None, "CreationDate": None})
        plt.close(figure)
        paths.append(path)
    return paths


def _label(model: str, table: dict[str, Any]) -> str:
    """The model's name, and how many forecasts failed when some did.

    The ``n=`` denominators drawn on the error plot are the first model's; a model that
    failed on some references is plotted over the others only, which its legend says.
    """
    failed = table.get("model_errors") or 0
    return f"{model} ({failed} of {table['forecasts']} failed)" if failed else model


def _rows(table: dict[str, Any], coordinate: str) -> list[dict[str, Any]]:
    return [r for r in table["rows"] if r["coordinate"] == coordinate]


def _error_vs_horizon(plt: Any, tables: dict[str, Any]) -> Any:
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    for axis, coordinate in zip(axes, ("cart_velocity", "pole_angle"), strict=True):
        for model, table in tables["heldout_metrics"].items():
            # None (nothing measured) and "Infinity" (see portable_number) cannot be drawn.
            rows = [r for r in _rows(table, coordinate) if isinstance(r["mae"], float)]
            axis.plot(
                [r["horizon"] for r in rows],
                [max(r["mae"], 1e-12) for r in rows],
                marker="o",
                label=_label(model, table),
            )
        rows = _rows(next(iter(tables["heldout_metrics"].values())), coordinate)
        for r in rows:
            axis.annotate(
                f"n={r['measured']}/{r['denominator']}",
                (r["horizon"], 1e-10),
                fontsize=7,
                ha="center",
            )
        axis.set(
            xscale="log",
            yscale="log",
            xlabel="horizon (steps)",
            ylabel=f"MAE ({rows[0]['unit']})",
            title=coordinate,
        )
    axes[0].legend(fontsize=7)
    figure.tight_layout()
    return figure


def _coverage_vs_width(plt: Any, tables: dict[str, Any]) -> Any:
    figure, axis = plt.subplots(figsize=(6, 4))
    for model, table in tables["heldout_metrics"].items():
        rows = [
            r
            for r in _rows(table, "cart_velocity")
            if r["coverage_90"] is not None and isinstance(r["width_90"], float)
        ]
        if rows:
            axis.plot(
                [r["width_90"] for r in rows],
                [r["coverage_90"] for r in rows],
                marker="o",
                label=_label(model, table),
            )
    axis.axhline(0.9, color="grey", linestyle="--", linewidth=0.8)
    axis.set(
        xscale="log",
        xlabel="mean 90% interval width (m/s)",
        ylabel="observed coverage",
        title="cart_velocity: coverage beside width",
    )
    axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


def _reliability(plt: Any, tables: dict[str, Any]) -> Any:
    figure, axis = plt.subplots(figsize=(5, 5))
    levels = [50, 80, 90, 95]
    for model, table in tables["heldout_metrics"].items():
        rows = [r for r in table["rows"] if r["coverage_90"] is not None]
        if not rows:
            continue
        observed = [sum(r[f"coverage_{lv}"] for r in rows) / len(rows) for lv in levels]
        axis.plot([lv / 100 for lv in levels], observed, marker="o", label=_label(model, table))
    axis.plot([0.4, 1], [0.4, 1], color="grey", linestyle="--", linewidth=0.8)
    axis.set(
        xlabel="nominal level", ylabel="observed coverage (mean over cells)", title="reliability"
    )
    axis.legend(fontsize=7)
    figure.tight_layout()
    return figure


def _closed_loop(plt: Any, tables: dict[str, Any]) -> Any:
    figure, axis = plt.subplots(figsize=(8, 4))
    rows = tables["closed_loop"]
    # A model whose runs failed has no return (drawn as an empty slot); one seed has none
    # of the intervals (no error bar).
    names = [r["model_id"] + (" (failed runs)" if r.get("failed_runs") else "") for r in rows]
    means = [r["mean_return"] if r["mean_return"] is not None else 0.0 for r in rows]
    low = [
        m - r["return_ci"][0] if r["return_ci"] else 0.0 for m, r in zip(means, rows, strict=True)
    ]
    high = [
        r["return_ci"][1] - m if r["return_ci"] else 0.0 for m, r in zip(means, rows, strict=True)
    ]
    axis.bar(range(len(rows)), means, yerr=[low, high], capsize=4)
    axis.set_xticks(range(len(rows)), names, rotation=25, ha="right", fontsize=7)
    axis.set(ylabel="return (95% bootstrap interval)", title="closed loop, same planner")
    figure.tight_layout()
    return figure
