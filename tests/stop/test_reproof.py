"""The run's end is re-proven, through the simulated host and real hook and CLI processes: an
agent that forges agentcfg's own files (receipts appended by hand, boxes ticked, the run's state
set to `complete`) never gets a `complete`, and `roadmap audit` names the step. The forgeries
carry good seals: the agent read the person's key (an open store), and the re-proof at the end
is the layer that still holds."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg.contract import seal
from agentcfg.core.times import iso_ms
from agentcfg.paths import RECEIPTS, RUNS
from testing.simhost import SimulatedHost, mark_done
from tests.conftest import write_roadmap
from tests.helpers import ledger

BODY = """## Phase 1 — Build
- [ ] **1.1** Write the parser <!-- verify: true -->
- [ ] **1.2** Write the ladder <!-- verify: test -f ladder.txt -->
- [ ] **1.3** Write the report <!-- verify: test -f report.txt -->
"""
TEXTS = {"1.1": "Write the parser", "1.2": "Write the ladder", "1.3": "Write the report"}
LINES = {"1.1": "true", "1.2": "test -f ladder.txt", "1.3": "test -f report.txt"}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def host(ws: Path) -> SimulatedHost:
    """A claimed autonomous run of three steps, each hook fire a process of its own."""
    write_roadmap(ws, "c", BODY)
    sim = SimulatedHost(ws)
    assert sim.trust("c").returncode == 0
    sim.human("Work through roadmap c.")
    assert sim.claim("c").returncode == 0
    sim.reply("Starting.")
    assert sim.fire().next_step == "1.1"
    return sim


def forge_receipts(ws: Path, steps: tuple[str, ...], env: dict[str, str]) -> None:
    """What an agent can write by hand: passing receipts for steps it never proved, sealed
    with the person's key it read."""
    path = ws / "state" / "receipts" / "c.json"
    data = json.loads(path.read_text()) if path.exists() else {"receipts": []}
    for step in steps:
        fields = {"step": step, "text": sha(TEXTS[step]), "command": sha(LINES[step]),
                  "exit_code": 0, "duration": 0.1, "output": sha(""), "head": None,
                  "dirty": None, "at": iso_ms(time.time())}  # fmt: skip
        data["receipts"].append({**fields, seal.FIELD: seal.sign(RECEIPTS, "c", fields, env)})
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text(json.dumps(data))


def test_forged_receipts_and_ticks_never_end_the_run_complete(
    host: SimulatedHost, ws: Path, snapshot: SnapshotAssertion
) -> None:
    forge_receipts(ws, ("1.1", "1.2", "1.3"), host.env)
    for step in ("1.1", "1.2", "1.3"):
        mark_done(ws / "roadmaps" / "c.md", step)
    host.reply("All done.")
    asked = host.fire()
    assert asked.blocked  # every box ticked, every receipt there: still no final proof
    assert asked.stderr == snapshot
    assert "complete" not in [e["event"] for e in ledger(ws)]
    final = host.agentcfg("roadmap", "verify", "c", "--final")
    assert final.returncode == 1
    assert "  FAIL 1.2 (exit 1); reopened\n  FAIL 1.3 (exit 1); reopened\n" in final.stderr
    reopened = [e for e in ledger(ws) if e["event"] == "reproof-reopened"]
    assert [e["steps"] for e in reopened] == [["1.2", "1.3"]]
    host.reply("Checked.")
    again = host.fire()
    assert again.blocked and again.next_step == "1.2"
    assert "The re-proof at the run's end reopened 1.2, 1.3: their verify lines fail" in (
        again.stderr
    )
    audit = host.agentcfg("roadmap", "audit", "c")
    assert audit.returncode == 1
    assert "1.2  open      failed the re-proof at the run's end (exit 1)" in audit.stdout
    assert "complete" not in [e["event"] for e in ledger(ws)]


def test_a_forged_complete_in_the_run_state_is_not_the_hooks_complete(
    host: SimulatedHost, ws: Path
) -> None:
    forge_receipts(ws, ("1.1", "1.2", "1.3"), host.env)
    for step in ("1.1", "1.2", "1.3"):
        mark_done(ws / "roadmaps" / "c.md", step)
    (run,) = (ws / "state" / "runs").glob("*-c.json")
    data = json.loads(run.read_text())
    body = {k: v for k, v in data.items() if k != seal.FIELD} | {"ended": "complete"}
    body["last_reply"] = None
    run.write_text(json.dumps({**body, seal.FIELD: seal.sign(RUNS, run.stem, body, host.env)}))
    for n in range(2):  # the gate's refusal, then the run's own answer
        host.reply(f"Finished ({n}).")
        result = host.fire()
        assert result.blocked  # rung 4 is not reached on a word in a file
    assert result.stderr.startswith("run-continuation: every contracted step of roadmap `c`")
    assert "complete" not in [e["event"] for e in ledger(ws)]


def test_closing_the_last_step_for_real_re_proves_and_ends_complete(
    host: SimulatedHost, ws: Path
) -> None:
    (ws / "ladder.txt").write_text("ok\n")
    (ws / "report.txt").write_text("ok\n")
    for step in ("1.1", "1.2"):
        assert host.agentcfg("roadmap", "done", "c", step).returncode == 0
    last = host.agentcfg("roadmap", "done", "c", "1.3")
    assert last.returncode == 0
    assert "that was the last open step" in last.stdout
    assert "the run's end is proven: state/finals/c.json" in last.stdout
    host.reply("All three closed.")
    assert host.fire().exit_code == 0
    assert [e["event"] for e in ledger(ws)][-2:] == ["reproof", "complete"]
    assert host.agentcfg("roadmap", "audit", "c").returncode == 0
