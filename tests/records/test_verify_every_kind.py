"""`onrecord verify FILE` reads every kind of file onrecord writes (before: closed-loop
records, ledger and remittance decisions, summaries and protocols, files of experiment
output directories, tool-world episode parts and evidence with blobs were refused,
exit 3), `onrecord show FILE` prints each, and one changed byte in any of them is exit
3 naming the file and what failed."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from onrecord.cli.main import main
from tests.cli_process import onrecord

KINDS = {
    "episode": "EpisodeEvidence",
    "episode with blobs": "EpisodeEvidence",
    "blob": "episode blob",
    "report": "EvaluationReport",
    "policy": "AcceptancePolicy",
    "forecast": "ForecastEvidence",
    "forecast lines": "ForecastEvidence lines (2 records)",
    "closed loop": "closed-loop records (2 runs of persistence/v1; their episodes not found",
    "closed loop, one run": "closed-loop records (1 run of persistence/v1",
    "wm closed loop": "closed-loop records (2 runs of persistence/v1; each references its "
    "episode in persistence_v1.episodes.jsonl)",
    "wm protocol": "world-model protocol (horizons [1, 4, 8, 16, 32]",
    "wm tables": "file of an experiment output (its sha256 is the one wm/manifest.json lists)",
    "wm model": "file of an experiment output",
    "wm plot": "file of an experiment output",
    "wm directory": "world-model output",
    "run directory": "run directory (2 of 2 episodes, 1 regrade)",
    "run decision": "run decision (reject, 2 of 2 episodes)",
    "run side file": "run side file (of big-run (1 of 1 episodes, 0 regrades))",
    "regrade directory": "regrade directory (0 changed verdicts)",
    "regrade decision": "run decision (reject, 2 of 2 episodes)",
    "remittance decision": "policy decision (accept, 8 requirements; decides "
    "careful.report.json, as policy.json decides)",
    "remittance summary": "remittance summary (2 agents)",
    "tool-world episode": "tool-world episode",
    "tool-world audit": "tool-world episode",
    "tool-world database": "tool-world episode",
    "ledger directory": "ledger output",
    "ledger decision": "ledger decision (accept, 3 requirements; decides report.json, as "
    "../../policy.json decides)",
    "ledger evidence": "EpisodeEvidence",
    "ledger database": "file of an experiment output (its sha256 is the one "
    "ledger/manifest.json lists)",
    "ledger protocol": "ledger protocol (7 variants",
    "ledger summary": "ledger summary (18 attempts, 5 classic runs)",
    "gate decision": "policy decision (accept, 1 requirement; decides report.json, as "
    "policy.json decides)",
    "comparison": "comparison (2 paired trials, A: sha256:",
}

# For a directory, the file inside it that is changed.
INSIDE = {
    "wm directory": "tables.json",
    "run directory": "episodes.jsonl",
    "regrade directory": "report.json",
    "tool-world episode": "diff.json",
    "ledger directory": "summary.json",
}

FAILED = re.compile(
    r"does not match (its digest|its sha256|the sha256 in its manifest)"
    r"|digest is '[0-9a-f]+' but|sha256 differs"
)


def test_every_kind_is_listed(written: dict[str, Path]) -> None:
    assert set(KINDS) == set(written)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_verify_reads_it(written: dict[str, Path], kind: str) -> None:
    done = onrecord("verify", str(written[kind]))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"ok  {written[kind]}  {KINDS[kind]}"), done.stdout


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_show_prints_it(
    written: dict[str, Path], kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(written[kind])]) == 0
    assert capsys.readouterr().out


def _one_byte_changed(raw: bytes) -> bytes:
    """``raw`` with one byte changed: in a record, a digit outside its own digests (so
    it stays valid JSON); in any other file, a byte in the middle."""
    if not raw.startswith(b"{"):
        middle = len(raw) // 2
        return raw[:middle] + bytes([raw[middle] ^ 1]) + raw[middle + 1 :]
    digests = [match.end() for match in re.finditer(rb'"digest":"', raw)]
    for position, byte in enumerate(raw):
        if chr(byte).isdigit() and not any(start <= position < start + 64 for start in digests):
            return (
                raw[:position]
                + (b"8" if byte == ord("9") else bytes([byte + 1]))
                + raw[position + 1 :]
            )
    raise AssertionError("no digit to change")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_one_changed_byte_is_refused_naming_the_file(
    written: dict[str, Path], kind: str, tmp_path: Path
) -> None:
    root = written["report"].parent
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    given = copy / written[kind].relative_to(root)
    target = given / INSIDE[kind] if kind in INSIDE else given
    target.write_bytes(_one_byte_changed(target.read_bytes()))
    done = onrecord("verify", str(given))
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert target.name in done.stderr, done.stderr
    assert FAILED.search(done.stderr.replace(str(tmp_path), "")), done.stderr
    assert "Traceback" not in done.stderr
