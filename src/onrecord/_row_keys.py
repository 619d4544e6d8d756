"""A row's key as ``onrecord show`` and the HTML report print it: unambiguous, and plain
where it can be.

SQLite lets one table hold the TEXT key '1' and the INTEGER key 1 (a key column without
INTEGER affinity, or a composite key), and a text key may be '', ' 7' or 'null'. Keys
were printed bare, so those rows read alike or not at all. A text key is now printed
bare only when it cannot read as anything else (``INV-17``, ``Acme Corp``), else
JSON-quoted (``"1"``, ``""``, ``" 7"``, ``"null"``, ``"a, b"``); a number as JSON
(``1``, ``1.0``), a BLOB or non-UTF-8 TEXT as the evidence stores it
(``{"$blob":"01"}``), an infinite REAL as ``{"$real":"Infinity"}``, and a composite key
as its parts in parentheses, each by the same rule: ``(1, "2")``, ``(1, INV-17)``. The
HTML report applies it in Python, not in ``rows.js``: the page's script parses its data
as JavaScript numbers, which would print the REAL key 1.0 as 1 and read the INTEGER keys
9007199254740993 and 9007199254740992 alike.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

__all__ = ["key_text"]

SEPARATOR = ", "
"""Between a composite key's parts, and between the keys of a list of rows."""

_NUMBER = re.compile(
    r"[+-]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?"
    r"|[+-]?0[xX][0-9a-fA-F_]+"
    r"|[+-]?(?:nan|inf|infinity)",
    re.IGNORECASE,
)
"""Text that reads as a number: decimal, exponent, hex, or a NaN or infinity word."""
_WORDS = frozenset(("null", "none", "true", "false"))
"""Text that reads as a NULL or a boolean (compared lowercased)."""
_OPENERS = tuple('"([{')
"""First characters of a quoted text, a composite key, a list or an encoded value."""


def key_text(key: Any) -> str:
    """``key`` (a one-column key's value, or a list for a composite key, as the audit
    and the diff store it) as one unambiguous line of text."""
    # Here, not at the top: `show` of a report or a Gymnasium run imports no envkit.
    from onrecord.envkit._sql import encode_reals

    key = encode_reals(key)  # JSON has no infinity: orjson wrote one as null
    if type(key) is list:
        return "(" + SEPARATOR.join(_part(part) for part in key) + ")"
    return _part(key)


def _part(value: Any) -> str:
    if type(value) is str and reads_as_text(value):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # not JSON (a saved record never holds one: never crash on it)
        return str(value)


def reads_as_text(text: str) -> bool:
    """Whether ``text`` printed bare reads as this text and nothing else: not empty, no
    space at either end nor any other invisible character, not a number, NULL or
    boolean, no separator (``a, b`` read as two keys) and no opening quote or bracket."""
    return bool(
        text
        and text.isprintable()  # a tab, newline or format character: JSON shows it
        and text[0] != " "
        and text[-1] != " "
        and not text.startswith(_OPENERS)
        and "," not in text
        and text.lower() not in _WORDS
        and _NUMBER.fullmatch(text) is None
    )
