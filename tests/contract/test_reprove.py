"""The re-proof at a run's end and its final record, in process: every contracted step's trusted
verify line again, a shared line once, a failing step reopened, what changed under a check,
and the record the stop hook asks for."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import loading
from agentcfg.contract import finals, reprove, verify
from agentcfg.contract import store as contract
from agentcfg.contract.model import Contract, Receipt, Term, command_hash, text_hash
from agentcfg.contract.verify import VerifyResult
from agentcfg.core.roadmap import Step
from agentcfg.workspace import Workspace
from tests.conftest import run_cli, write_roadmap
from tests.helpers import ledger

BODY = """## Phase 1
- [ ] **1.1** Build the parser <!-- verify: true -->
- [ ] **1.2** Build the ladder <!-- verify: true -->
- [ ] **1.3** Build the report <!-- verify: test -f report.txt -->
- [ ] **1.4** Write the docs
"""


@pytest.fixture
def road(ws: Path) -> Path:
    path = write_roadmap(ws, "r", BODY)
    assert run_cli("roadmap", "trust", "r").exit_code == 0
    assert run_cli("sessions", "claim", "r", "--session", "s-1").exit_code == 0
    return path


def done_all(ws: Path) -> None:
    (ws / "report.txt").write_text("ok\n")
    for step in ("1.1", "1.2", "1.3"):
        assert run_cli("roadmap", "done", "r", step).exit_code == 0
    assert run_cli("roadmap", "done", "r", "1.4", "--no-verify").exit_code == 0


class Counted:
    """verify.run, counting each command it runs."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def __call__(self, step: Step, cwd: Path, timeout: float) -> VerifyResult:
        self.commands.append(step.verify or "")
        return verify.run(step, cwd, timeout)


def test_every_contracted_step_passes_again_and_a_shared_line_runs_once(
    road: Path, ws: Path
) -> None:
    done_all(ws)
    counted = Counted()
    found = reprove.reprove(Workspace(ws), "r", os.environ, now=time.time(), run=counted)
    assert found.ok and found.passed == ("1.1", "1.2", "1.3", "1.4")
    assert sorted(counted.commands) == ["test -f report.txt", "true"]  # `true` once for two
    assert found.commands == 2
    assert found.summary().startswith("re-proof 4 steps in ")
    final = finals.read_final(Workspace(ws), "r")
    assert final is not None and final.passed and final.at <= time.time()
    roadmap = loading.load(Workspace(ws), "r")
    assert finals.covers(final, None, roadmap)
    assert [e["event"] for e in ledger(ws)][-1] == "reproof"


def test_a_failing_step_is_reopened_told_and_its_final_receipt_overrides_the_pass(
    road: Path, ws: Path
) -> None:
    done_all(ws)
    (ws / "report.txt").unlink()  # what 1.3 proved is gone from the final tree
    found = reprove.reprove(Workspace(ws), "r", os.environ, now=time.time())
    assert found.failed == (("1.3", "exit 1"),) and found.reopened == ("1.3",)
    assert "- [ ] **1.3**" in road.read_text() and "- [x] **1.2**" in road.read_text()
    event = ledger(ws)[-1]
    assert (event["event"], event["steps"]) == ("reproof-reopened", ["1.3"])
    final = finals.read_final(Workspace(ws), "r")
    assert final is not None and not final.passed
    assert not finals.covers(final, None, loading.load(Workspace(ws), "r"))
    (newest,) = [r for r in contract.read_receipts(Workspace(ws), "r") if r.step == "1.3"][-1:]
    assert (newest.final, newest.passed) == (True, False)
    audit = run_cli("roadmap", "audit", "r")
    assert audit.exit_code == 1  # reopened, and the run did not end on a proof
    assert "1.3  open      failed the re-proof at the run's end (exit 1)" in audit.output
    road.write_text(road.read_text().replace("- [ ] **1.3**", "- [x] **1.3**"))  # ticked again
    again = run_cli("roadmap", "audit", "r")
    assert again.exit_code == 1 and "1.3  unproven" in again.output
    (ws / "report.txt").write_text("ok\n")
    assert run_cli("roadmap", "done", "r", "1.3").exit_code == 0  # a new receipt, a new proof
    assert run_cli("roadmap", "audit", "r").exit_code == 0


def test_a_check_that_changed_since_trust_fails_its_step(road: Path, ws: Path) -> None:
    done_all(ws)

    def changed(step: Step) -> tuple[str, ...]:
        return ("tests/test_x.py",) if step.id == "1.2" else ()

    found = reprove.reprove(Workspace(ws), "r", os.environ, now=time.time(), changed=changed)
    assert found.failed == (("1.2", "check changed: tests/test_x.py"),)


