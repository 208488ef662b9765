"""run-continuation through the hook: runs that complete, stall, hit their caps or hand back,
its switches and modes, halts that are told once, and the tokens each recorded fire spent."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from testing.simhost import SimulatedHost
from tests import inprocess
from tests.conftest import FIXTURES, SESSION, fire, fixture_payload, run_cli
from tests.helpers import events, ledger, run_file, started

SPEND = {"input_tokens": 30, "output_tokens": 200, "cache_read_input_tokens": 5000,
         "cache_creation_input_tokens": 770}  # fmt: skip
PER_MESSAGE = {"input": 30, "output": 200, "cache_read": 5000, "cache_write": 770, "total": 6000}


def told(result: subprocess.CompletedProcess[str]) -> str:
    """The line Claude Code shows the person: `systemMessage` on stdout, exit 0."""
    assert (result.returncode, result.stderr) == (0, "")
    message: str = json.loads(result.stdout)["systemMessage"]
    return message


def test_a_run_that_completes(ws: Path) -> None:
    host = SimulatedHost(ws)  # every fire and command a process of its own, as on a real host
    host.human("work the roadmap")
    assert host.trust("demo").returncode == 0
    assert host.claim("demo").returncode == 0
    host.reply("Claimed.")
    roadmap = ws / "roadmaps" / "demo.md"
    named = []
    for _ in range(10):
        result = host.fire()
        if not result.blocked:
            break
        assert result.next_step is not None
        named.append(result.next_step)
        assert host.agentcfg("roadmap", "done", "demo", result.next_step).returncode == 0
        host.reply(f"Closed {result.next_step}.")
    assert named == ["1.2", "1.3", "2.1"]
    assert [e for e in events(ws) if e not in ("trusted", "verified", "marked-done")] == [
        "engage", "engage", "engage", "blocked"
    ]  # fmt: skip
    roadmap.write_text(roadmap.read_text().replace("<!-- blocked-by: cache-design -->", ""))
    host.human("2.2 is unblocked")
    host.reply("ok")
    assert host.fire().next_step == "2.2"
    host.agentcfg("roadmap", "done", "demo", "2.2")
    host.reply("Closed 2.2.")
    assert host.fire().exit_code == 0
    assert events(ws)[-5:] == ["engage", "verified", "marked-done", "reproof", "complete"]
    written = len(events(ws))
    for n in range(4):  # a finished run: later fires allow silently, with no ledger line
        host.reply(f"All wrapped up ({n}). Anything else?")
        assert (host.fire().exit_code, len(events(ws))) == (0, written)
    run = json.loads(run_file(ws, host.session_id).read_text())
    assert (run["ended"], run["iterations"]) == ("complete", 4)
    deferred = "(deferred by a person)\n"
    roadmap.write_text(roadmap.read_text().replace(deferred, deferred + "- [ ] **2.4** More\n"))
    host.human("I added 2.4")
    host.reply("Noted.")
    assert host.fire().next_step == "2.4"  # new work: the same run goes on
    assert ledger(ws)[-1]["iterations"] == 5
    assert json.loads(run_cli("report", "--json").output)["runs"] == 1


def test_a_run_that_never_progresses_halts_on_stall_after_three_engagements(ws: Path) -> None:
    host = started(ws)
    codes = []
    for n in range(6):
        host.reply(f"Still thinking, attempt {n}.")
        codes.append(host.fire().exit_code)
    assert codes == [2, 2, 2, 0, 0, 0]
    assert events(ws) == ["engage", "engage", "engage", "halt-stall"]
    assert json.loads(run_file(ws, host.session_id).read_text())["halted"] == "halt-stall"


@pytest.mark.parametrize(("host", "told"), [("claude", True), ("x; rm -rf /", False)])
def test_a_halt_in_an_unattended_run_names_the_command_to_run_next(
    ws: Path, host: str, told: bool
) -> None:
    """`agentcfg run` names its host in the host's environment: nobody is in the session to
    have the agent claim again, so the person's line names the run to start instead (a value
    that is not a host's name is not shown)."""
    host_sim = started(ws, env={"AGENTCFG_RUN_HOST": host})
    for n in range(4):
        host_sim.reply(f"Still thinking, attempt {n}.")
        last = host_sim.fire()
    assert events(ws)[-1] == "halt-stall"
    note = json.loads(last.stdout)["systemMessage"]
    if told:
        assert "then run `agentcfg run demo --host claude` to go on." in note
        assert "have the agent" not in note
    else:
        assert "have the agent claim it again to go on: `agentcfg sessions claim demo`" in note


