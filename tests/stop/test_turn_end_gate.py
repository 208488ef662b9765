"""turn-end-gate through the hook: one refusal a turn for each detector, its scope, its switches
and modes, and run-continuation deferring to what it refused."""

from __future__ import annotations

from pathlib import Path

from syrupy.assertion import SnapshotAssertion

from testing.simhost import SimulatedHost
from tests import inprocess
from tests.helpers import events, ledger, started


def test_deference_is_refused_once_and_continuation_defers(ws: Path) -> None:
    host = started(ws)
    host.reply("Step 1.2 looks good. Would you like me to continue with 1.3?")
    first = host.fire(feedback=False)
    assert first.exit_code == 2
    assert first.stderr.startswith("turn-end-gate: you asked for permission")
    assert events(ws) == ["refused", "deferred-quality-gate"]
    assert ledger(ws)[0]["detector"] == "deference"
    again = host.fire()  # a second fire for the same reply: no second refusal, no engage
    assert again.exit_code == 0
    host.reply("Shall I proceed?")  # asking again after the refusal: it hands back
    later = host.fire()
    assert later.exit_code == 0
    assert events(ws)[2:] == ["deferred-quality-gate", "handback-question"]


def test_promissory_closing_is_refused_once_per_turn(ws: Path, snapshot: SnapshotAssertion) -> None:
    host = started(ws)
    host.reply("Fixed the parser. Now I'll run the tests.")
    first = host.fire()
    assert first.exit_code == 2
    assert first.stderr == snapshot
    host.reply("Next, I will run the tests.")
    second = host.fire()
    assert second.stderr.startswith("run-continuation:")
    assert [e.get("detector") for e in ledger(ws) if e["event"] == "refused"] == [
        "promissory-closing"
    ]


def test_unverified_completion_needs_a_command_in_the_turn(ws: Path) -> None:
    host = started(ws)
    host.human("Is it finished?")
    host.reply("All tests pass.")
    refused = host.fire()
    assert refused.stderr.startswith("turn-end-gate: your last message claims")
    host.human("Check again.")
    host.tool("make test", "182 passed")
    host.reply("All tests pass.")
    assert host.fire().stderr.startswith("run-continuation:")
    assert [e["detector"] for e in ledger(ws) if e["event"] == "refused"] == [
        "unverified-completion"
    ]


def test_gate_scope_always_acts_without_a_claim(ws: Path) -> None:
    (ws / "agentcfg.yaml").write_text("turn_end_gate: {scope: always}\n")
    host = SimulatedHost(ws, run=inprocess.run)
    host.human("go")
    host.reply("Let me run the linter now.")
    result = host.fire()
    assert result.exit_code == 2
    assert result.stderr.startswith("turn-end-gate: your last message promises work")
    (ws / "agentcfg.yaml").write_text("turn_end_gate: {scope: claimed}\n")
    host.human("again")
    host.reply("Let me run the linter now.")
    assert host.fire().exit_code == 0


def test_detectors_can_be_switched_off(ws: Path) -> None:
    (ws / "agentcfg.yaml").write_text("turn_end_gate: {promissory-closing: false}\n")
    host = started(ws)
    host.reply("Now I'll run the tests.")
    assert host.fire().stderr.startswith("run-continuation:")


def test_shadow_and_off_modes_rule_the_gate_too(ws: Path) -> None:
    (ws / "agentcfg.yaml").write_text("mode: shadow\n")
    host = started(ws)
    host.reply("Would you like me to continue?")
    assert host.fire().exit_code == 0
    refused = [e for e in ledger(ws) if e["event"] == "refused"]
    assert [(e["detector"], e["shadow"]) for e in refused] == [("deference", True)]
    (ws / "agentcfg.yaml").write_text("mode: off\n")
    host.human("again")
    host.reply("Shall I proceed?")
    assert host.fire().exit_code == 0
    assert len([e for e in ledger(ws) if e["event"] == "refused"]) == 1
