"""The page shell: inline CSS and JavaScript, the embedded data, escaping helpers.
No external resource is referenced, so a report opens offline and leaks nothing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

import orjson

__all__ = [
    "NAME_CHARS",
    "TEXT_CHARS",
    "attr",
    "cell",
    "document",
    "embed_json",
    "esc",
    "fixed",
    "ident",
    "long_text",
    "name_html",
    "name_text",
    "percent",
    "table",
]

TEXT_CHARS = 300
"""Characters of a long message (a check's reason, a finding) shown before "show all"."""
NAME_CHARS = 120
"""Characters of a long name (a task id, a check name) shown before "show all"."""
TEXT_LINES = 6
"""Lines of a long message shown before "show all" (``report.js`` uses the same)."""

# A table that scrolls sideways in its own box breaks its words only where nothing else
# can give way ("break-word"), not anywhere: "anywhere" let a cell shrink to one letter,
# so the layout folded "only_expected_tables_chang/ed" on a 1400-pixel page and, on a
# phone, "100.0% (99 of 99)" into five lines and a check's evidence into 107 beside a
# box that scrolled anyway. Its JSON and messages (one long token) still break anywhere,
# but keep 14em. A run's plot (a PNG 990 pixels wide) shrinks to the page: at its own
# size it made a phone's whole page scroll sideways.
CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--muted:#57606a;--line:#d0d7de;
--bg:#f6f8fa;font-family:system-ui,-apple-system,"Segoe UI",sans-serif;font-size:14px}
body{margin:0 auto;max-width:1200px;padding:1.5rem;color:#1f2328}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.15rem;margin-top:2rem;
border-bottom:1px solid var(--line);padding-bottom:.3rem}h3{font-size:1rem}
.meta{color:var(--muted)}table{border-collapse:collapse;margin:.5rem 0;width:100%}
th,td{border:1px solid var(--line);padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:var(--bg)}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:.35rem .9rem;border-radius:1rem;font-weight:700;
color:#fff;text-transform:uppercase;letter-spacing:.05em}
.accept{background:var(--ok)}.reject{background:var(--bad)}.indeterminate{background:var(--warn)}
.pass{color:var(--ok)}.fail{color:var(--bad)}.incomplete,.not_measured{color:var(--warn)}
.evaluator_error,.model_error,.error,.rejected{color:#8250df}
.decision{border:2px solid var(--line);border-radius:.6rem;padding:1rem;background:var(--bg)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
td,li,p,summary,h1,h2{overflow-wrap:anywhere}td.num{overflow-wrap:normal;white-space:nowrap}
.scroll td{overflow-wrap:break-word}
.scroll td.mono,.scroll td.msg{overflow-wrap:anywhere;min-width:14em}
pre{white-space:pre-wrap;word-break:break-all;margin:0}
tr.created td{background:#dafbe1}tr.deleted td{background:#ffebe9}
tr.selected td{background:#fff8c5}.episodes tr[tabindex]{cursor:pointer}
.episodes tr:focus-visible{outline:2px solid #0969da;outline-offset:-2px}
del{color:var(--bad)}ins{color:var(--ok);text-decoration:none}
input[type=search]{padding:.3rem;width:20rem;max-width:100%}figure img{max-width:100%;height:auto}
td.tag,.measure{overflow-wrap:normal;white-space:nowrap}.scroll{overflow-x:auto}
.msg,.long .preview,.long .full{white-space:pre-wrap;overflow-wrap:anywhere}
details.long>summary{cursor:pointer;list-style:none}
details.long>summary::-webkit-details-marker{display:none}
details.long>summary::before{content:"\\25B8\\A0"}
details.long[open]>summary::before{content:"\\25BE\\A0"}
details.long[open] .preview,details.long[open] .show{display:none}
.long .full{max-height:24em;overflow:auto}
.controls{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin:.5rem 0}
.controls[hidden]{display:none}.controls select{max-width:100%;min-width:0}
.notice{border-left:4px solid var(--warn);background:#fff8c5;padding:.4rem .7rem}
@media print{body{max-width:none;padding:0}input[type=search],.controls{display:none}
.long .full{max-height:none;overflow:visible}
.badge,.decision,tr.created td,tr.deleted td{print-color-adjust:exact;
-webkit-print-color-adjust:exact}
.decision,tr,figure,svg{break-inside:avoid}h2,h3{break-after:avoid}}
"""


# Bidirectional embeddings, overrides and isolates: one in a task or check name would
# reverse the text after it up to the end of the line ("Trojan Source" spoofing), so
# the page shows them as escapes, as the policy's reasons already do. Control
# characters too (not tab or newline): the HTML parser drops a NUL from text and the
# others render as nothing, so "a\x00b" read as "ab", another task's name.
_CONTROLS = (
    *(c for c in range(0x20) if chr(c) not in "\t\n\r"),
    *range(0x7F, 0xA0),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
)
_ESCAPED = {code: f"\\u{code:04x}" for code in _CONTROLS}


def esc(value: Any) -> str:
    """HTML-escaped text of any value, with bidirectional and other control characters
    shown as escapes."""
    return escape("" if value is None else str(value), quote=True).translate(_ESCAPED)


# A newline, return or tab in a name renders as a space, so "posted\nonce" and "posted
# once" read alike on the page, as two checks or tasks the same; names show them as the
# terminal's tables do (``cli._render.cell``). Reasons and values keep their lines.
_LINE_BREAKS = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def name_text(value: Any) -> str:
    """A name (check, task or model id) on one line: newline, return and tab shown as
    ``\\n``, ``\\r`` and ``\\t``."""
    return ("" if value is None else str(value)).translate(_LINE_BREAKS)


def name_html(value: Any) -> str:
    """A name escaped for the page's text, on one line (``name_text``, then ``esc``): the
    title, heading and run line once escaped a name only, so a newline in an agent's
    name read as a space there (or began a forged second line) and as ``\\n`` in the
    tables below."""
    return esc(name_text(value))


def attr(value: Any) -> str:
    """An attribute value (``data-*``: the raw value, for scripts and tests)."""
    return escape("" if value is None else str(value), quote=True)


def ident(element_id: str, ids: bool = True) -> str:
    """`` id="…"``, or nothing when ``ids`` is off: a notebook shows the report's
    sections once per result, and two decisions on one page repeated ``id="reasons"``
    (invalid HTML; a link or script found the first one)."""
    return f' id="{attr(element_id)}"' if ids and element_id else ""


def fixed(value: float | None, digits: int, *, scale: float = 1.0, suffix: str = "") -> str:
    """``value * scale`` with ``digits`` decimals, and more when rounding would show a
    value strictly between 0 and 1 as exactly 0 or 1 (2999 of 3000 is not 100.0%)."""
    if value is None:
        return "n/a"
    text = f"{value * scale:.{digits}f}"
    if not 0 < value < 1:
        return text + suffix
    for more in range(digits + 1, digits + 5):
        if float(text) not in (0.0, scale):
            return text + suffix
        text = f"{value * scale:.{more}f}"
    if float(text) not in (0.0, scale):
        return text + suffix
    digits += 4
    step = 10.0**-digits
    bound = f"<{step:.{digits}f}" if value < 0.5 else f">{scale - step:.{digits}f}"
    return bound + suffix


def percent(value: float | None) -> str:
    """``0.857`` → ``85.7%``; ``0.9997`` → ``99.97%``, never ``100.0%``; None → n/a."""
    return fixed(value, 1, scale=100.0, suffix="%")


def long_text(value: Any, limit: int = TEXT_CHARS) -> str:
    """Escaped text that, when longer than ``limit`` characters or ``TEXT_LINES`` lines,
    shows its first part and all of it on request (``<details>``): a message of thousands
    of characters no longer fills the screen, and none of it is cut off. The same markup
    as ``long`` in ``report.js``."""
    text = "" if value is None else str(value)
    lines = text.count("\n") + 1
    if len(text) <= limit and lines <= TEXT_LINES:
        return esc(text)
    head = "\n".join(text.split("\n", TEXT_LINES)[:TEXT_LINES])[:limit]
    return (
        f'<details class="long"><summary><span class="preview">{esc(head)}…</span> '
        f'<span class="meta">(<span class="show">show all, </span>{len(text)} characters, '
        f"{lines} line{'s' if lines > 1 else ''})</span></summary>"
        f'<div class="full">{esc(text)}</div></details>'
    )


def cell(
    text: Any, *, css: str = "", data: dict[str, Any] | None = None, limit: int | None = None
) -> str:
    """One ``<td>`` with optional class and ``data-*`` attributes (raw values for tests
    and scripts, the text for people); text longer than ``limit`` characters shows its
    first part and all of it on request (``long_text``)."""
    attributes = "".join(f' data-{attr(k)}="{attr(v)}"' for k, v in (data or {}).items())
    content = esc(text) if limit is None else long_text(text, limit)
    return f'<td class="{esc(css)}"{attributes}>{content}</td>'


def table(
    headers: Sequence[str],
    rows: Iterable[str],
    *,
    css: str = "",
    element_id: str = "",
    data: dict[str, Any] | None = None,
) -> str:
    """A table from pre-rendered ``<tr>`` rows, with optional ``data-*`` attributes."""
    attributes = ident(element_id) + "".join(
        f' data-{attr(k)}="{attr(v)}"' for k, v in (data or {}).items()
    )
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    # In a box that scrolls sideways: a table wider than a phone's screen (nine columns of
    # numbers) otherwise made the whole page scroll, the decision included.
    return (
        f'<div class="scroll"><table class="{esc(css)}"{attributes}><thead><tr>{head}</tr>'
        "</thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


def embed_json(value: Any) -> str:
    """JSON safe inside ``<script type="application/json">`` (no ``</script>`` break-out)."""
    raw = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def document(title: str, body: str, data: Any, script: str) -> str:
    """The whole self-contained page."""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        f"img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f"<title>{name_html(title)}</title><style>{CSS}</style></head><body>{body}"
        f'<script type="application/json" id="onrecord-data">{embed_json(data)}</script>'
        f"<script>{script}</script></body></html>"
    )
