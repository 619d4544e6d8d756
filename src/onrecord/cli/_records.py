"""Open and verify any record onrecord writes, by its schema (files) or layout (dirs).

A file holds one record (episode evidence, a report, a policy, a forecast, a decision, a
comparison, a run's ``run.json`` / ``decision.json``, a regrade's ``changes.json``, a
manifest, ...) or JSON Lines of them (forecasts, episodes, closed-loop records); see
``_record_files``. A directory is a run, a regrade, a saved tool-world episode, an
experiment output directory with a sha256 manifest, or an evidence file's ``.blobs``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from onrecord._canonical import load_record_bytes
from onrecord.cli._bundle import Bundle, digested, named
from onrecord.cli._decision_fields import check_requirement_fields, check_run_decision_fields
from onrecord.cli._decisions import check_decision_body
from onrecord.cli._experiments import check_in_manifest, experiment_root
from onrecord.cli._partial import partial_summary
from onrecord.cli._progress import CountProgress
from onrecord.cli._record_files import KINDS, Listed, verify_file
from onrecord.cli._run_episode import path_word
from onrecord.episode._verify_files import check_entry, read_regular
from onrecord.errors import ConsistencyError, DigestMismatch, InputError, SchemaError
from onrecord.report import EvaluationReport
from onrecord.runner._decided import REGRADE_POLICY, check_decided
from onrecord.runner._graded import Sources, check_graded, graded_trial
from onrecord.runner._regrade_check import check_changes

__all__ = ["Bundle", "directory", "load_any", "named", "run_decision_file"]

_DECISION, _REGRADE = "onrecord.run.decision/v1", "onrecord.run.regrade/v1"
_TOOL_EPISODE, _MANIFEST = "onrecord.envkit.episode/v1", "onrecord.manifest/v1"


def load_any(path: str | Path, progress: CountProgress | None = None) -> Any:
    """Load and verify any onrecord record; errors name the file (and line) at fault.
    ``progress`` counts the episodes of a run directory (nothing else takes long)."""
    target = Path(path)
    if target.is_dir():
        return directory(target, progress)
    if target.suffix == ".jsonl" and (target.parent / "run.json").is_file():
        # A run's log: only verifiable as the whole run
        return directory(target.parent, progress)
    return verify_file(target)


def run_decision_file(path: Path, data: dict[str, Any]) -> Bundle:
    """``RUN/decision.json`` (or a regrade's): digest, and a decision that follows from
    its requirements. Inside its run or regrade directory it is verified as that
    directory is (decided again by the policy, on a report verified against the run's
    records): named on its own it was not decided again, and a decision edited and
    re-sealed verified as a file while the directory holding it was refused. Anywhere
    else (a copy), that it decides the report beside it; the summary says it was not
    decided again."""
    digested(path, data)
    owner = _decision_owner(path)
    if owner is not None:
        directory(owner)  # raises unless the whole run (or regrade), this file too, verifies
        summary = partial_summary(data["decision"]["decision"], data["recorded"], data["expected"])
        return Bundle("run decision", data["digest"], summary, (data,))
    # A copy: nothing decides it again, so every field the summary and `show` print is
    # checked ("True of 2 episodes", "5 of 2" verified as they were re-sealed).
    check_run_decision_fields(path, data)
    decision = data["decision"]
    check_decision_body(path, decision)
    check_requirement_fields(path, decision)
    if data.get("report_digest") != decision["report_digest"]:
        raise ConsistencyError(f"{path} names two reports: it was changed after saving")
    summary = partial_summary(decision["decision"], data["recorded"], data["expected"])
    report = path.with_name("report.json")
    if report.is_file() and EvaluationReport.load(report).digest != data["report_digest"]:
        raise ConsistencyError(f"{path} decides a report other than the report.json beside it")
    summary += (
        "; not decided again: it is not in its run or RUN/regrades/NAME, so only its "
        "digest, its statuses and verdict against its own counts, and any report.json "
        "beside it were checked"
    )
    return Bundle("run decision", data["digest"], summary, (data,))


def _decision_owner(path: Path) -> Path | None:
    """The run or regrade directory a decision.json belongs to (where it really is: a
    link to one is that one), or None for a copy elsewhere or a regrade outside a run."""
    real = path.resolve() if path.is_symlink() else path  # else named as the user gave it
    folder = real.parent
    if real.name != "decision.json":
        return None
    if (folder / "run.json").is_file():
        return folder
    regrades = folder.absolute().parent  # `verify decision.json` inside the regrade too
    inside_run = regrades.name == "regrades" and (regrades.parent / "run.json").is_file()
    return folder if inside_run and (folder / "changes.json").is_file() else None


def directory(path: Path, progress: CountProgress | None = None) -> Bundle:
    """Verify a run, regrade, tool-world episode or experiment output directory, or an
    evidence file's ``.blobs`` folder; ``progress`` counts a run's episodes."""
    # What names the directory's kind is checked as any file inside a record: a FIFO,
    # a device, a link or a directory named manifest.json was "a directory with no
    # run.json, changes.json or manifest.json", which it has.
    if check_entry(path / "run.json"):
        return named(path, lambda: _counted(path, progress))
    if check_entry(path / "changes.json"):
        return named(path, lambda: _regrade_directory(path))
    if check_entry(path / "manifest.json"):
        return named(path, lambda: _manifest_directory(path))
    evidence = path.with_name(path.name.removesuffix(".blobs"))
    if path.name.endswith(".blobs") and evidence.is_file():
        return named(path, lambda: _blobs(path, evidence))
    raise InputError(
        f"{path} is a directory; give the path of a saved record file, or of a run, "
        "regrade, tool-world episode or experiment output directory (this one has no "
        "run.json, changes.json or manifest.json)"
    )


def _blobs(path: Path, evidence: Path) -> Bundle:
    from onrecord.dynamics.experiment._store import load_episodes
    from onrecord.episode import EpisodeEvidence

    # Every blob it references, by sha256 (JSON Lines of episodes: one folder for all).
    if evidence.suffix == ".jsonl":
        episodes = load_episodes(evidence)
    else:
        episodes = [EpisodeEvidence.load(evidence)]
    entries = sorted(path.iterdir())
    root = experiment_root(path)
    if root is not None:  # an experiment output pins its blobs too
        for entry in entries:
            check_in_manifest(entry, root)
    count = len(entries)
    digest = episodes[0].digest if episodes else "-"
    return Bundle("episode blobs", digest, f"{count} blobs of {evidence.name}")


def _counted(path: Path, progress: CountProgress | None) -> Bundle:
    # Seconds for a few thousand episodes, growing with the run: a CI log saw nothing.
    counter = progress or CountProgress(Console(quiet=True), "", enabled=False)
    try:
        return _run_directory(path, counter)
    finally:
        counter.stop()  # also on failure: the log shows how far verification got


def _run_directory(path: Path, progress: CountProgress) -> Bundle:
    from onrecord.runner import RunStore

    store = RunStore.open(path)
    progress.start(store.protocol.episodes)
    sources: Sources = {}
    actions = 0  # bytes of the action log the committed records account for
    for record in store.records():  # canonical bytes, digests, run id, action-log blocks
        store.check_saved(record)  # its events and side files (by sha256, in blocks)
        sources[record.key] = graded_trial(record)
        actions += record.data["action_log"]["bytes"]
        progress.advance()
    count = len(sources)
    tail = _tail(path, actions, complete=count == store.protocol.episodes)
    progress.phase("report")  # loading a large run's report takes a while too
    items, note = _run_grading(path, store, sources)
    tail += note
    from onrecord.runner._leftovers import unfinished_regrades

    for name in unfinished_regrades(path):  # never listed as a regrade, never read
        tail += (
            f"; {name}: an unfinished regrade a killed `onrecord regrade` left "
            "(the next regrade or resume removes it)"
        )
    regrades = sorted(p for p in (path / "regrades").glob("*") if p.is_dir())
    for regrade in regrades:
        progress.phase(f"regrade {regrade.name}")
        tail += _regrade_checked(regrade, store, sources)[2]
    expected = store.protocol.episodes
    return Bundle(
        "run directory",
        store.manifest["digest"],
        f"{count} of {expected} episodes, {len(regrades)} "
        f"regrade{'' if len(regrades) == 1 else 's'}{tail}",
        tuple(items),
    )


def _run_grading(path: Path, store: Any, sources: Sources) -> tuple[list[Any], str]:
    """The run's report and decision to show, and what the summary says of them.

    Grading removes the old decision.json, writes report.json, then decision.json, so a
    run killed in between holds a report.json without decision.json. That report is
    verified all the same (digest, and every trial grades a recorded episode): read as
    "not graded", a complete grading that ``compare``, ``gate`` and ``report`` read was
    called missing, and an edited one passed unchecked. If it grades every recorded
    episode it is the run's grading, shown as such, only undecided; if fewer, it is an
    earlier grading (killed before the new report replaced it) and the run reads as
    not graded. ``onrecord run --resume`` grades the run and writes both files."""
    report_file = path / "report.json"
    report = _optional(report_file, EvaluationReport.load)
    if report is None:
        if (path / "decision.json").exists():  # unchecked, it verified whatever it said
            raise ConsistencyError(
                f"{path / 'decision.json'} decides a report.json that is missing: grading "
                "writes report.json first and removes the old decision.json before it, so "
                "no interrupted run leaves one without the other; restore report.json "
                "from a copy of the run"
            )
        return [], ""
    check_graded(store, report, str(report_file), sources, own=True)  # not another run's
    resume = f"`onrecord run --resume {path_word(path)}`"
    if (path / "decision.json").exists():
        decision = _decision(path / "decision.json", report, store)[0]
        if len(report.trials) == len(sources):
            return [report, decision], ""
        # A resume killed while recording leaves the earlier grading of fewer episodes,
        # decision and all: shown as the run's, it read "20 of 33 episodes, incomplete
        # run" for a run holding all 33 records.
        return [], (
            f"; not graded: report.json and decision.json are an earlier grading "
            f"({len(report.trials)} of the {len(sources)} recorded episodes), as a resume "
            f"killed before grading leaves them; {resume} grades the run"
        )
    if len(report.trials) == len(sources):
        return [report], (
            f"; graded (report.json verified: all {len(report.trials)} recorded episodes) but not "
            f"decided: decision.json is missing, as a grading killed between the two "
            f"files leaves it; {resume} writes it"
        )
    return [], (
        f"; not graded: report.json is an earlier grading ({len(report.trials)} of the "
        f"{len(sources)} recorded episodes) and decision.json is missing, as a grading "
        f"killed before the new report.json leaves it; {resume} grades the run"
    )


def _tail(path: Path, actions: int, *, complete: bool) -> str:
    """Bytes after the last committed record. A killed writer leaves them, but only
    while episodes remain to be recorded (the records they would have begun): in a
    complete run they were added afterwards, and `verify` said ok to a changed run.
    In an incomplete one they are named in the summary (a resume cuts them off)."""
    from onrecord.runner._repair import uncommitted_tail

    found = uncommitted_tail(path, actions)
    if found is None:
        return ""
    if complete:
        raise ConsistencyError(
            f"{path} records every planned episode, yet holds {found}: no interrupted "
            "write leaves bytes after the last record of a complete run; they were added "
            "after the run — restore the run from a copy"
        )
    return f"; {found}, left by an interrupted write (a resume cuts it off)"


def _regrade_directory(path: Path, store: Any = None, sources: Sources | None = None) -> Bundle:
    changes, items, note = _regrade_checked(path, store, sources)
    return Bundle(
        "regrade directory",
        changes["digest"],
        f"{len(changes['changes'])} changed verdicts{note}",
        tuple(items),
        tuple(changes["changes"]),
    )


def _regrade_checked(
    path: Path, store: Any, sources: Sources | None
) -> tuple[dict[str, Any], list[Any], str]:
    """A regrade's changes, its report and decision, and what the summary says of them.
    Inside a run (always, when verified as part of one) they are checked against the
    run's records: the trials grade recorded evidence, the decision is what its policy
    decides, and changes.json is what the records and the new report make it."""
    for name in ("changes.json", "report.json", "decision.json", REGRADE_POLICY):
        check_entry(path / name)  # never a link out of the run, a FIFO or a device
    changes = load_record_bytes(read_regular(path / "changes.json"), str(path / "changes.json"))
    if changes.get("schema") != _REGRADE:
        raise SchemaError(f"{path / 'changes.json'}: schema is {changes.get('schema')!r}")
    digested(path / "changes.json", changes)
    report = EvaluationReport.load(path / "report.json")
    run = path.resolve().parent.parent
    if store is None and (run / "run.json").is_file():
        from onrecord.runner import RunStore

        store = RunStore.open(run)
    if store is None:  # a regrade copied out of its run: nothing to decide it again with
        note = "; decision.json not decided again: the regrade is not in its run's regrades/"
        return changes, [report, _decision(path / "decision.json", report, None)[0]], note
    if sources is None:
        sources = {record.key: graded_trial(record) for record in store.records()}
    check_graded(store, report, str(path / "report.json"), sources, own=False)
    check_changes(store, path / "changes.json", changes, report, sources)
    decision, note = _decision(path / "decision.json", report, store)
    return changes, [report, decision], note


def _decision(path: Path, report: EvaluationReport, store: Any) -> tuple[dict[str, Any], str]:
    """A run's or regrade's decision.json, deciding ``report``; within a run (``store``)
    decided again by its policy. Returns it and what the summary says of it."""
    data = load_record_bytes(read_regular(path), str(path))
    if data.get("schema") != _DECISION:
        raise SchemaError(f"{path}: schema is {data.get('schema')!r}, expected {_DECISION!r}")
    digested(path, data)
    if store is None:  # nothing decides it again: its fields are checked one by one
        check_run_decision_fields(path, data)
    check_decision_body(path, data["decision"])
    if store is None:
        check_requirement_fields(path, data["decision"])
    if data.get("report_digest") != report.digest:
        raise ConsistencyError(f"{path} decides a report other than the report.json beside it")
    note = check_decided(store, path, data, report) if store is not None else ""
    return data, note


def _optional(path: Path, load: Callable[[Path], Any]) -> Any:
    return load(path) if path.is_file() else None


def _manifest_directory(path: Path) -> Bundle:
    manifest = load_record_bytes(read_regular(path / "manifest.json"), str(path / "manifest.json"))
    schema = manifest.get("schema")
    if schema == _TOOL_EPISODE:
        from onrecord.envkit import ToolEpisode
        from onrecord.envkit._episode_check import check_episode_agrees

        episode = ToolEpisode.load(path)
        check_episode_agrees(episode)  # each file matches; the manifest must describe them
        return Bundle("tool-world episode", episode.digest, f"{episode.manifest['steps']} steps")
    if schema == _MANIFEST and "files" in manifest:  # a world-model experiment
        from onrecord.dynamics.experiment._store import unsealed_message, verify_manifest

        verified = verify_manifest(path)
        if not verified.sealed:  # every file matches, but the manifest could be rewritten
            raise SchemaError(unsealed_message(path / "manifest.json"))
        # Each file then as `verify FILE` verifies it: matching hashes only show that no
        # file changed since the manifest was written, and a record edited and re-sealed
        # with its manifest entry passed while `verify FILE` refused it. The episodes
        # first, so the closed-loop records are checked against them as verified.
        listed = Listed(path, verified.files)
        for name in sorted(verified.files, key=lambda n: (not n.endswith(".episodes.jsonl"), n)):
            verify_file(path / name, listed)
        return Bundle("world-model output", verified.digest, f"{len(verified.files)} files")
    if schema == _MANIFEST and "sha256" in manifest:  # a ledger experiment
        from onrecord.domains.ledger import analyze_ledger_dir

        analysis = analyze_ledger_dir(path)
        if analysis.problems:
            raise DigestMismatch(f"{path}: " + "; ".join(analysis.problems[:5]))
        return Bundle("ledger output", manifest["digest"], f"{len(manifest['sha256'])} files")
    raise SchemaError(
        f"{path / 'manifest.json'}: unknown schema {schema!r}; onrecord verify reads {KINDS}"
    )
