"""``onrecord worldmodel run``/``analyze`` on unusable output directories and Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from onrecord.cli.main import main
from onrecord.dynamics.experiment import build_protocol
from onrecord.dynamics.experiment._store import write_json


def test_output_dir_that_is_a_file_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "taken"
    target.write_text("keep me")
    assert main(["worldmodel", "run", "--smoke", "--output-dir", str(target)]) == 3
    assert "is a file, not a directory" in capsys.readouterr().err
    assert target.read_text() == "keep me"


def test_an_interrupted_run_directory_is_recognised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "run"
    write_json(root / "protocol.json", build_protocol(smoke=True))
    assert main(["worldmodel", "run", "--smoke", "--output-dir", str(root)]) == 3
    assert "interrupted run" in capsys.readouterr().err
    assert main(["worldmodel", "analyze", "--replay", str(root)]) == 3
    assert "interrupted worldmodel run" in capsys.readouterr().err
    assert sorted(p.name for p in root.iterdir()) == ["protocol.json"]


def test_ctrl_c_stops_with_a_message_not_a_traceback(tmp_path: Path) -> None:
    root = tmp_path / "run"
    code = "import sys; from onrecord.cli.main import main; sys.exit(main(sys.argv[1:]))"
    args = [sys.executable, "-c", code, "worldmodel", "run", "--smoke", "--output-dir", str(root)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (root / "protocol.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted" in err
    assert "Traceback" not in err
    assert not (root / "manifest.json").exists()


def test_ctrl_c_before_anything_is_written_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Interrupted while checking `--model` (before protocol.json): the message said the
    # directory was incomplete and had to be deleted, although nothing was written.
    import onrecord.dynamics.experiment as experiment

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(experiment, "run_experiment", interrupted)
    root = tmp_path / "run"
    assert main(["worldmodel", "run", "--smoke", "--output-dir", str(root)]) == 130
    err = capsys.readouterr().err
    assert f"interrupted before anything was written to {root}" in err
    assert "incomplete" not in err
    assert not root.exists()
