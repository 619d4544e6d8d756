"""The exception every remittance tool raises for a domain rule violation, and the check
that free text shows something."""

from __future__ import annotations

import unicodedata

__all__ = ["Rejected", "visible"]


class Rejected(Exception):
    """A tool call that breaks a domain rule; the message tells the agent what to fix."""


# The schema's ``\S`` lets through characters that are not white space but show nothing:
# format characters (zero-width space, joiners, soft hyphen, bidi marks), lone combining
# marks, controls, unassigned and private-use code points, and the blank letters below.
_UNSEEN_CATEGORIES = frozenset(("Cc", "Cf", "Cn", "Co", "Cs", "Me", "Mn", "Zl", "Zp", "Zs"))
_BLANK_LETTERS = frozenset("\u115f\u1160\u2800\u3164\uffa0")
"""Hangul fillers and the blank Braille pattern: letters or symbols drawn as nothing."""


def visible(text: str, what: str) -> str:
    """``text`` if a person reading it later sees something, else ``Rejected``: a case
    whose reason, note and follow-up are all zero-width spaces says nothing, like ``" "``."""
    if not any(
        ch not in _BLANK_LETTERS and unicodedata.category(ch) not in _UNSEEN_CATEGORIES
        for ch in text
    ):
        raise Rejected(
            f"{what} {text!r} shows no visible character (only blank, zero-width or "
            "invisible ones); write what was done in words"
        )
    return text