def test_max_iterations_of_the_claim(ws: Path) -> None:
    host = started(ws, "--max-iterations", "2")
    codes, texts = [], []
    for _ in range(4):
        result = host.fire()
        codes.append(result.exit_code)
        texts.append(result.stderr)
        if result.next_step:
            host.agentcfg("roadmap", "done", "demo", result.next_step)
        host.reply(f"progress {len(codes)}")
    assert codes == [2, 2, 0, 0]
    assert [e for e in events(ws) if e == "engage" or e.startswith("halt")] == [
        "engage", "engage", "halt-max-iterations"
    ]  # fmt: skip
    assert "iteration 2/2." in texts[1]


def test_a_real_question_hands_back(ws: Path) -> None:
    host = started(ws)
    host.reply("The cache could live in Redis or on disk. Which one do you want?")
    assert host.fire().exit_code == 0
    assert events(ws) == ["handback-question"]


def test_background_tasks_hand_back(ws: Path) -> None:
    host = started(ws)
    host.reply("Started the build in the background.")
    result = host.fire(background_tasks=[{"id": "b1", "status": "running"}])
    assert result.exit_code == 0
    assert events(ws) == ["handback-background"]


def test_subagent_stops_are_silent(ws: Path) -> None:
    host = started(ws)
    host.reply("Would you like me to continue?")
    result = host.fire(hook_event_name="SubagentStop")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert events(ws) == []


@pytest.mark.parametrize(
    ("env", "config"),
    [
        ({"AGENTCFG_NO_RUN_CONTINUATION": "1"}, None),
        ({"AGENTCFG_REPLAY": "1"}, None),
        ({}, "mode: off\n"),
        ({"AGENTCFG_MODE": "off"}, "mode: enforce\n"),
    ],
)
def test_switches_silence_continuation(ws: Path, env: dict[str, str], config: str | None) -> None:
    if config:
        (ws / "agentcfg.yaml").write_text(config)
    host = started(ws, env=env)
    host.reply("Working.")
    assert host.fire().exit_code == 0
    assert events(ws) == []


def test_shadow_mode_records_without_blocking(ws: Path) -> None:
    (ws / "agentcfg.yaml").write_text("mode: shadow\n")
    host = started(ws)
    host.reply("Working.")
    assert host.fire().exit_code == 0
    assert events(ws) == ["shadow-engage"]


def test_interactive_roadmap_is_not_continued(ws: Path) -> None:
    text = (
        (ws / "roadmaps" / "demo.md").read_text().replace("mode: autonomous", "mode: interactive")
    )
    (ws / "roadmaps" / "demo.md").write_text(text)
    host = started(ws)
    host.reply("Would you like me to continue?")
    assert host.fire().exit_code == 0
    assert events(ws) == []


def test_an_unreadable_roadmap_halts_and_is_told_once(
    claimed: Path, snapshot: SnapshotAssertion
) -> None:
    (claimed / "roadmaps" / "demo.md").write_bytes(b"\x00\xff binary now")
    assert told(fire(claimed, fixture_payload(1, claimed))) == snapshot
    assert events(claimed) == ["halt-roadmap-absent", "error"]
    again = fire(claimed, fixture_payload(2, claimed))
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    assert events(claimed)[2:] == ["error"]  # the halt is written once


def test_a_deleted_roadmap_halts_and_is_told(claimed: Path) -> None:
    (claimed / "roadmaps" / "demo.md").unlink()
    assert "the claimed roadmap is gone" in told(fire(claimed, fixture_payload(1, claimed)))
    assert events(claimed) == ["halt-roadmap-absent"]


