"""Records that decide a run's ending are sealed with the person's key: a receipt appended by
hand, a contract rewritten with its digest recomputed, a run state or a fleet membership
written by hand each halt the run `halt-state-tampered`, told, and never end it `complete`;
`roadmap audit` names what failed and exits 1."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agentcfg import claims
from agentcfg.contract.model import command_hash
from agentcfg.contract.seal import canonical
from agentcfg.core.times import iso
from agentcfg.workspace import Workspace
from testing.simhost import FireResult, SimulatedHost, mark_done
from tests import inprocess
from tests.conftest import ledger, write_roadmap

BODY = """## Phase 1
- [ ] **1.1** Write the parser <!-- verify: true -->
- [ ] **1.2** Write the ladder <!-- verify: echo ladder -->
- [ ] **1.3** Write the report <!-- verify: echo report -->
"""
TAMPERED = "halt-state-tampered"


def claimed(ws: Path, sim: SimulatedHost) -> SimulatedHost:
    """A claimed autonomous run with 1.1 proven by its receipt and 1.2, 1.3 open."""
    write_roadmap(ws, "c", BODY)
    assert sim.trust("c").returncode == 0
    sim.human("Work through roadmap c.")
    assert sim.claim("c").returncode == 0
    sim.reply("Starting.")
    assert sim.fire().next_step == "1.1"
    assert sim.agentcfg("roadmap", "done", "c", "1.1").returncode == 0
    return sim


@pytest.fixture
def host(ws: Path) -> SimulatedHost:
    return claimed(ws, SimulatedHost(ws, run=inprocess.run))


def key_of(host: SimulatedHost) -> str:
    return claims.session_key(host.session_id)


def contract_path(ws: Path, host: SimulatedHost) -> Path:
    return ws / "state" / "contracts" / f"{key_of(host)}-c.json"


def run_path(ws: Path, host: SimulatedHost) -> Path:
    return ws / "state" / "runs" / f"{key_of(host)}-c.json"


def told(result: FireResult) -> str:
    assert (result.exit_code, result.stderr) == (0, "")
    line: str = json.loads(result.stdout)["systemMessage"]
    return line


def forge_receipts(ws: Path, host: SimulatedHost, *ids: str) -> None:
    """What an agent with the person's file access writes: receipts for steps it never proved,
    in the form of the real ones, each ticked by hand."""
    terms = json.loads(contract_path(ws, host).read_text())["contract"]["steps"]
    path = ws / "state" / "receipts" / "c.json"
    data = json.loads(path.read_text())
    real = data["receipts"][0]
    for step, text, verify, *_ in (t for t in terms if t[0] in ids):  # [id, text, verify, ...]
        forged = {**real, "step": step, "text": text, "at": iso(2e9)}
        forged["command"] = command_hash(verify)
        data["receipts"].append(forged)  # the seal copied from a real line, or none at all
        mark_done(ws / "roadmaps" / "c.md", step)
    data["receipts"][-1].pop("seal")
    path.write_text(json.dumps(data))


def halts_told(host: SimulatedHost, ws: Path, named: str) -> dict[str, object]:
    """The run halts, told, within a turn: a box ticked by hand is first refused by the gate."""
    host.reply("All done.")
    result = host.fire()
    if result.blocked:
        assert result.stderr.startswith("turn-end-gate: step **1.2** of roadmap `c` was marked")
        host.reply("All done, I said.")
        result = host.fire()
    line = told(result)
    assert line.startswith(f"agentcfg: roadmap `c` stopped: {named}")
    assert "failed its seal" in line
    host.reply("Really done.")
    after = host.fire()
    assert (after.exit_code, after.stdout, after.stderr) == (0, "", "")  # told once
    events = [e["event"] for e in ledger(ws)]
    assert "complete" not in events and events.count(TAMPERED) == 1
    halt: dict[str, object] = next(e for e in ledger(ws) if e["event"] == TAMPERED)
    return halt


def test_receipts_appended_by_hand_never_count_and_halt_the_run(ws: Path) -> None:
    """Real processes, as a host runs the hook and the agent its shell."""
    host = claimed(ws, SimulatedHost(ws))
    forge_receipts(ws, host, "1.2", "1.3")
    audit = host.agentcfg("roadmap", "audit", "c")
    assert audit.returncode == 1
    assert "1.2  unproven" in audit.stdout and "1.3  unproven" in audit.stdout
    assert (
        "refused: 2 receipt lines in state/receipts/c.json (step 1.2, 1.3) failed its seal"
        in audit.stdout
    )
    shown = json.loads(host.agentcfg("roadmap", "audit", "c", "--json").stdout)
    assert shown["ok"] is False and shown["tampered"] == [
        "2 receipt lines in state/receipts/c.json (step 1.2, 1.3)"
    ]
    halt = halts_told(host, ws, "2 receipt lines in state/receipts/c.json (step 1.2, 1.3)")
    assert halt["record"] == "2 receipt lines in state/receipts/c.json (step 1.2, 1.3)"


def test_a_real_receipt_still_counts_beside_a_forged_one(host: SimulatedHost, ws: Path) -> None:
    forge_receipts(ws, host, "1.2")
    shown = json.loads(host.agentcfg("roadmap", "audit", "c", "--json").stdout)
    assert [(s["step"], s["status"]) for s in shown["steps"]] == [
        ("1.1", "proven"), ("1.2", "unproven"), ("1.3", "open"),
    ]  # fmt: skip


def test_a_contract_emptied_with_its_digest_recomputed_halts(host: SimulatedHost, ws: Path) -> None:
    path = contract_path(ws, host)
    record = json.loads(path.read_text())
    record["contract"]["steps"] = []
    record["digest"] = hashlib.sha256(canonical(record["contract"])).hexdigest()
    path.write_text(json.dumps(record))
    for step in ("1.2", "1.3"):
        mark_done(ws / "roadmaps" / "c.md", step)
    shown = f"the run's contract record state/contracts/{key_of(host)}-c.json"
    assert halts_told(host, ws, shown)["record"] == shown
    audit = host.agentcfg("roadmap", "audit", "c")
    assert audit.returncode == 1 and f"refused: {shown} failed its seal" in audit.stdout


@pytest.mark.parametrize("field", ["ended", "halted"])
def test_a_run_state_written_by_hand_is_never_complete(
    host: SimulatedHost, ws: Path, field: str
) -> None:
    path = run_path(ws, host)
    record = json.loads(path.read_text())
    record[field] = "complete"
    path.write_text(json.dumps(record))
    claim = claims.read_claim(Workspace(ws), key_of(host))
    assert claim is not None
    with_env = dict(host.env)
    found = inprocess_read_run(ws, claim, with_env)
    assert (found.halted, found.ended) == (TAMPERED, None)  # what `agentcfg run` reads
    shown = f"this session's run state state/runs/{key_of(host)}-c.json"
    assert halts_told(host, ws, shown)["record"] == shown
    resealed = inprocess_read_run(ws, claim, with_env)
    assert resealed.halted == TAMPERED  # replaced by the halt, sealed


def inprocess_read_run(ws: Path, claim: claims.Claim, env: dict[str, str]) -> claims.RunState:
    with inprocess.as_process(ws, env):
        found = claims.read_run(Workspace(ws), claim)
    assert found is not None
    return found


def test_a_fleet_membership_written_by_hand_halts(host: SimulatedHost, ws: Path) -> None:
    forged = {
        "slug": "c", "holder": "me", "step": "1.1", "fence": 1, "ttl": 600.0,
        "expires": iso(4e9), "coordinate": None,
    }  # fmt: skip
    (ws / "state" / "fleet").mkdir(mode=0o700)
    (ws / "state" / "fleet" / "c.json").write_text(json.dumps(forged))
    assert halts_told(host, ws, "the fleet membership record state/fleet/c.json")


def test_without_the_persons_key_no_record_is_believed(ws: Path) -> None:
    host = claimed(ws, SimulatedHost(ws))
    (Path(host.env["XDG_STATE_HOME"]) / "agentcfg" / "seal.key").unlink()
    shown = f"this session's run state state/runs/{key_of(host)}-c.json"  # the first it reads
    assert halts_told(host, ws, shown)["record"] == shown


def test_claiming_again_does_not_launder_a_tampered_record(host: SimulatedHost, ws: Path) -> None:
    """What a tampered contract held cannot be read, so it cannot be carried into a new run:
    the claim is refused, naming it, and the run's state is left as it was."""
    path = contract_path(ws, host)
    record = json.loads(path.read_text())
    record["contract"]["steps"] = []
    record["digest"] = hashlib.sha256(canonical(record["contract"])).hexdigest()
    path.write_text(json.dumps(record))
    before = run_path(ws, host).read_bytes()
    again = host.claim("c")
    assert again.returncode == 1
    assert again.stderr == (
        f"agentcfg: error: the run's contract record state/contracts/{key_of(host)}-c.json "
        "failed its seal: agentcfg did not write it so; a person removes it before `c` is "
        "claimed again\n"
    )
    assert run_path(ws, host).read_bytes() == before


def test_a_forged_receipt_refuses_a_new_claim_too(host: SimulatedHost, ws: Path) -> None:
    forge_receipts(ws, host, "1.2")
    again = host.claim("c")
    assert again.returncode == 1
    assert again.stderr.startswith(
        "agentcfg: error: 1 receipt line in state/receipts/c.json (step 1.2) failed its seal"
    )
