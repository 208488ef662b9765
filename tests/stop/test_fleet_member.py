"""The stop hook in a fleet member's workspace: the continuation names the leased step (never
another open one), the run completes when that step is closed, a turn end renews the lease once
due, and a lease that passed to another member is told, not worked on."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from syrupy.assertion import SnapshotAssertion

from agentcfg.contract import seal
from agentcfg.fleet.leases import Store
from agentcfg.fleet.membership import read_membership, remember
from agentcfg.paths import FLEET
from agentcfg.workspace import Workspace
from tests.conftest import FIXTURES, SESSION, fire, fixture_payload, ledger, run_cli


def member(ws: Path, step: str, ttl: str = "15m") -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
    shutil.copy(FIXTURES / "transcript.jsonl", ws / "transcript.jsonl")
    claimed = run_cli(
        "sessions", "claim", "demo", "--session", SESSION, "--step", step, "--lease-ttl", ttl
    )
    assert claimed.exit_code == 0, claimed.output
    return ws


def test_the_continuation_names_the_leased_step_not_the_first_open_one(ws: Path) -> None:
    member(ws, "2.1")
    result = fire(ws, fixture_payload(1, ws))
    assert result.returncode == 2
    assert "Next step: **2.1**" in result.stderr and "**1.2**" not in result.stderr
    assert [e.get("step") for e in ledger(ws) if e["event"] == "engage"] == ["2.1"]


def test_the_members_run_is_complete_once_its_step_is_closed(ws: Path) -> None:
    member(ws, "2.1")
    assert run_cli("roadmap", "trust", "demo").exit_code == 0
    assert run_cli("roadmap", "done", "demo", "2.1").exit_code == 0  # a receipt closes it
    result = fire(ws, fixture_payload(1, ws))
    assert result.returncode == 0
    assert [e["event"] for e in ledger(ws) if e["event"] != "leased"][-1] == "complete"


def test_a_due_renewal_happens_at_the_turn_end(ws: Path) -> None:
    member(ws, "auto", ttl="20s")
    found = read_membership(Workspace(ws), "demo")
    assert found is not None
    due = found._replace(expires=time.time() + 5)  # less than half of its 20 s left
    remember(Workspace(ws), due)
    fire(ws, fixture_payload(1, ws))
    after = read_membership(Workspace(ws), "demo")
    assert after is not None and after.expires >= due.expires + 10
    _, lease = Store.open(ws).read("demo", found.step)
    assert lease is not None and lease.expires == after.expires


def test_a_lease_that_passed_on_is_told_and_the_step_left_alone(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    member(ws, "1.2")
    found = read_membership(Workspace(ws), "demo")
    assert found is not None  # its renewal is due: the turn end asks git, and learns it lost
    remember(Workspace(ws), found._replace(expires=found.expires - 3600))
    store = Store.open(ws)
    store.release("demo", "1.2", None, now=0.0)
    assert store.take("demo", "1.2", "someone-else", host="codex", now=4_000_000_000.0)
    result = fire(ws, fixture_payload(1, ws))
    assert result.returncode == 0
    assert [e["event"] for e in ledger(ws)][-1] == "lease-lost"
    told = json.loads(result.stdout)["systemMessage"]
    assert told == snapshot


def test_a_membership_naming_no_step_of_the_roadmap_is_ignored_not_obeyed(ws: Path) -> None:
    """A plain run's agent writes a lease on a step the roadmap lacks: its open work would
    narrow to nothing and the run end `complete`; the hook ignores it, told in the ledger."""
    shutil.copy(FIXTURES / "transcript.jsonl", ws / "transcript.jsonl")
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    forged = {
        "slug": "demo", "holder": "me", "step": "9.9", "fence": 1, "ttl": 900,
        "expires": "2099-01-01T00:00:00Z", "coordinate": None,
    }  # fmt: skip
    (ws / "state" / "fleet").mkdir(mode=0o700)
    sealed = {**forged, seal.FIELD: seal.sign(FLEET, "demo", forged)}  # it read the key
    (ws / "state" / "fleet" / "demo.json").write_text(json.dumps(sealed))
    result = fire(ws, fixture_payload(1, ws))
    assert result.returncode == 2  # the run goes on: its open steps are still open
    events = [e["event"] for e in ledger(ws)]
    assert "membership-ignored" in events and "complete" not in events
    assert events[-1] == "engage"
