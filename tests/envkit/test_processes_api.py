from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import FunctionType

import onrecord.envkit as envkit
from onrecord.errors import InputError

ROOT = Path(__file__).parent.parent.parent

WORKER = """
import json, sys, time
sys.path.insert(0, {root!r})
from tests.envkit import claims_env
snap = claims_env.snapshot()
world = claims_env.world(snap)
claim = int(sys.argv[1])
seen = []
for round in range(40):
    world.reset(seed=round)
    world.call("allocate", {{"claim_id": claim, "amount": 1.0}})
    world.call("set_status", {{"claim_id": claim, "status": f"w{{claim}}"}})
    time.sleep(0.001)
    seen.append(world.diff())
print(json.dumps(seen))
world.close()
"""


def test_two_episodes_in_two_processes_never_see_each_others_writes() -> None:
    script = WORKER.format(root=str(ROOT))
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(claim)], stdout=subprocess.PIPE, text=True
        )
        for claim in (3, 4)
    ]
    outputs = [json.loads(worker.communicate(timeout=120)[0]) for worker in workers]
    assert all(worker.returncode == 0 for worker in workers)
    for claim, diffs in zip((3, 4), outputs, strict=True):
        for diff in diffs:
            assert [row["claim_id"] for row in diff["allocations"]["created"]] == [claim]
            assert [c["key"] for c in diff["claims"]["changed"]] == [claim]


def test_public_api_is_curated_and_sorted() -> None:
    # isort style, as ruff's RUF022 keeps it: CONSTANTS, then Classes, then functions.
    def style(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert envkit.__all__ == sorted(envkit.__all__, key=style)
    assert len(set(envkit.__all__)) == len(envkit.__all__)
    for name in envkit.__all__:
        value = getattr(envkit, name)
        if isinstance(value, type | FunctionType):
            # The kit's own class or function of that name, not another one bound to it.
            assert value.__name__ == name, name
            assert value.__module__.startswith("onrecord.envkit."), name
    # Values docs/envkit.md states.
    assert envkit.EPISODE_SCHEMA == "onrecord.envkit.episode/v1"
    assert envkit.ENDINGS == ("finished", "agent_error", "step_limit", "stopped")
    assert issubclass(envkit.SnapshotError, InputError)
    # Every exported name is documented, and every name the reference table lists is
    # exported.
    docs = "\n".join(
        (ROOT / "docs" / page).read_text() for page in ("envkit.md", "envkit-reference.md")
    )
    documented = set(re.findall(r"\w+", docs))
    assert {name for name in envkit.__all__ if name not in documented} == set()
    reference = docs.split("## Reference: names not described above", 1)[1]
    listed = re.findall(r"^\| (`.+?) \|", reference, flags=re.MULTILINE)
    names = {name for cell in listed for name in re.findall(r"`(\w+)`", cell)}
    assert len(names) >= 10, names
    assert names <= set(envkit.__all__)
    public = {name for name in dir(envkit) if not name.startswith("_")}
    modules = {
        "audit",
        "checker",
        "checks",
        "context",
        "diff",
        "episode",
        "evaluate",
        "gym",
        "hidden",
        "log",
        "observer",
        "replay",
        "rules",
        "snapshot",
        "state",
        "tools",
        "world",
        "Any",
    }
    assert public - modules <= set(envkit.__all__)
