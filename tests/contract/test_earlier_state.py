"""A state folder an earlier version wrote, with its `state/proofs/` beside the receipts, read
by this one as that version read it: `roadmap audit`, `roadmap done`, the stop hook's gate and
the final re-proof each come to what they came to then, and nothing writes a proof again.

The folder is built by hand as that version left it: a step proven by `roadmap done` has its
receipt (sealed, without the verify line this version keeps in it) and its proof; a step whose
receipt is gone has its proof only, which never closed a contracted step and still does not."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentcfg import loading, state
from agentcfg.contract import reprove, seal
from agentcfg.contract import store as contract
from agentcfg.contract.model import command_hash, text_hash
from agentcfg.core.times import iso_ms, parse_iso
from agentcfg.paths import MARKS, PROOFS, RECEIPTS
from agentcfg.workspace import Workspace
from testing.simhost import SimulatedHost, mark_done
from tests import inprocess
from tests.conftest import run_cli, write_roadmap
from tests.helpers import ledger

BODY = """## Phase 1
- [ ] **1.1** Write the parser <!-- verify: true -->
- [ ] **1.2** Write the ladder <!-- verify: echo ladder -->
- [ ] **1.3** Write the report <!-- verify: echo report -->
"""


def earlier_receipt(ws: Workspace, step_id: str, at: float, env: dict[str, str]) -> dict:
    """A receipt line as the earlier version's `roadmap done` wrote it, sealed."""
    step = next(s for s in loading.load(ws, "c").steps if s.id == step_id)
    fields = {
        "step": step.id, "text": text_hash(step.text), "command": command_hash(step.verify),
        "exit_code": 0, "duration": 0.01, "output": "0" * 64, "evidence": "unknown",
        "head": None, "dirty": None, "at": iso_ms(at),
    }  # fmt: skip
    return {**fields, seal.FIELD: seal.sign(RECEIPTS, "c", fields, env)}


@pytest.fixture
def host(ws: Path) -> SimulatedHost:
    """A claimed run whose state the earlier version wrote after the first fire: 1.1 proven by
    `roadmap done` (receipt and proof), 1.2 with a proof and no receipt, both ticked."""
    write_roadmap(ws, "c", BODY)
    # the person's store as the test's own commands find it: one trust store, one seal key
    sim = SimulatedHost(ws, env={"XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}, run=inprocess.run)
    assert sim.trust("c").returncode == 0
    sim.human("Work through roadmap c.")
    assert sim.claim("c").returncode == 0
    sim.reply("Starting.")
    assert sim.fire().next_step == "1.1"
    marks = next((ws / "state" / MARKS).glob("*-c.json"))
    seen = parse_iso(json.loads(marks.read_text())["at"])
    assert seen is not None
    w = Workspace(ws)
    state.write_json(w.state / RECEIPTS / "c.json", {
        "receipts": [earlier_receipt(w, "1.1", seen + 1, sim.env)]
    }, compact=True)  # fmt: skip
    state.write_json(w.state / PROOFS / "c.json", {
        "1.1": {"command": "true", "passed_at": iso_ms(seen + 1)},
        "1.2": {"command": "echo ladder", "passed_at": iso_ms(seen + 2)},
    }, compact=True)  # fmt: skip
    for step in ("1.1", "1.2"):
        mark_done(ws / "roadmaps" / "c.md", step)
    return sim


def test_the_gate_takes_an_earlier_proof_as_it_did(host: SimulatedHost, ws: Path) -> None:
    host.reply("Steps 1.1 and 1.2 finished.")
    fired = host.fire()
    refused = [e for e in ledger(ws) if e["event"] == "refused"]
    assert refused == []  # neither box is an unproven tick to the gate: each has its proof
    assert fired.next_step == "1.3"


def test_audit_reads_the_receipt_and_never_the_proof(host: SimulatedHost, ws: Path) -> None:
    result = run_cli("roadmap", "audit", "c", "--json")
    steps = json.loads(result.output)["steps"]
    assert [(s["step"], s["status"]) for s in steps] == [
        ("1.1", "proven"), ("1.2", "unproven"), ("1.3", "open"),
    ]  # fmt: skip
    assert "line" not in steps[0]["receipt"]  # read as written, with what it held
    assert result.exit_code == 1


def test_done_adds_a_receipt_and_leaves_the_proofs_as_they_were(
    host: SimulatedHost, ws: Path
) -> None:
    proofs = ws / "state" / PROOFS / "c.json"
    before = proofs.read_bytes()
    assert host.agentcfg("roadmap", "done", "c", "1.2").returncode == 0  # ticked: proven now
    held = contract.sealed_receipts(Workspace(ws), "c")[0]
    assert [(r["step"], r.get("line")) for r in held] == [("1.1", None), ("1.2", "echo ladder")]
    assert host.agentcfg("roadmap", "done", "c", "1.3").returncode == 0  # the last: re-proven
    assert proofs.read_bytes() == before
    audit = json.loads(run_cli("roadmap", "audit", "c", "--json").output)
    assert [s["status"] for s in audit["steps"]] == ["proven"] * 3


def test_the_final_reproof_counts_the_receipt_and_not_the_proof(
    host: SimulatedHost, ws: Path
) -> None:
    found = reprove.reprove(Workspace(ws), "c", host.env, now=4e9, reopen=False, record=False)
    assert found.passed == ("1.1",)
    assert found.failed == (("1.2", "no receipt"), ("1.3", "open"))
