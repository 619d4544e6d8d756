"""Docs truth audit, part 2 (round 38): what envkit.md promises about refused tool
declarations holds, including the fix each message suggests."""

from __future__ import annotations

import re
from typing import Any

import pytest

from onrecord.envkit import tool
from onrecord.errors import InputError


def _suggestion(fn: Any) -> str:
    with pytest.raises(InputError) as raised:
        tool(fn)
    found = re.search(r"e\.g\. (def .*)$", str(raised.value))
    assert found is not None, str(raised.value)
    return found.group(1)


def _compiles(signature: str) -> None:
    compile(signature.replace("...", "object") + ": pass", "<suggestion>", "exec")


def test_a_keyword_only_context_gets_a_valid_signature_as_its_fix() -> None:
    def lookup(*, ctx: Any) -> dict[str, Any]:
        return {}

    suggestion = _suggestion(lookup)
    _compiles(suggestion)  # was `def lookup(ctx: ToolContext, ctx: ...)`: a SyntaxError
    assert suggestion == "def lookup(ctx: ToolContext, ...)"


def test_a_keyword_only_argument_keeps_its_place_in_the_fix() -> None:
    def lookup(*, ndc: str) -> dict[str, Any]:
        return {}

    suggestion = _suggestion(lookup)
    _compiles(suggestion)
    assert suggestion == "def lookup(ctx: ToolContext, *, ndc: ...)"


def test_keyword_arguments_only_get_the_context_before_them() -> None:
    def lookup(**arguments: Any) -> dict[str, Any]:
        return {}

    suggestion = _suggestion(lookup)
    _compiles(suggestion)
    assert suggestion == "def lookup(ctx: ToolContext, **arguments)"


def test_an_argument_typed_first_parameter_still_gets_the_usual_fix() -> None:
    def lookup(ndc: str) -> dict[str, Any]:
        return {}

    assert _suggestion(lookup) == "def lookup(ctx: ToolContext, ndc: ...)"
