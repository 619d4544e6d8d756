"""``atomic_write_bytes`` makes the new name durable: the file's bytes are fsynced before
the rename, and the directory after it (a power loss could otherwise keep the old file,
or none, under the name, though the docs say reports and decisions are fsynced)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from onrecord._canonical import atomic_write_bytes


def test_the_file_then_its_directory_are_fsynced_around_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "reports" / "report.json"
    target.parent.mkdir()
    target.write_bytes(b"old")
    happened: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        happened.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(source: Any, destination: Any) -> None:
        happened.append(("replace", str(destination)))
        real_replace(source, destination)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write_bytes(target, b"new")

    assert target.read_bytes() == b"new"
    kinds = [kind for kind, _ in happened]
    assert kinds == ["fsync", "replace", "fsync"], happened
    assert happened[0][1].startswith(str(target.parent / ".report.json."))  # the temp file
    assert happened[1][1] == str(target)
    assert happened[2][1] == str(target.parent)  # the directory holding the new name
