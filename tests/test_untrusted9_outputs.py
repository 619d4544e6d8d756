"""A received world-model or ledger output directory is hostile input, as a run directory
is (tests/test_untrusted8_links.py): a file replaced by a link to an identical copy
outside it, or by a FIFO, must be refused (exit 3, naming the file) by ``verify``,
``show``, ``worldmodel analyze --replay`` and ``ledger analyze``, never followed or
waited on; and a record nested deeper than onrecord writes is refused naming its file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from onrecord._canonical import load_record_bytes
from onrecord.domains.ledger import analyze_ledger_dir, run_ledger_experiment, save_ledger_result
from onrecord.dynamics import PersistenceModel, get_simulator
from onrecord.dynamics.experiment import build_protocol
from onrecord.dynamics.experiment._store import verify_manifest, write_json, write_manifest
from onrecord.errors import SchemaError
from tests.cli_process import onrecord

HANG = 60  # seconds: only to turn a hang into a failure, never a timing assertion
_ATTEMPT = "runs/correct-seed7-attempt1"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small world-model output directory laid out as `worldmodel run` writes one (a
    real run takes seconds; verify reads only its manifest and files) and a real ledger
    output directory."""
    root = tmp_path_factory.mktemp("untrusted9")
    wm = root / "wm"
    write_json(wm / "protocol.json", build_protocol(smoke=True))
    write_json(wm / "tables.json", {"closed_loop": []})
    write_json(
        wm / "models" / "persistence_v1.json",
        PersistenceModel(get_simulator("CartPole-v1")).describe(),
    )
    (wm / "plots").mkdir()
    (wm / "plots" / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    write_manifest(wm)
    save_ledger_result(run_ledger_experiment(root / "ledger"), root / "ledger")
    return root


@pytest.fixture
def copy(base: Path, tmp_path: Path) -> Path:
    shutil.copytree(base, tmp_path / "copy", symlinks=True)
    return tmp_path / "copy"


def _refused(done: Any, name: str, kind: str) -> None:
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert name in done.stderr + done.stdout, (done.stdout, done.stderr)
    assert kind in done.stderr + done.stdout, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


def _replace(path: Path, attack: str) -> str:
    """Replace ``path`` by a FIFO, or by a link to an identical copy outside the output
    directory (``copy/<dir>/...`` links to ``copy/outside/...``); what the refusal
    calls it."""
    if attack == "fifo":
        path.unlink()
        os.mkfifo(path)
        return "FIFO"
    outside = Path(*path.parts[: path.parts.index("copy") + 1]) / "outside" / path.name
    outside.parent.mkdir(exist_ok=True)
    shutil.copyfile(path, outside)
    path.unlink()
    path.symlink_to(outside)
    return "symbolic link"


_FILES = [
    ("wm", "protocol.json"),
    ("wm", "models/persistence_v1.json"),
    ("wm", "plots/plot.png"),
    ("ledger", f"{_ATTEMPT}/evidence.json"),
    ("ledger", f"{_ATTEMPT}/ledger.sqlite"),
    ("ledger", "summary.json"),
]


@pytest.mark.parametrize("attack", ["link", "fifo"])
@pytest.mark.parametrize(("output", "name"), _FILES)
def test_an_output_file_that_is_a_link_or_a_fifo_is_refused_by_verify(
    copy: Path, output: str, name: str, attack: str
) -> None:
    kind = _replace(copy / output / name, attack)
    _refused(onrecord("verify", copy / output, timeout=HANG), name, kind)


@pytest.mark.parametrize(
    ("output", "name", "command"),
    [
        ("wm", "tables.json", ["show"]),
        ("wm", "tables.json", ["worldmodel", "analyze", "--replay"]),
        ("wm", "manifest.json", ["verify"]),
        ("ledger", f"{_ATTEMPT}/decision.json", ["show"]),
        ("ledger", f"{_ATTEMPT}/decision.json", ["ledger", "analyze"]),
        ("ledger", "manifest.json", ["verify"]),
    ],
)
def test_an_output_file_linked_outside_is_refused_by_every_reader(
    copy: Path, output: str, name: str, command: list[str]
) -> None:
    kind = _replace(copy / output / name, "link")
    _refused(onrecord(*command, copy / output, timeout=HANG), name, kind)


@pytest.mark.parametrize("command", [["worldmodel", "analyze", "--replay"], ["ledger", "analyze"]])
def test_a_manifest_that_is_a_fifo_is_refused_not_waited_on(copy: Path, command: list[str]) -> None:
    output = copy / ("wm" if command[0] == "worldmodel" else "ledger")
    kind = _replace(output / "manifest.json", "fifo")
    _refused(onrecord(*command, output, timeout=HANG), "manifest.json", kind)


@pytest.mark.parametrize("output", ["wm", "ledger"])
def test_a_fifo_the_manifest_does_not_list_is_refused(copy: Path, output: str) -> None:
    # rglob with is_file skipped it: the directory verified with an extra special file.
    os.mkfifo(copy / output / "extra")
    _refused(onrecord("verify", copy / output, timeout=HANG), "extra", "FIFO")


@pytest.mark.parametrize(("output", "folder"), [("wm", "plots"), ("ledger", _ATTEMPT)])
def test_a_folder_linked_to_an_identical_copy_outside_is_refused(
    copy: Path, output: str, folder: str
) -> None:
    inside = copy / output / folder
    outside = copy / "outside-folder"
    shutil.move(inside, outside)
    inside.symlink_to(outside, target_is_directory=True)
    _refused(onrecord("verify", copy / output, timeout=HANG), folder, "symbolic link")


@pytest.mark.parametrize("output", ["wm", "ledger"])
def test_the_output_directory_named_may_be_a_link(copy: Path, output: str) -> None:
    (copy / "named").symlink_to(copy / output, target_is_directory=True)
    done = onrecord("verify", copy / "named", timeout=HANG)
    assert done.returncode == 0, done.stderr
    if output == "wm":  # and in-process, as `worldmodel analyze --replay` reads it
        assert verify_manifest(copy / "named").sealed
    else:
        assert analyze_ledger_dir(copy / "named").ok


_DEEP = b'{"a":' * 300 + b"1" + b"}" * 300  # orjson reads 1024 levels, writes 255


def test_a_record_nested_too_deeply_is_refused_naming_it() -> None:
    with pytest.raises(SchemaError, match=r"^some/where\.json is nested too deeply"):
        load_record_bytes(_DEEP, "some/where.json")


def test_a_manifest_nested_too_deeply_is_refused_naming_it(copy: Path) -> None:
    manifest = copy / "wm" / "manifest.json"
    manifest.write_bytes(b'{"files":' + _DEEP + b',"schema":"onrecord.manifest/v1"}\n')
    for command in (["verify"], ["worldmodel", "analyze", "--replay"]):
        done = onrecord(*command, copy / "wm", timeout=HANG)
        _refused(done, "manifest.json", "nested too deeply")
