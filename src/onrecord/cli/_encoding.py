"""Readable output where the terminal's encoding cannot show onrecord's own symbols.

Under ``PYTHONIOENCODING=ascii``, a Latin-1 locale or a Windows CI log in cp1252,
``backslashreplace`` printed "needs pass rate \\u2265 100.0%": correct, but a reviewer
reading a CI log had to decode it. The ``onrecord-ascii`` error handler writes the
symbols onrecord itself prints as ASCII (``>=``, ``->``, ``...``) and escapes every other
character as ``backslashreplace`` does, so an agent's or user's text (a case id, a
reason) is never silently changed into something else. Python calls it only for
characters the encoding cannot hold: cp1252 keeps its own en dash and ellipsis.

Light on purpose (``codecs`` and ``sys`` are loaded before ``main()``): ``main`` calls
``tolerant_streams`` first, so an error message on stderr is readable too."""

from __future__ import annotations

import codecs
import sys

__all__ = ["ERRORS", "holds_everything", "readable", "readable_ascii", "tolerant_streams"]

ERRORS = "onrecord-ascii"

# Substitutes keep a table unambiguous: ``x`` for ×, but bracketed words for the marks a
# reader must not miss or confuse with it (✓ beside a decision, ✗ where it is wrong).
_ASCII = {
    "\u2265": ">=",  # ≥
    "\u2264": "<=",  # ≤
    "\u2260": "!=",  # ≠
    "\u2248": "~",  # ≈
    "\u2192": "->",  # →
    "\u2190": "<-",  # ←
    "\u2013": "-",  # – en dash
    "\u2014": "--",  # — em dash (also an empty cell)
    "\u2212": "-",  # − minus sign
    "\u2026": "...",  # … (also rich's mark of a cut cell)
    "\u00d7": "x",  # ×
    "\u00b1": "+/-",  # ±
    "\u00b0": " deg",  # °
    "\u00b7": "-",  # ·
    "\u2713": "[ok]",  # ✓
    "\u2717": "[wrong]",  # ✗
    "\u2705": "[ok]",  # ✅
    "\u274c": "[wrong]",  # ❌
    "\u26a0": "[!]",  # ⚠
    "\u26d4": "[stop]",  # ⛔
    "\ufe0f": "",  # the emoji variation selector after ⚠: it draws nothing
}


def _escaped(char: str) -> str:
    """``char`` as ``backslashreplace`` writes it."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def readable_ascii(error: UnicodeError) -> tuple[str, int]:
    """The ``onrecord-ascii`` codec error handler (see the module's docstring)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error  # only registered for writing; decoding keeps Python's behaviour
    text = error.object[error.start : error.end]
    return "".join(_ASCII[c] if c in _ASCII else _escaped(c) for c in text), error.end


codecs.register_error(ERRORS, readable_ascii)


def readable(text: str, encoding: str) -> str:
    """``text`` as a stream in ``encoding`` with the ``onrecord-ascii`` handler writes it
    (``≥`` is ``>=`` in ASCII, kept in UTF-8). A console lays its tables out with this
    text: substituted only when written, ``>= 100.0%`` stuck out of its column."""
    if text.isascii() or holds_everything(encoding):
        return text  # what every UTF encoding holds (the usual case, and fast)
    return text.encode(encoding, ERRORS).decode(encoding)


def holds_everything(encoding: str) -> bool:
    """Whether ``encoding`` writes every character as it is (a UTF encoding): nothing
    to substitute, so a console need not look at its text."""
    return encoding.replace("_", "-").lower().startswith("utf")


def tolerant_streams() -> None:
    """Make stdout and stderr write unencodable text with ``onrecord-ascii``: before
    ``backslashreplace`` (stdout), and before that the command died with
    UnicodeEncodeError and exit code 1, i.e. *reject*."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=ERRORS)
