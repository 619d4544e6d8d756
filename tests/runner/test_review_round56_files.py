"""Review round 56 of run files: the temporary file of a killed `onrecord report` (of the
run, or of a regrade) is removed by the next resume like the run's own, but never one
a live writer holds; a failed write of `run.json` names it; the advice after a failed
resume follows the error (a read-only file system is not a full disk); `onrecord
report` on a read-only file system names `report.html`, not its temporary file. Real
run directories; the failing file systems are simulated in real `onrecord` processes."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from onrecord._canonical import atomic_write_bytes
from onrecord.runner import plan_run, regrade_run, resume_run, start_run
from tests.runner.conftest import onrecord

ROOT = Path(__file__).resolve().parents[2]
WALK = ["frozenlake", "--agent", "tests.runner.helpers:walker", "--seeds", "0-1"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete, graded FrozenLake run with one regrade (copy it before changing it)."""
    run = tmp_path_factory.mktemp("graded") / "run"
    start_run(
        run,
        plan_run(
            "frozenlake",
            "tests.runner.helpers:walker",
            seeds=[0, 1],
            checks=["tests.runner.helpers:SHORT_V1"],
        ),
    )
    regrade_run(run, name="again")
    return run


@pytest.fixture
def run(graded: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(graded, copy, symlinks=True)
    return copy


def _leftover(directory: Path, name: str) -> Path:
    """A temporary file exactly as ``atomic_write_bytes`` names it, as a kill -9 between
    its write and its rename leaves it."""
    fd, path = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    os.write(fd, b"<!doctype html><html><body>half")
    os.close(fd)
    return Path(path)


def test_a_resume_removes_a_killed_html_reports_temporary_file_but_not_a_live_ones(
    run: Path,
) -> None:
    ours = [_leftover(run, "report.html"), _leftover(run / "regrades" / "again", "report.html")]
    # One a live `onrecord report` is writing: atomic_write_bytes holds it locked.
    live = _leftover(run, "report.html")
    held = os.open(live, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)
    foreign = run / "regrades" / "again" / ".report.json.abcd1234.tmp"  # no report's name
    foreign.write_text("the user's")
    try:
        # Until a resume, the run still verifies: the leftovers are no part of it.
        assert onrecord("verify", str(run)).returncode == 0
        result = resume_run(run)
    finally:
        os.close(held)
    notices = " ".join(result.notices)
    assert "removed 2 unfinished temporary file(s)" in notices, notices
    assert ".report.html." in notices
    assert os.path.join("regrades", "again", ".report.html.") in notices
    assert not any(path.exists() for path in ours)
    assert live.exists()
    assert foreign.read_text() == "the user's"
    assert onrecord("verify", str(run)).returncode == 0


def test_a_write_whose_temporary_file_is_cleaned_before_it_is_locked_writes_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resume's cleaner that takes a report's temporary file between its creation and
    its lock: the writer finds it unlinked and writes the file again, whole."""
    import onrecord._canonical as canonical

    real = canonical.fcntl.flock
    cleaned: list[str] = []

    def cleaner_first(fd: int, operation: int) -> None:
        if not cleaned:
            (name,) = [n for n in os.listdir(tmp_path) if n.startswith(".report.html.")]
            cleaned.append(name)
            os.unlink(tmp_path / name)
        real(fd, operation)

    monkeypatch.setattr(canonical.fcntl, "flock", cleaner_first)
    target = atomic_write_bytes(tmp_path / "report.html", b"<html>whole</html>")
    assert cleaned
    assert target.read_bytes() == b"<html>whole</html>"
    assert os.listdir(tmp_path) == ["report.html"]


def _cli(script: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``onrecord ARGS`` in a real process, after ``script`` set up its failing file
    system (the tests' modules importable)."""
    code = (
        f"import sys\n{script}\nfrom onrecord.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


_FILE_SIZE_LIMIT = """
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (256, resource.RLIM_INFINITY))
"""


def test_a_run_json_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    """``run.json`` is the first file of a run with bytes in it; a write that fails
    there (here the file size limit, EFBIG: a full disk fails the same write with
    ENOSPC) said `OSError: File too large`, naming no file."""
    out = tmp_path / "run"
    done = _cli(_FILE_SIZE_LIMIT, "run", *WALK, "--out", out)
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"onrecord run: error: {out / 'run.json'}: File too large" in done.stderr
    assert not (out / "run.json").exists()
    assert [p.name for p in out.iterdir() if not p.name.startswith(".lock")] == []


def _failing_lock(code: int) -> str:
    """Opening the run's lock file fails with ``code``, as on a read-only file system."""
    return f"""
import builtins, os
_open = builtins.open
def failing(file, *args, **kwargs):
    if str(file).endswith("/.lock"):
        raise OSError({code}, os.strerror({code}), str(file))
    return _open(file, *args, **kwargs)
builtins.open = failing
"""


@pytest.mark.parametrize(
    ("code", "advice", "not_said"),
    [
        (30, "its file system is read-only; remount it read-write", "free space"),  # EROFS
        (13, "let your user write to the run directory", "free space"),  # EACCES
        (28, "free space on its disk", "read-only"),  # ENOSPC
        (5, "fix the cause, then", "free space"),  # EIO: nothing more to say
    ],
)
def test_a_failed_resume_gives_the_advice_of_its_error(
    run: Path, code: int, advice: str, not_said: str
) -> None:
    done = _cli(_failing_lock(code), "run", "--resume", run)
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{run / '.lock'}: {os.strerror(code)}; the episodes saved before are kept" in (
        done.stderr
    )
    assert advice in done.stderr
    assert not_said not in done.stderr
    assert f"`onrecord run --resume --out {run}` continues" in done.stderr


_READ_ONLY_REPORT = """
import os
_open = os.open
def read_only(path, flags, *args, **kwargs):
    if os.path.basename(os.fsdecode(path)).startswith(".report.html."):
        raise OSError(30, os.strerror(30), os.fsdecode(path))
    return _open(path, flags, *args, **kwargs)
os.open = read_only
"""


def test_report_on_a_read_only_file_system_names_report_html(run: Path) -> None:
    done = _cli(_READ_ONLY_REPORT, "report", run)
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"onrecord report: error: {run / 'report.html'}: Read-only file system" in (done.stderr)
    assert ".tmp" not in done.stderr
