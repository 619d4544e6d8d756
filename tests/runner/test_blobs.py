"""Episodes with image observations keep their frames as side files through a run, a
re-grade and the HTML report."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from onrecord.runner import RunStore, plan_run, regrade_run, start_run


def test_pixel_episodes_run_regrade_and_keep_their_frames(run_dir: Path) -> None:
    result = start_run(run_dir, plan_run("tests.runner.helpers:pixels", "random", seeds=[0, 1]))
    assert result.complete
    store = RunStore.open(run_dir)
    records = list(store.records())
    assert len(records) == 2
    for record in records:
        evidence = record.data["evidence"]
        assert "$blob" in evidence["steps"]["observation"]
        assert len(record.data["files"]) == 2  # the step frames and the reset frame
    regrade = regrade_run(run_dir, name="again")
    assert regrade.changes == ()
    saved = store.saved_episode(records[0])
    frames = [name for name in saved.files if name.startswith("blob/")]
    assert frames
    shape = records[0].data["evidence"]["steps"]["observation"]["$blob"]["shape"]
    assert shape[1:] == [24, 24, 3]
    assert np.frombuffer(saved.files[frames[0]], dtype=np.uint8).size % (24 * 24 * 3) == 0


def test_the_html_report_of_a_pixel_run_renders(run_dir: Path) -> None:
    from onrecord.html import write_report

    start_run(run_dir, plan_run("tests.runner.helpers:pixels", "random", seeds=[0]))
    page = write_report(run_dir).read_text()
    assert "<html" in page
    assert "tests.runner.helpers:pixels" in page


def test_show_episode_of_a_pixel_run_reads_its_frames(run_dir: Path) -> None:
    from tests.runner.conftest import onrecord

    start_run(run_dir, plan_run("tests.runner.helpers:pixels", "random", seeds=[0]))
    (case,) = {record.key[0] for record in RunStore.open(run_dir).records()}
    # Before: "references blob …, which was not given" and exit 3: the side files were
    # read but not handed to the evidence.
    shown = onrecord("show", str(run_dir), "--episode", f"{case}#0")
    assert shown.returncode == 0, shown.stderr
    assert f"{case}#0" in shown.stdout
    assert "step" in shown.stdout
