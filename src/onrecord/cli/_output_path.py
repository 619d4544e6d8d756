"""Where an output option (``-o``, ``--json``, ``--html``, ``--output``) may write: never
over a saved record, onto a directory, into a directory whose manifest lists every file,
or into a run's ``regrades`` folder as a directory that is not a regrade."""

from __future__ import annotations

from pathlib import Path

import orjson

from onrecord._listed_folders import refuse_inside_listed_folder
from onrecord.cli._decisions import COMPARISON_SCHEMA, DECISION_SCHEMA
from onrecord.errors import InputError

__all__ = ["output_path"]

_INDEX_FILES = ("run.json", "changes.json", "manifest.json")


def output_path(path: str | Path, option: str, *, views: tuple[str, ...] = (".html",)) -> Path:
    """Where an output option (``-o``, ``--json``, ``--html``, ``--output``) may write.
    Never over a saved record: ``onrecord report RUN -o RUN/report.json`` (meant:
    ``--json``) replaced the run's report with HTML, and nothing re-creates it. Nor onto
    a directory, which failed naming a temporary file. A file in a run or regrade
    directory is replaced only when its suffix is one of ``views`` (what the option
    writes, a file no run record has)."""
    if str(path) == "-":
        # Only the options that print a document take "-" (they handle it before this):
        # `report -o -` and `compare --html -` wrote a file named "-" in the working
        # directory, and a `> page.html` redirect got nothing.
        raise InputError(f"{option} -: this option writes a file, not stdout; give a file name")
    if str(path) == "":
        # `--markdown "$GITHUB_STEP_SUMMARY"` outside GitHub Actions: it said
        # "--markdown  is a directory" (Path("") is the working directory).
        raise InputError(
            f"{option} was given an empty file name (an unset variable, such as "
            "$GITHUB_STEP_SUMMARY outside GitHub Actions?); give a file name"
        )
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{option} {path} is a directory; give a file name inside it")
    blocker = _file_in_the_way(target.absolute().parent)
    if blocker is not None:  # else it failed on writing, with "nasty.json: File exists"
        raise InputError(
            f"{option} {path}: {blocker} is a file, not a directory, so nothing can be "
            "written under it; give a path whose folders are directories (or do not exist)"
        )
    _refuse_inside_regrades(target, option)
    refuse_inside_listed_folder(target, option)
    if not target.is_file():
        return target
    in_records = any((target.parent / name).is_file() for name in _INDEX_FILES)
    if (in_records and target.suffix.lower() not in views) or _is_record(target):
        raise InputError(f"{option} {path} would overwrite a saved record; give another file name")
    return target


def _file_in_the_way(folder: Path) -> Path | None:
    """The nearest existing ancestor of ``folder`` (itself included) when it is not a
    directory: ``mkdir -p`` would fail there."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


# What `gate --output` and `compare --json` write: made again by running the command
# again, which may replace them.
_REMADE = frozenset({DECISION_SCHEMA, COMPARISON_SCHEMA})


def _is_record(path: Path) -> bool:
    """Whether ``path`` starts with a saved onrecord record (a digest-carrying object)
    that no output option writes."""
    with path.open("rb") as handle:
        first = handle.readline(1 << 26)
    try:
        data = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return (
        isinstance(data, dict)
        and "digest" in data
        and str(data.get("schema", "")).startswith("onrecord.")
        and data.get("schema") not in _REMADE
    )


def _refuse_inside_regrades(output: Path, option: str) -> None:
    """``--output RUN/regrades/NEW/decision.json`` created a directory among the run's
    regrades that is not one (no changes.json): ``onrecord verify RUN`` failed from then
    on. Writing into an existing regrade directory is allowed, like beside a run."""
    folder = output.absolute().parent
    for inner, regrades in zip((folder, *folder.parents), folder.parents, strict=False):
        if regrades.name == "regrades" and (regrades.parent / "run.json").is_file():
            if not (inner / "changes.json").is_file():
                raise InputError(
                    f"{option} {output}: {inner} is not a regrade of the run {regrades.parent}"
                    "; a directory there would make the run fail verification; write it "
                    "elsewhere"
                )
            return
