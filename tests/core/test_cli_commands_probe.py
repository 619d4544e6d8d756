"""`onrecord demo`, `ledger` and `worldmodel` run as a user and a CI job run them: real
subprocesses, output to a pipe, odd directory names, Ctrl-C, bad arguments."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from onrecord.cli import demo

ONRECORD = str(Path(sys.executable).parent / "onrecord")  # the installed command
MARKER = ".onrecord-demo"
# "[/]" closes no rich markup tag, "[bold]" opens one; the space and "é" must survive
# being printed and pasted back into a shell.
ODD = "out [bold] é x[/]y"


def _onrecord(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ONRECORD, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})},
        timeout=600,
    )


def _interrupt_when(path: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Start ``onrecord ARGS``, send SIGINT to its process group (as Ctrl-C in a terminal
    does) once ``path`` exists, and wait for it."""
    process = subprocess.Popen(
        [ONRECORD, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    deadline = time.monotonic() + 300
    while not path.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "finished before it could be interrupted"
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _controls(text: str) -> set[str]:
    return {c for c in text if ord(c) < 32 and c not in "\n"}


def test_demo_bad_arguments_leave_the_previous_output_alone(tmp_path: Path) -> None:
    # A mistyped `--repeats 0` deleted the previous demo's output, then failed.
    out = tmp_path / "demo-output"
    (out / "remittance").mkdir(parents=True)
    (out / MARKER).write_text("earlier demo\n")
    (out / "ledger.html").write_text("earlier page")
    for flags in (["--repeats", "0"], ["--workers", "-1"], ["--repeats", "x"]):
        done = _onrecord("demo", "--output-dir", out, *flags)
        assert done.returncode == 3, done.stderr
        assert flags[0] in done.stderr
        assert "Traceback" not in done.stderr
        assert (out / "ledger.html").read_text() == "earlier page"
    assert not (tmp_path / "new").exists()
    done = _onrecord("demo", "--output-dir", tmp_path / "new", "--workers", "0")
    assert done.returncode == 3
    assert not (tmp_path / "new").exists()


def test_demo_refuses_a_file_or_a_foreign_directory(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("mine")
    done = _onrecord("demo", "--output-dir", file)
    assert done.returncode == 3
    assert "is a file, not a directory" in done.stderr
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    done = _onrecord("demo", "--output-dir", foreign)
    assert done.returncode == 3
    assert "not made by onrecord demo" in done.stderr
    assert file.read_text() == (foreign / "notes.txt").read_text() == "mine"


def test_demo_cleanup_interrupted_midway_keeps_the_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while an earlier demo's output was deleted could remove the marker first,
    # and the next demo refused the half-deleted directory as not its own.
    out = tmp_path / "demo-output"
    for name in ("a", "remittance", "z"):
        (out / name / "deep").mkdir(parents=True)
    (out / MARKER).write_text("earlier demo\n")
    (out / "ledger.report.json").write_text("{}")
    real = demo.shutil.rmtree

    def interrupted(path: Any, *args: Any, **kwargs: Any) -> None:
        real(path, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(demo.shutil, "rmtree", interrupted)
    with pytest.raises(KeyboardInterrupt):
        demo._fresh(out)
    assert (out / MARKER).is_file()
    demo._check_replaceable(out)  # the next demo accepts it
    monkeypatch.setattr(demo.shutil, "rmtree", real)
    demo._fresh(out)
    assert [p.name for p in out.iterdir()] == [MARKER]


def test_demo_interrupted_then_run_again_into_an_odd_path(tmp_path: Path) -> None:
    out = tmp_path / ODD
    # An existing empty directory (CI's `mkdir -p artifacts`) was refused: "File exists".
    out.mkdir(parents=True)
    stopped = _interrupt_when(out / "remittance", "demo", "--output-dir", out, "--repeats", "1")
    assert stopped.returncode == 130, stopped.stderr
    assert "onrecord demo: interrupted" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert (out / MARKER).is_file()
    (out / "remittance" / "stale-run").mkdir(parents=True, exist_ok=True)

    # Run again in a narrow CI log (COLUMNS=80, as many CI runners set it).
    done = _onrecord("demo", "--output-dir", out, "--repeats", "1", env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "Traceback" not in done.stderr
    # The paths are printed as given: "[bold]" is not swallowed, "[/]" does not crash.
    assert f"everything else (evidence, run stores, databases): {out}/" in done.stdout
    # A CI log: plain progress lines, no bar redraws or colour codes.
    assert not _controls(done.stdout), _controls(done.stdout)
    assert "remittance episodes 33/264: careful done" in done.stdout
    assert "running the invoice ledger experiment" in done.stdout
    tables = done.stdout.split("running the invoice ledger experiment")[0]
    # Before, narrow rows read "claims_don…", "crash_afte…" and checks "expected_c…".
    assert "…" not in tables, tables
    cells = [cell.strip() for line in tables.splitlines() for cell in line.split("│")]
    for name in ("claims_done_without_writing", "crash_after_commit", "indeterminate"):
        assert name in cells or any(c.startswith(name) for c in cells), tables
    assert "only_expected_tables_changed" in tables, tables
    # Nothing of the interrupted run is left; every run and the ledger verify.
    runs = sorted(p.name for p in (out / "remittance").iterdir())
    assert "stale-run" not in runs
    assert len(runs) == 8
    assert sorted(p.name for p in out.iterdir() if p.suffix == ".html") == [
        "compare-careful-vs-skips_notes.html",
        "ledger.html",
        "remittance-careful.html",
        "remittance-change_and_restore.html",
        "remittance-double_poster.html",
    ]
    verified = _onrecord("verify", *(out / "remittance").iterdir(), out / "ledger")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert _onrecord("ledger", "analyze", out / "ledger").returncode == 0


def test_ledger_with_markup_in_paths_and_file_names(tmp_path: Path) -> None:
    out = tmp_path / ODD
    done = _onrecord("ledger", "run", "--output-dir", out)
    assert done.returncode == 0, done.stderr
    hint = done.stdout.rsplit("verify with: ", 1)[1].strip().removesuffix(")")
    assert shlex.split(hint) == ["onrecord", "ledger", "analyze", str(out)]
    assert _onrecord("ledger", "analyze", out).returncode == 0

    # A file added under a directory named "x[" is reported as "x[/]": not a rich crash
    # (a traceback and exit 1, which CI reads as reject) but exit 3 naming it.
    (out / "x[").mkdir()
    (out / "x[" / "]").write_text("added")
    (out / "[bold]hidden.txt").write_text("added")
    done = _onrecord("ledger", "analyze", out)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "problem: x[/]: not in the manifest" in done.stdout
    assert "problem: [bold]hidden.txt: not in the manifest" in done.stdout


def test_ledger_analyze_of_a_directory_without_manifest(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    done = _onrecord("ledger", "analyze", tmp_path)
    assert done.returncode == 3
    assert "has no manifest.json" in done.stderr
    assert "ablation" not in done.stdout


def test_worldmodel_interrupted_and_usage(tmp_path: Path) -> None:
    out = tmp_path / "wm"
    stopped = _interrupt_when(
        out / "protocol.json", "worldmodel", "run", "--smoke", "--output-dir", out
    )
    assert stopped.returncode == 130
    assert "onrecord worldmodel: interrupted:" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    replay = _onrecord("worldmodel", "analyze", "--replay", out)
    assert replay.returncode == 3
    assert "interrupted" in replay.stderr

    done = _onrecord("worldmodel")
    assert done.returncode == 3
    assert "required: ACTION" in done.stderr  # not argparse's dest name
    assert "--replay DIR" in _onrecord("worldmodel", "analyze", "--help").stdout
    assert "--output-dir DIR" in _onrecord("worldmodel", "run", "--help").stdout


def test_run_progress_in_a_ci_log(tmp_path: Path) -> None:
    # With stderr not a terminal the bar was off: a long run printed nothing until the
    # summary. Now plain lines, without control characters.
    done = _onrecord("run", "remittance", "--agent", "careful", "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("episodes 0/33 · ")
    assert lines[-1].startswith("episodes 33/33 · ")
    assert not _controls(done.stderr)
    quiet = _onrecord(
        "run", "remittance", "--agent", "careful", "--out", tmp_path / "q", "--no-progress"
    )
    assert quiet.returncode == 0
    assert "episodes" not in quiet.stderr


def test_ctrl_c_outside_a_command_handler_is_130_without_traceback(tmp_path: Path) -> None:
    # e.g. while `verify` reads a large run: before, a Python traceback.
    code = (
        "import sys, onrecord.cli.verify as v\n"
        "def run(args):\n"
        "    raise KeyboardInterrupt\n"
        "v.run = run\n"
        "from onrecord.cli.main import main\n"
        "sys.exit(main(['verify', 'x.json']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 130
    assert "onrecord verify: interrupted" in done.stderr
    assert "Traceback" not in done.stderr
