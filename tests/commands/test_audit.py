"""Receipts (what `roadmap done` leaves behind) and `roadmap audit`, the reviewer's check."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.conftest import run_cli, write_roadmap
from tests.helpers import git, ledger

BODY = """## Phase 1
- [ ] **1.1** Build the parser <!-- verify: echo parsed -->
- [ ] **1.2** Build the ladder <!-- verify: true -->
- [ ] **1.3** Write the docs
- [ ] **1.4** Build the report <!-- verify: test -f report.txt -->
"""


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def road(ws: Path) -> Path:
    path = write_roadmap(ws, "r", BODY)
    assert run_cli("roadmap", "trust", "r").exit_code == 0
    return path


def receipts(root: Path) -> list[dict[str, object]]:
    return [e for e in ledger(root) if e["event"] == "verified"]


def test_a_receipt_holds_the_proof_outside_a_git_repository(road: Path, ws: Path) -> None:
    assert run_cli("roadmap", "done", "r", "1.1").exit_code == 0
    (event,) = receipts(ws)
    assert {k: event[k] for k in ("step", "exit_code", "passed", "head", "dirty")} == {
        "step": "1.1", "exit_code": 0, "passed": True, "head": None, "dirty": None,
    }  # fmt: skip
    assert event["command"] == sha("echo parsed")
    assert event["text"] == sha("Build the parser")
    assert event["output"] == sha("parsed\n")  # everything the verify line printed
    assert isinstance(event["duration"], float) and event["duration"] >= 0
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(event["at"]))


def test_a_receipt_names_the_commit_and_a_dirty_tree(road: Path, ws: Path) -> None:
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "start")
    head = git(ws, "rev-parse", "HEAD")
    assert run_cli("roadmap", "done", "r", "1.1").exit_code == 0  # the tree is clean
    git(ws, "commit", "-q", "-am", "1.1 done")
    (ws / "scratch.txt").write_text("not committed\n")
    assert run_cli("roadmap", "done", "r", "1.2").exit_code == 0
    first, second = receipts(ws)
    assert (first["head"], first["dirty"]) == (head, False)
    assert (second["head"], second["dirty"]) == (git(ws, "rev-parse", "HEAD"), True)


def test_a_failing_verify_line_leaves_no_receipt(road: Path, ws: Path) -> None:
    assert run_cli("roadmap", "done", "r", "1.4").exit_code == 1
    (event,) = receipts(ws)
    assert (event["passed"], event["exit_code"]) == (False, 1)
    assert not (ws / "state" / "receipts" / "r.json").exists()
    assert json.loads(run_cli("roadmap", "audit", "r", "--json").output)["steps"][3]["status"] == (
        "open"
    )


def test_audit_sorts_proven_unproven_stale_and_open(
    road: Path, ws: Path, snapshot: SnapshotAssertion
) -> None:
    assert run_cli("roadmap", "done", "r", "1.1").exit_code == 0
    assert run_cli("roadmap", "done", "r", "1.2").exit_code == 0
    assert run_cli("roadmap", "done", "r", "1.3", "--no-verify").exit_code == 0  # none to run
    road.write_text(road.read_text().replace("verify: true", "verify: echo changed"))
    road.write_text(road.read_text().replace("- [ ] **1.4**", "- [x] **1.4**"))  # by hand
    result = run_cli("roadmap", "audit", "r")
    assert result.exit_code == 1
    shown = re.sub(r"receipt \S+Z", "receipt <at>", result.output)
    assert shown == snapshot
    data = json.loads(run_cli("roadmap", "audit", "r", "--json").output)
    assert [(s["step"], s["status"]) for s in data["steps"]] == [
        ("1.1", "proven"), ("1.2", "stale"), ("1.3", "proven"), ("1.4", "unproven"),
    ]  # fmt: skip
    assert data["counts"] == {"proven": 2, "unproven": 1, "stale": 1, "open": 0}
    assert data["ok"] is False


def test_audit_passes_when_every_tick_is_proven_and_rerun_catches_a_regression(
    road: Path, ws: Path
) -> None:
    (ws / "report.txt").write_text("ok\n")
    for step in ("1.1", "1.4"):
        assert run_cli("roadmap", "done", "r", step).exit_code == 0
    assert run_cli("roadmap", "audit", "r").exit_code == 0
    again = run_cli("roadmap", "audit", "r", "--rerun", "--json")
    assert again.exit_code == 0
    assert [s["rerun"] for s in json.loads(again.output)["steps"][::3]] == [
        {"exit_code": 0, "passed": True}, {"exit_code": 0, "passed": True},
    ]  # fmt: skip
    (ws / "report.txt").unlink()  # the tree no longer holds what 1.4 proved
    assert run_cli("roadmap", "audit", "r").exit_code == 0  # the receipt still stands
    broken = run_cli("roadmap", "audit", "r", "--rerun")
    assert broken.exit_code == 1
    assert re.search(r"1\.4\s+proven .*rerun: FAIL — it no longer passes", broken.output)


def test_audit_reruns_only_trusted_lines(road: Path, ws: Path) -> None:
    assert run_cli("roadmap", "done", "r", "1.1").exit_code == 0
    store = ws.parent / "xdg" / "agentcfg" / "trust.json"
    store.unlink()
    result = run_cli("roadmap", "audit", "r", "--rerun")
    assert result.exit_code == 1
    assert "verify lines no person has trusted (1.1 untrusted)" in result.output


def test_audit_counts_only_contracted_steps_once_a_run_recorded_its_contract(
    road: Path, ws: Path
) -> None:
    road.write_text(road.read_text().replace("- [ ] **1.3**", "- [x] **1.3**"))
    assert run_cli("roadmap", "audit", "r").exit_code == 1  # no contract: every tick counts
    assert run_cli("sessions", "claim", "r", "--session", "s").exit_code == 0
    result = run_cli("roadmap", "audit", "r", "--json")
    assert result.exit_code == 0  # ticked before the run began: not the run's to prove
    row = json.loads(result.output)["steps"][2]
    assert (row["status"], row["contracted"]) == ("unproven", False)


def test_a_receipt_made_before_the_step_joined_a_run_does_not_prove_it(
    road: Path, ws: Path
) -> None:
    assert run_cli("roadmap", "done", "r", "1.1").exit_code == 0
    road.write_text(road.read_text().replace("- [x] **1.1**", "- [ ] **1.1**"))  # reopened
    assert run_cli("sessions", "claim", "r", "--session", "s-1").exit_code == 0  # 1.1 joins now
    road.write_text(road.read_text().replace("- [ ] **1.1**", "- [x] **1.1**"))  # by hand
    result = run_cli("roadmap", "audit", "r")
    assert result.exit_code == 1
    assert re.search(r"1\.1\s+unproven", result.output)


def test_two_steps_of_the_same_text_and_line_each_need_their_own_receipt(ws: Path) -> None:
    twins = "## Phase 1\n- [ ] **1.1** Same <!-- verify: true -->\n" + (
        "- [ ] **1.2** Same <!-- verify: true -->\n"
    )
    road = write_roadmap(ws, "t", twins)
    assert run_cli("roadmap", "trust", "t").exit_code == 0
    assert run_cli("roadmap", "done", "t", "1.1").exit_code == 0
    road.write_text(road.read_text().replace("- [ ] **1.2**", "- [x] **1.2**"))  # by hand
    data = json.loads(run_cli("roadmap", "audit", "t", "--json").output)
    assert [(s["step"], s["status"]) for s in data["steps"]] == [
        ("1.1", "proven"), ("1.2", "unproven"),
    ]  # fmt: skip
