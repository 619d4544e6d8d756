"""The ledger experiment's ``summary.json`` (``onrecord.ledger-summary/v1``) checked field
by field, then for figures that follow from one another, before anything reads it:
``onrecord verify`` and ``show`` of the file, and ``analyze_ledger_dir``.

Its digest is recomputed by whoever edits it, so a forged summary verifies as far as its
fields are checked. ``ablation: 5`` verified, then ``show`` failed with a TypeError
traceback; an ablation row, ``ok``, ``complete``, a digest or a classic run's
``expected`` were not checked at all. Each field is now refused naming it and what it
must be; an ablation row must count the complete episodes listed, and name them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord._record_fields import is_count, is_digest, must_be
from onrecord.domains.ledger._checks import GRADERS

__all__ = ["summary_problem"]

_FIELDS = ("schema", "episodes", "classic", "ablation", "ok", "digest")
_VERDICTS = ("accept", "reject", "indeterminate")
_VERDICT = "accept, reject or indeterminate"
_EDITED = (
    "it was changed after the experiment saved it; restore it or run `onrecord ledger run` again"
)


def _is_verdict(value: Any) -> bool:
    return isinstance(value, str) and value in _VERDICTS


def _is_name(value: Any) -> bool:
    """A folder name under ``runs/`` or ``classic/``: nothing that leads elsewhere."""
    return (
        isinstance(value, str)
        and value not in ("", ".", "..")
        and not any(sep in value for sep in ("/", "\\", "\0"))
    )


def _is_decisions(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and sorted(value) == sorted(GRADERS)
        and all(_is_verdict(verdict) for verdict in value.values())
    )


_EPISODE: dict[str, tuple[str, Any]] = {
    "name": ("a folder name under runs/", _is_name),
    "variant": ("text", lambda v: isinstance(v, str)),
    "seed": ("a whole number, 0 or more", is_count),
    "attempt": ("a whole number, 1 or more", lambda v: is_count(v) and v >= 1),
    "decisions": (
        f"an object of each grader's verdict ({', '.join(GRADERS)}: {_VERDICT})",
        _is_decisions,
    ),
    "expected": (_VERDICT, _is_verdict),
    "complete": ("true or false", lambda v: isinstance(v, bool)),
    "evidence_digest": ("a sha256 digest (64 hex digits)", is_digest),
    "report_digest": ("a sha256 digest (64 hex digits)", is_digest),
}
_CLASSIC: dict[str, tuple[str, Any]] = {
    "name": ("a folder name under classic/", _is_name),
    "decision": (_VERDICT, _is_verdict),
    "expected": (_VERDICT, _is_verdict),
}


def summary_problem(summary: Mapping[str, Any]) -> str | None:
    """What makes a (digest-valid, perhaps hand-made) summary unusable, naming the field
    and what it must be; None when every field is as ``save_ledger_result`` writes it."""
    if sorted(summary) != sorted(_FIELDS):
        return (
            f"a ledger summary has exactly the fields {', '.join(_FIELDS)}, not "
            f"{', '.join(sorted(map(str, summary)))}; {_EDITED}"
        )
    for key, fields in (("episodes", _EPISODE), ("classic", _CLASSIC)):
        problem = _rows_problem(key, summary[key], fields)
        if problem is not None:
            return f"{problem}; {_EDITED}"
    problem = _ablation_problem(summary)
    return None if problem is None else f"{problem}; {_EDITED}"


def _rows_problem(key: str, rows: Any, fields: Mapping[str, tuple[str, Any]]) -> str | None:
    if not isinstance(rows, list):
        return must_be(key, "a list", rows)
    names = []
    for index, row in enumerate(rows):
        where = f"{key}[{index}]"
        if not isinstance(row, dict) or sorted(row) != sorted(fields):
            return must_be(where, f"an object of exactly {', '.join(fields)}", row)
        for field, (must, ok) in fields.items():
            if not ok(row[field]):
                return must_be(f"{where}.{field}", must, row[field])
        names.append(row["name"])
        if key == "episodes":
            name = f"{row['variant']}-seed{row['seed']}-attempt{row['attempt']}"
            if row["name"] != name:
                return must_be(
                    f"{where}.name", f"{name!r} (its variant, seed and attempt)", row["name"]
                )
    twice = sorted({name for name in names if names.count(name) > 1})
    return f"'{key}' lists {twice[0]!r} more than once" if twice else None


def _ablation_problem(summary: Mapping[str, Any]) -> str | None:
    """The ablation's rows, one per grader, each within what the episodes listed allow,
    and ``ok``. Not whether they are what the episodes' decisions give: a decision
    edited in the summary is told by the ``decision.json`` it no longer equals (``verify``)
    and the ablation recomputed from the evidence (``analyze_ledger_dir``)."""
    rows, graders = summary["ablation"], list(GRADERS)
    if not isinstance(rows, list) or len(rows) != len(graders):
        must = f"a list of {len(graders)} rows, one per grader ({', '.join(graders)})"
        return must_be("ablation", must, rows)
    complete = [row["name"] for row in summary["episodes"] if row["complete"]]
    for index, (row, grader) in enumerate(zip(rows, graders, strict=True)):
        where = f"ablation[{index}]"
        if not isinstance(row, dict) or sorted(row) != sorted(_ABLATION_ROW):
            return must_be(where, f"an object of exactly {', '.join(_ABLATION_ROW)}", row)
        accepted, violating = row["accepted"], row["violating"]
        checks = (
            ("grader", repr(grader), row["grader"] == grader),
            (
                "episodes",
                f"{len(complete)} (the complete episodes)",
                _same(row["episodes"], len(complete)),
            ),
            (
                "accepted",
                f"a whole number from 0 to {len(complete)}",
                is_count(accepted) and accepted <= len(complete),
            ),
            (
                "violating",
                "a list of complete episodes' names, each once",
                _names_among(violating, complete),
            ),
        )
        for field, must, ok in checks:
            if not ok:
                return must_be(f"{where}.{field}", must, row[field])
        if len(violating) > accepted:
            must = f"at most {accepted} (its accepted) complete episodes' names"
            return must_be(f"{where}.violating", must, violating)
        if not _same(row["accepted_violating"], len(violating)):
            must = f"{len(violating)} (its violating episodes)"
            return must_be(f"{where}.accepted_violating", must, row["accepted_violating"])
    if not isinstance(summary["ok"], bool):
        return must_be("ok", "true or false (every decision is the one required)", summary["ok"])
    return None


_ABLATION_ROW = ("grader", "episodes", "accepted", "accepted_violating", "violating")


def _names_among(value: Any, names: Sequence[str]) -> bool:
    return (
        isinstance(value, list)
        and all(isinstance(name, str) and name in names for name in value)
        and len(set(value)) == len(value)
    )


def _same(saved: Any, value: Any) -> bool:
    """Equal and of the same kind: ``true`` is not the count 1."""
    return type(saved) is type(value) and saved == value