def test_a_tick_without_a_receipt_an_untrusted_line_and_an_open_step_never_pass(
    road: Path, ws: Path
) -> None:
    (ws / "report.txt").write_text("ok\n")
    assert run_cli("roadmap", "done", "r", "1.3").exit_code == 0
    road.write_text(road.read_text().replace("- [ ] **1.1**", "- [x] **1.1**"))  # by hand
    (ws.parent / "xdg" / "agentcfg" / "trust.json").unlink()
    found = reprove.reprove(Workspace(ws), "r", os.environ, now=time.time(), reopen=False)
    assert dict(found.failed) == {
        "1.1": "no receipt", "1.2": "open", "1.3": "not trusted", "1.4": "open",
    }  # fmt: skip
    assert "- [x] **1.1**" in road.read_text()  # reopen=False: the boxes stay


def test_only_restricts_the_re_proof_and_no_record_is_written(road: Path, ws: Path) -> None:
    done_all(ws)
    finals.path_of(Workspace(ws), "r").unlink()  # the last `done` re-proved them all
    found = reprove.reprove(
        Workspace(ws), "r", os.environ, now=time.time(), only=frozenset({"1.2"}), record=False
    )
    assert found.passed == ("1.2",)
    assert finals.read_final(Workspace(ws), "r") is None


def test_mark_open_unticks_exactly_one_box(road: Path, ws: Path) -> None:
    done_all(ws)
    before = road.read_bytes()
    verify.mark_open(Workspace(ws), "r", "1.2")
    after = road.read_bytes()
    assert after == before.replace(b"- [x] **1.2**", b"- [ ] **1.2**")
    with pytest.raises(Exception, match="is open, not done"):
        verify.mark_open(Workspace(ws), "r", "1.2")


def test_covers_needs_the_roadmap_as_it_was_and_every_contracted_step(road: Path, ws: Path) -> None:
    done_all(ws)
    workspace = Workspace(ws)
    reprove.reprove(workspace, "r", os.environ, now=time.time())
    final = finals.read_final(workspace, "r")
    roadmap = loading.load(workspace, "r")
    terms = tuple(Term.of(s, 0.0) for s in roadmap.steps)
    assert finals.covers(final, Contract("autonomous", 0.0, terms), roadmap)
    road.write_text(road.read_text() + "- [x] **1.5** More\n")  # the roadmap moved on
    assert not finals.covers(final, None, loading.load(workspace, "r"))
    assert final is not None
    short = final._replace(steps=final.steps[:2])
    assert not finals.covers(short, Contract("autonomous", 0.0, terms), roadmap)
    assert not finals.covers(None, None, roadmap)


def test_a_final_record_of_another_shape_is_none(ws: Path) -> None:
    path = ws / "state" / "finals" / "r.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"version": 1, "slug": "r", "steps": "no"}')
    assert finals.read_final(Workspace(ws), "r") is None


def test_the_newest_receipt_decides_and_each_step_needs_its_own() -> None:
    from agentcfg.contract.model import proven

    term = Term("1.2", text_hash("Same"), "true", False, 10.0)
    good = Receipt("1.2", term.text, command_hash("true"), 0, 11.0)
    failed = good._replace(exit_code=1, at=12.0, final=True)
    assert proven(term, (good,))
    assert not proven(term, (good, failed))  # a failing re-proof overrides an older pass
    assert proven(term, (good, failed, good._replace(at=13.0)))
    twin = term._replace(id="1.3")  # the same text and verify line: a proof of its own
    assert not proven(twin, (good,))
    assert proven(twin, (good._replace(step="1.3"),))
    assert not proven(term, (good._replace(at=9.0),))  # made before it joined


def shown(output: str) -> str:
    """A command's output with its timings fixed."""
    import re

    return re.sub(r"\d+\.\d+ ?s\b", "N.N s", output)


def test_the_last_done_and_verify_final_say_what_the_re_proof_found(
    road: Path, ws: Path, snapshot: SnapshotAssertion
) -> None:
    (ws / "report.txt").write_text("ok\n")
    for step in ("1.1", "1.2", "1.3"):
        assert run_cli("roadmap", "done", "r", step).exit_code == 0
    last = run_cli("roadmap", "done", "r", "1.4", "--no-verify")
    assert last.exit_code == 0
    (ws / "report.txt").unlink()
    final = run_cli("roadmap", "verify", "r", "--final")
    assert final.exit_code == 1
    as_json = json.loads(run_cli("roadmap", "verify", "r", "--final", "--json").output)
    assert (as_json["ok"], as_json["failed"]) == (False, [{"step": "1.3", "reason": "open"}])
    named = run_cli("roadmap", "verify", "r", "1.1", "--final")
    assert named.exit_code == 2 and "--final re-proves every contracted step" in named.output
    assert shown(last.output) + "---\n" + shown(final.output) == snapshot
