"""Run semantics a person can trust, through the simulated host and real hook processes:
questions hand back, the person pauses in words, progress is the work, one outcome per run,
halts are told, the agent cannot narrow its own contract, advisory means advisory."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import claims
from agentcfg.workspace import Workspace
from testing.simhost import FireResult, SimulatedHost
from tests import inprocess
from tests.conftest import fire, run_cli, write_roadmap
from tests.helpers import ledger


def events(root: Path) -> list[str]:
    return [
        e["event"] for e in ledger(root) if e["event"] not in ("trusted", "verified", "marked-done")
    ]


def started(ws: Path, *claim_args: str, env: dict[str, str] | None = None) -> SimulatedHost:
    host = SimulatedHost(ws, env=env, run=inprocess.run)
    assert host.trust("demo").returncode == 0  # the person trusts the verify lines
    host.human("Work through the demo roadmap.")
    assert host.claim("demo", *claim_args).returncode == 0
    return host


def told(result: FireResult) -> str:
    """The line Claude Code shows the person: `systemMessage` on stdout, with exit 0."""
    assert (result.exit_code, result.stderr) == (0, "")
    line: str = json.loads(result.stdout)["systemMessage"]
    return line


# -- questions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "Which should we use: PostgreSQL or SQLite? Let me know which you prefer.",
        "Should the cache live in Redis? Thanks!",
        "Two readings of the spec. Which one is right? I left both behind a flag.",
        "Please confirm that dropping the legacy table is fine.",
    ],
)
def test_a_question_to_the_person_hands_back(ws: Path, message: str) -> None:
    host = started(ws)
    host.reply(message)
    assert told(host.fire()).startswith("agentcfg: roadmap `demo` waits for your answer")
    assert events(ws) == ["handback-question"]  # no refusal: "Let me know" promises nothing


def test_asking_leave_is_refused_once_and_asking_again_hands_back(ws: Path) -> None:
    host = started(ws)
    host.reply("Step 1.2 is done. Shall I continue with 1.3?")
    assert host.fire().stderr.startswith("turn-end-gate: you asked for permission")
    host.reply("Should I go on with 1.3?")
    assert told(host.fire()).startswith("agentcfg: roadmap `demo` waits for your answer")
    assert events(ws) == ["refused", "deferred-quality-gate", "handback-question"]


# -- pause ----------------------------------------------------------------------------------


def test_the_person_pauses_in_words_and_says_go_on(ws: Path, snapshot: SnapshotAssertion) -> None:
    host = started(ws)
    host.reply("Working.")
    assert host.fire().blocked
    host.human("stop")
    host.reply("Stopping here.")
    assert told(host.fire()) == snapshot(name="pause")
    host.reply("Still here.")
    assert host.fire().exit_code == 0  # the same pause: silent
    host.human("What does step 1.3 mean?")  # another prompt that is not "go on"
    host.reply("It reads verify lines from comments. Shall I continue with it?")
    result = host.fire()
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")  # no gate either
    # the person spoke while our block held the turn: the host's turn was cut short
    assert events(ws) == ["engage", "cut-short", "paused"]
    host.human("go on")
    host.reply("Back at it.")
    assert host.fire().next_step == "1.2"
    assert events(ws) == ["engage", "cut-short", "paused", "engage"]


def test_a_re_claim_from_inside_keeps_the_person_s_pause(ws: Path) -> None:
    host = started(ws)
    host.human("pause the roadmap")
    host.reply("Paused.")
    assert host.fire().exit_code == 0
    host.human("Claim the demo roadmap again.")
    assert host.claim("demo").returncode == 0  # the run goes on as it was: paused
    host.reply("Claimed.")
    assert host.fire().exit_code == 0
    host.human("Resume the roadmap.")  # the person's word lifts it
    host.reply("Resuming.")
    assert host.fire().blocked


CODEX_PROMPT = {"type": "event_msg", "payload": {"type": "item_completed", "turn_id": "t-1"}}


def codex_fire(ws: Path, transcript: Path, prompt: str, turn: str) -> str:
    with transcript.open("a") as handle:
        item = {"type": "UserMessage", "id": turn, "content": [{"type": "text", "text": prompt}]}
        record = {**CODEX_PROMPT, "payload": {**CODEX_PROMPT["payload"], "item": item}}
        handle.write(json.dumps(record, separators=(",", ":")) + "\n")
    payload = {
        "session_id": "codex-session",
        "turn_id": turn,
        "transcript_path": str(transcript),
        "cwd": str(ws),
        "hook_event_name": "Stop",
        "model": "m",
        "permission_mode": "default",
        "stop_hook_active": False,
        "last_assistant_message": f"Reply to {turn}.",
    }
    result = fire(ws, payload)
    assert result.returncode in (0, 2)
    return "block" if result.returncode == 2 else "allow"


def test_codex_pause_comes_from_its_transcript(ws: Path) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", "codex-session").exit_code == 0
    transcript = ws / "rollout.jsonl"
    answers = [
        codex_fire(ws, transcript, "Work the roadmap.", "t-1"),
        codex_fire(ws, transcript, "hold on", "t-2"),
        codex_fire(ws, transcript, "ok, carry on", "t-3"),
    ]
    assert answers == ["block", "allow", "block"]
    assert events(ws) == ["engage", "cut-short", "paused", "engage"]


def test_gemini_pause_comes_from_the_payload_prompt(ws: Path) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", "gemini-session").exit_code == 0

    def gemini(prompt: str) -> tuple[int, str]:
        payload = {
            "session_id": "gemini-session",
            "transcript_path": "",
            "cwd": str(ws),
            "hook_event_name": "AfterAgent",
            "timestamp": "2026-11-30T10:00:00Z",
            "prompt": prompt,
            "prompt_response": f"Answered: {prompt}",
            "stop_hook_active": False,
        }
        result = fire(ws, payload, "--host", "gemini")
        return result.returncode, result.stdout

    code, out = gemini("Don't continue, I need to look at the schema.")
    assert code == 0 and json.loads(out)["systemMessage"].startswith("agentcfg: roadmap `demo` is")
    code, out = gemini("resume the roadmap")  # Gemini's block: a JSON decision on stdout
    assert code == 0 and json.loads(out)["decision"] == "deny"
    assert events(ws) == ["paused", "engage"]


# -- progress and outcomes ------------------------------------------------------------------


def test_closing_a_step_while_finding_one_is_progress(ws: Path) -> None:
    roadmap = write_roadmap(ws, "grow", "".join(f"- [ ] **{n}** step {n}\n" for n in (1, 2, 3)))
    host = SimulatedHost(ws, run=inprocess.run)
    host.human("go")
    assert host.claim("grow").returncode == 0
    for n in range(4, 12):  # every turn closes the next step and discovers a new one
        host.reply(f"Turn {n}.")
        result = host.fire()
        assert result.blocked, events(ws)
        done = host.agentcfg("roadmap", "done", "grow", result.next_step or "", "--no-verify")
        assert done.returncode == 0
        roadmap.write_text(roadmap.read_text() + f"- [ ] **{n}** step {n}\n")
    assert set(events(ws)) == {"engage"}


def test_a_run_that_changes_nothing_halts_on_stall_and_is_told(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    host = started(ws)
    results = []
    for n in range(5):
        host.reply(f"Thinking, attempt {n}.")
        results.append(host.fire())
    assert [r.exit_code for r in results] == [2, 2, 2, 0, 0]
    assert told(results[3]) == snapshot(name="halt-stall")
    assert results[4].stdout == ""  # told once
    assert events(ws) == ["engage", "engage", "engage", "halt-stall"]


def test_max_iterations_halt_is_told(ws: Path, snapshot: SnapshotAssertion) -> None:
    host = started(ws, "--max-iterations", "1")
    host.reply("Working.")
    assert host.fire().blocked
    host.agentcfg("roadmap", "done", "demo", "1.2")
    host.reply("Closed 1.2.")
    assert told(host.fire()) == snapshot(name="halt-max-iterations")


def test_wall_clock_halt_is_told(ws: Path) -> None:
    host = started(ws, "--wall-clock", "1s")
    time.sleep(1.1)
    host.reply("Working.")
    assert told(host.fire()).startswith("agentcfg: roadmap `demo` stopped: its wall clock of 1s")
    assert events(ws) == ["halt-wall-clock"]


def test_a_finished_run_is_counted_once(ws: Path) -> None:
    roadmap = write_roadmap(ws, "tiny", "- [ ] **1** only step\n")
    host = SimulatedHost(ws, run=inprocess.run)
    host.human("go")
    host.claim("tiny")
    host.reply("Working.")
    assert host.fire().blocked
    host.agentcfg("roadmap", "done", "tiny", "1", "--no-verify")
    for n in range(5):
        host.reply(f"Done ({n}).")
        assert host.fire().exit_code == 0
    assert events(ws) == ["engage", "reproof", "complete"]  # the last `done` re-proved it
    roadmap.write_text(roadmap.read_text() + "- [ ] **2** a new step\n")
    host.reply("Noted.")
    assert host.fire().next_step == "2"
    report = json.loads(run_cli("report", "--json").output)
    assert (report["runs"], report["outcomes"]) == (1, {"running": 1})


# -- the contract ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "how"),
    [
        ("- [ ] **1.2**", "- [-] **1.2**", "cancelled"),
        ("- [ ] **1.2**", "- [~] **1.2**", "deferred"),
        (
            "**1.2** Scope checkboxes to phases",
            "**1.2** Scope checkboxes to phases <!-- blocked-by: x -->",
            "blocked-by x",
        ),
    ],
)
def test_the_agent_cannot_narrow_its_own_contract(ws: Path, old: str, new: str, how: str) -> None:
    host = started(ws)
    host.reply("Working.")
    assert host.fire().next_step == "1.2"
    roadmap = ws / "roadmaps" / "demo.md"
    roadmap.write_text(roadmap.read_text().replace(old, new))
    host.reply("Moved on.")
    refused = host.fire()
    assert refused.stderr.startswith("turn-end-gate: the contract of this autonomous run")
    assert f"step 1.2 was marked {how}" in refused.stderr
    assert [e.get("detector") for e in ledger(ws) if e["event"] == "refused"] == ["contract-change"]
    host.human("fine, leave it")  # words are not the person's command that accepts it
    host.reply("Left it.")
    assert told(host.fire()).startswith("agentcfg: roadmap `demo` stopped: its contract changed")
    assert events(ws)[-1] == "halt-contract-changed"  # refused once, then halted, told


def test_release_from_inside_the_session_is_recorded(ws: Path) -> None:
    host = started(ws)
    result = host.agentcfg("sessions", "release")
    assert result.stdout.strip().endswith("from inside an agent's session; its run stays as it was")
    released = [e for e in ledger(ws) if e["event"] == "released"]
    assert [(e["slug"], e["inside_session"]) for e in released] == [("demo", True)]
    outside = run_cli("sessions", "release", "--session", "someone-else")
    assert "holds no claim" in outside.output
    report = run_cli("report").output
    assert "released: 1 (1 from inside the claimed session)" in report


def test_claim_budgets_are_clamped_with_a_note(ws: Path) -> None:
    result = run_cli(
        "sessions", "claim", "demo", "--session", "s",
        "--max-iterations", "5000", "--wall-clock", "30d",
    )  # fmt: skip
    assert result.exit_code == 0
    assert result.output.splitlines()[:2] == [
        "note: --max-iterations: 5000 is above the limit of 1000; using 1000",
        "note: --wall-clock: 30d0h is above the limit of 7d0h; using 7d0h",
    ]
    claim = claims.read_claim(Workspace(ws), claims.session_key("s"))
    assert claim is not None and (claim.max_iterations, claim.wall_clock) == (1000, 7 * 86400.0)


def test_an_advisory_gate_warns_and_the_continuation_still_engages(ws: Path) -> None:
    (ws / "agentcfg.yaml").write_text(
        "chain:\n  stop:\n    - {name: turn-end-gate, severity: advisory}\n    - run-continuation\n"
    )
    host = started(ws)
    host.reply("Fixed the parser. Now I'll run the tests.")
    result = host.fire()
    assert result.blocked and result.stderr.startswith("run-continuation:")
    assert events(ws) == ["refused", "engage"]
    assert next(e for e in ledger(ws) if e["event"] == "refused")["advisory"] is True
    marker = ws / "state" / "refusals" / f"{claims.session_key(host.session_id)}.json"
    assert not marker.exists()  # no marker of a refusal that never was


@pytest.mark.parametrize(("raw", "silent"), [("TRUE", True), ("on", True), ("0", False)])
def test_the_kill_switch_reads_like_a_switch(ws: Path, raw: str, silent: bool) -> None:
    host = started(ws, env={"AGENTCFG_NO_RUN_CONTINUATION": raw})
    host.reply("Working.")
    assert host.fire().blocked is not silent
