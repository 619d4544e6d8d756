"""No page, comparison or data file is written inside a directory whose manifest lists
every file it holds (here a saved tool-world episode): one rule for ``write_report``,
``write_comparison`` and the CLI's ``--html``/``--json`` (before, ``write_comparison``
wrote there, and the directory then failed ``onrecord verify``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onrecord.cli.main import main
from onrecord.errors import InputError
from onrecord.html import write_comparison, write_report
from tests import test_saved_episode_round48 as round48

episode = round48.episode  # the fixture: one careful full-01 episode per module
LISTED = re.escape("whose manifest.json lists every file it holds")


def _files(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.mark.parametrize("inside", ["c.html", "sub/c.html"])
def test_write_comparison_refuses_a_page_inside_a_listed_folder(
    episode: Path, remittance_run: Path, careful_run: Path, inside: str
) -> None:
    before = _files(episode)
    with pytest.raises(InputError, match=LISTED):
        write_comparison(careful_run, remittance_run, episode / inside)
    with pytest.raises(InputError, match=LISTED):
        write_comparison(
            careful_run, remittance_run, Path("elsewhere.html"), data_json=episode / "d.json"
        )
    assert _files(episode) == before
    assert main(["verify", str(episode)]) == 0


def test_the_report_and_the_cli_refuse_it_in_the_same_words(
    episode: Path,
    remittance_run: Path,
    careful_run: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(InputError) as refused:
        write_report(remittance_run, episode / "r.html")
    code = main(
        ["compare", str(careful_run), str(remittance_run), "--html", str(episode / "c.html")]
    )
    err = capsys.readouterr().err
    assert code == 3
    printed = " ".join(err.split())  # the message wraps to the terminal
    assert f"--html {episode / 'c.html'} is inside {episode}, " in printed
    reason = str(refused.value).split(f"is inside {episode}, ", 1)[1]
    assert printed.endswith(reason)