def test_a_corrupt_run_state_halts_and_is_told_once(
    claimed: Path, snapshot: SnapshotAssertion
) -> None:
    run_file(claimed, SESSION).write_text('{"started_at": "torn')
    assert told(fire(claimed, fixture_payload(1, claimed))) == snapshot
    assert events(claimed) == ["halt-state-unreadable"]
    assert fire(claimed, fixture_payload(2, claimed)).stdout == ""
    assert events(claimed) == ["halt-state-unreadable"]


def test_each_recorded_fire_carries_the_tokens_of_its_segment(ws: Path) -> None:
    host = SimulatedHost(ws, usage=SPEND, run=inprocess.run)
    host.human("work the roadmap")
    host.claim("demo")  # one model message (the tool call) so far
    host.reply("Claimed.")
    first = host.fire(feedback=False)
    host.fire()  # a second fire of the same reply: uncounted, records nothing
    host.agentcfg("roadmap", "done", "demo", str(first.next_step))
    host.reply("Closed it.")
    host.fire()
    host.reply("Thinking.")
    host.reply("Still thinking.")
    read_to = host.transcript.stat().st_size  # the fire's feedback lands after this
    host.fire()
    recorded = [(e["event"], e["tokens"]) for e in ledger(ws) if "tokens" in e]
    twice = {k: 2 * v for k, v in PER_MESSAGE.items()}
    assert recorded == [("engage", twice), ("engage", twice), ("engage", twice)]
    run = json.loads(run_file(ws, host.session_id).read_text())
    assert run["tokens"] == 36000
    assert run["mark"] == [str(host.transcript), read_to]


def test_the_token_budget_halts_the_run(ws: Path) -> None:
    host = SimulatedHost(ws, usage=SPEND, run=inprocess.run)
    host.human("go")
    host.claim("demo", "--max-tokens", "20000")
    codes = []
    for n in range(4):
        host.reply(f"attempt {n}")
        codes.append(host.fire().exit_code)
    # 12,000 at the first fire (two messages), then 6,000 a fire: 18,000, then 24,000 halts
    assert codes == [2, 2, 0, 0]
    assert events(ws) == ["engage", "engage", "halt-token-budget"]
    assert [e["tokens"]["total"] for e in ledger(ws)] == [12000, 6000, 6000]
    claimed = ledger(ws, claims=True)[0]
    assert (claimed["event"], claimed["max_tokens"]) == ("claimed", 20000)


def test_config_sets_the_token_budget_and_unknown_usage_is_null(ws: Path) -> None:
    (ws / "agentcfg.yaml").write_text("ladder: {max_tokens: 1}\n")
    host = started(ws)  # this host's messages carry no usage: nothing is known, nothing halts
    host.reply("Working.")
    assert host.fire().exit_code == 2
    assert [(e["event"], e["tokens"]) for e in ledger(ws)] == [("engage", None)]
    assert json.loads(run_file(ws, host.session_id).read_text())["tokens"] is None
    host.usage = SPEND
    host.reply("Working harder.")
    assert host.fire().exit_code == 0
    assert events(ws) == ["engage", "halt-token-budget"]


def test_the_hook_names_the_first_ready_step_as_the_next(ws: Path) -> None:
    """One agent follows the roadmap's order: 1.2 waits for 2.1, which needs only 1.1 (done),
    and 1.3 waits for the step before it, so the hook's process names 2.1."""
    demo = ws / "roadmaps" / "demo.md"
    text = demo.read_text()
    text = text.replace("- [ ] **1.2** Scope checkboxes to phases", "- [ ] **1.2** Scope "
                        "checkboxes to phases <!-- needs: 2.1 -->")  # fmt: skip
    demo.write_text(
        text.replace("Walk the termination ladder", "Walk the ladder <!-- needs: 1.1 -->")
    )
    shutil.copy(FIXTURES / "transcript.jsonl", ws / "transcript.jsonl")
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    result = fire(ws, fixture_payload(1, ws), process=True)
    assert result.returncode == 2
    assert "2.1" in result.stderr and "Walk the ladder" in result.stderr
    assert "Scope checkboxes" not in result.stderr
    assert [(e["event"], e.get("step")) for e in ledger(ws)] == [("engage", "2.1")]
