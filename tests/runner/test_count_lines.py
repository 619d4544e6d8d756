"""``count_lines`` (what ``run --resume`` and ``compare`` count a run's records with)
agrees with ``bounded_lines`` (what reads them): the same count, and the same refusal of
the same line when one is too long, measured across block edges; and a resume of a run
whose record file holds a multi-gigabyte line stops once the line is measured."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord.episode import _verify_files
from onrecord.episode._verify_files import bounded_lines, count_lines
from onrecord.errors import SchemaError

BLOCK = 8  # small blocks, so lines and newlines fall on every side of their edges
PATH = Path("episodes.jsonl")

pieces = st.lists(st.sampled_from([b"\n", b"a", b"bb", b"c" * 9, b"d" * 30]), max_size=40)


def _reader(data: bytes) -> Any:
    return io.BufferedReader(io.BytesIO(data))  # type: ignore[arg-type]


def _bounded(data: bytes, limit: int) -> tuple[str, int]:
    try:
        lines = list(bounded_lines(_reader(data), PATH, limit))
    except SchemaError as exc:
        return "refused", int(str(exc).split("line ")[1].split()[0])
    return "counted", sum(line.endswith(b"\n") for _, line in lines)


def _counted(data: bytes, limit: int) -> tuple[str, int]:
    try:
        return "counted", count_lines(_reader(data), PATH, limit)
    except SchemaError as exc:
        return "refused", int(str(exc).split("line ")[1].split()[0])


@settings(max_examples=300)
@given(parts=pieces, limit=st.integers(BLOCK, 4 * BLOCK))
def test_count_lines_agrees_with_bounded_lines(parts: list[bytes], limit: int) -> None:
    data = b"".join(parts)
    original = _verify_files._BLOCK
    _verify_files._BLOCK = BLOCK
    try:
        assert _counted(data, limit) == _bounded(data, limit)
    finally:
        _verify_files._BLOCK = original


def test_a_count_is_the_newlines_when_no_line_is_too_long() -> None:
    data = b'{"a": 1}\n{"b": 2}\n{"torn'
    assert count_lines(_reader(data), PATH) == 2


def test_the_refusal_names_the_file_the_line_and_the_fix() -> None:
    data = b"short\n" + b"x" * (3 << 20) + b"\nafter\n"
    with pytest.raises(SchemaError) as refused:
        count_lines(_reader(data), PATH, limit=2 << 20)
    assert str(refused.value).startswith(f"{PATH}: line 2 is longer than {2 << 20} bytes")
    assert "restore it from a copy of the run" in str(refused.value)
