"""Long text on a comparison page, read in a real headless Chromium: a check name of 600
characters, a task id of 3,000, a measure name, markup and hundreds of lines in a task
id, refusal reasons thousands of characters long, a long label. Each shows its first
part and all of it on request, as on the report page: the page keeps to the window's
width, no row grows to thousands of pixels, none of the text is lost and none of it is
read as markup. Also: checks and horizons in natural order (h4 before h16)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onrecord.html import write_comparison
from onrecord.html._compare import failed_comparison_page
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser

CHECK = "check-" + "c" * 600
TASK = "task-" + "t" * 3000
HOSTILE = "<script>document.body.dataset.pwned = 'yes'</script></details></li></ul>" + "x" * 300
LINES = "\n".join(f"line {i}" for i in range(400))
MEASURE = "measure-" + "m" * 500
HORIZONS = ("dynamics/pole_angle/h8", "dynamics/pole_angle/h16", "dynamics/pole_angle/h4")


def _report(passing: bool, version: str = "v1", *, cases: tuple[str, ...] = ()) -> EvaluationReport:
    names = (CHECK, "short", *HORIZONS)
    trials = [
        Trial(
            {"case_id": case, "content_digest": "c" * 64},
            repeat,
            {"kind": "test"},
            tuple(CheckResult(name, version, "pass" if passing else "fail", "") for name in names),
            measures={MEASURE: 1.0 if passing else 2.0},
            settings={"environment_id": "env", "seed": 0},
        )
        for case in (cases or (TASK, HOSTILE, LINES, "task-10", "task-2"))
        for repeat in (0, 1)
    ]
    return EvaluationReport.from_trials(trials)


def _save(report: EvaluationReport, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    report.save_json(path)
    return path


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare-long")
    label = "a" * 200 + ".json"  # a long file name is the page's label
    a = _save(_report(True), root / "a" / label)
    b = _save(_report(False), root / "b" / label)
    other = _save(
        _report(False, "v2", cases=tuple(f"{TASK}-{n}" for n in range(3))), root / "o.json"
    )
    compared, _ = write_comparison(a, b, root / "compared.html")
    refused, data = write_comparison(a, other, root / "refused.html")
    assert max(len(reason) for reason in data["refused"]) > 3000
    failed = root / "failed.html"
    failed.write_text(failed_comparison_page(a, b, "cannot read: " + LINES))
    return {"compared": compared, "refused": refused, "failed": failed}


_MEASURE = (
    "const root = document.documentElement;"
    "const overflow = () => root.scrollWidth - root.clientWidth;"
    "const h = s => [...document.querySelectorAll(s)].map(e => e.getBoundingClientRect().height);"
    "const full = e => { const f = e.querySelector('.full'); return f ? f.textContent : null; };"
    "out.overflow = overflow();"
    "out.rows = [...h('#checks tbody tr'), ...h('#measures tbody tr')];"
    "out.header = h('#sides')[0];"
    "out.checkNames = [...document.querySelectorAll('#checks tbody tr')]"
    ".map(r => full(r.cells[0]) || r.cells[0].textContent);"
    "out.measure = full(document.querySelector('#measures tbody td'));"
    "out.summaries = [...document.querySelectorAll('#checks-section > details > summary')]"
    ".map(s => [s.textContent, s.getBoundingClientRect().height]);"
    "out.scripts = document.scripts.length;"
    "out.pwned = document.body.dataset.pwned || null;"
    "out.details = document.querySelectorAll('details').length;"
    "document.querySelectorAll('details').forEach(d => { d.open = true; });"
    "out.openOverflow = overflow();"
    "out.items = h('li.discordant');"
    "out.ids = [...document.querySelectorAll('li.discordant')]"
    ".map(li => [full(li), li.querySelector('.outcome') ? li.querySelector('.outcome')"
    ".textContent : li.textContent]);"
    "const name = document.querySelector('.check-name');"
    "out.checkName = name && full(name);"
    "out.labels = [...document.querySelectorAll('#sides > details')].map(full);"
)


@pytest.mark.parametrize("window", ["1280,900", "700,900"])
def test_long_names_on_a_comparison_page_are_folded_not_cut(
    pages: dict[str, Path], tmp_path: Path, window: str
) -> None:
    out = _drive(pages["compared"], _MEASURE, tmp_path, window=window)
    assert out["overflow"] <= 0
    assert out["openOverflow"] <= 0
    # Before: a check row of ~600 characters' height, a measure row alike, summaries
    # of the whole check name, discordant items thousands of pixels tall.
    # (before: 153 and 377 px at 1280 and 700 px; the first part is 57 and 121 px)
    assert max(out["rows"]) < (100 if window == "1280,900" else 150), out["rows"]
    assert out["header"] < 150
    assert max(height for _, height in out["summaries"]) < 80, out["summaries"]
    # Natural order: h4, h8, h16 (as text: h16, h4, h8); the long name whole, on request.
    assert out["checkNames"] == [CHECK, *(f"dynamics/pole_angle/h{n}" for n in (4, 8, 16)), "short"]
    assert [text for text, _ in out["summaries"]] == [
        f"{name}: 10 discordant episodes" for name in (f"{CHECK[:120]}…", *out["checkNames"][1:])
    ]
    assert out["checkName"] == CHECK
    assert out["measure"] == MEASURE
    # Every task id whole in the page, as text, with its outcome; markup not obeyed. Short
    # ones read as before.
    assert out["ids"][:10] == [
        *([TASK, f"#{r}: pass→fail"] for r in (0, 1)),
        *([HOSTILE, f"#{r}: pass→fail"] for r in (0, 1)),
        # A name's newlines are shown as \n: "posted\nonce" read as "posted once".
        *([LINES.replace("\n", "\\n"), f"#{r}: pass→fail"] for r in (0, 1)),
        *([None, f"task-{n}#{r}: pass→fail"] for n in (10, 2) for r in (0, 1)),
    ]
    # Opened, each is a box that scrolls, not a 3,000-character or 400-line item.
    assert max(out["items"]) < 500, out["items"]
    assert out["labels"] == [f"{'a' * 200}.json in {side}/" for side in "ab"]
    assert out["scripts"] == 4  # catcher, data, the page's, driver
    assert out["pwned"] is None


def test_refusal_reasons_and_errors_are_folded(pages: dict[str, Path], tmp_path: Path) -> None:
    for page in (pages["refused"], pages["failed"]):
        out: dict[str, Any] = _drive(
            page,
            "const root = document.documentElement;"
            "out.overflow = root.scrollWidth - root.clientWidth;"
            "const items = [...document.querySelectorAll('#refused ul > li')];"
            "out.heights = items.map(li => li.getBoundingClientRect().height);"
            "out.full = items.map(li => li.querySelector('.full') ?"
            " li.querySelector('.full').textContent : li.textContent);"
            "out.data = JSON.parse(document.getElementById('onrecord-data').textContent).refused;"
            "out.pwned = document.body.dataset.pwned || null;"
            "out.scripts = document.scripts.length;",
            tmp_path,
            window="700,900",
        )
        assert out["overflow"] <= 0
        # Before: a reason naming three 3,000-character tasks filled the screen.
        assert max(out["heights"]) < 200, out["heights"]
        assert out["full"] == out["data"]  # all of every reason is on the page
        if page == pages["failed"]:
            # The error the page was given, whole (not the page's own data as oracle).
            assert out["full"] == ["cannot read: " + LINES]
            continue
        # Refused: every check's version differs (v1 in A, v2 in B) and the case sets
        # differ; each reason is shown whole, the long names and task ids included.
        assert len(out["full"]) == 6, out["full"]
        for name in (CHECK, "short", *HORIZONS):
            said = f"check '{name}': version 'v1' in A, 'v2' in B"
            assert sum(said in reason for reason in out["full"]) == 1, name
        (cases,) = [reason for reason in out["full"] if reason.startswith("case sets differ")]
        for task in (TASK, HOSTILE, *(f"{TASK}-{n}" for n in range(3))):  # as text
            assert task in cases, task[:40]
        assert out["pwned"] is None
        assert out["scripts"] == 4
