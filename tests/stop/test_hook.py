"""The stop hook as a real subprocess: captured Claude Code payloads, scenarios, races, fail-open."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import claims
from testing.simhost import SimulatedHost
from tests import inprocess
from tests.conftest import FIXTURES, SESSION, fire, fixture_payload, hook_env, ledger, run_cli


def events(root: Path) -> list[str]:
    return [e["event"] for e in ledger(root)]


def started(ws: Path, *claim_args: str, env: dict[str, str] | None = None) -> SimulatedHost:
    """A simulated session that has spoken once and claimed the demo roadmap."""
    host = SimulatedHost(ws, env=env, run=inprocess.run)
    host.human("go")
    assert host.claim("demo", *claim_args).returncode == 0
    return host


def run_file(root: Path, session: str, slug: str = "demo") -> Path:
    return root / "state" / "runs" / f"{claims.session_key(session)}-{slug}.json"


@pytest.fixture
def claimed(ws: Path) -> Path:
    """The workspace with the fixtures' session claiming the demo roadmap and their transcript."""
    shutil.copy(FIXTURES / "transcript.jsonl", ws / "transcript.jsonl")
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    return ws


def test_captured_payload_engages_with_exit_2_and_text_on_stderr(
    claimed: Path, snapshot: SnapshotAssertion
) -> None:
    result = fire(claimed, fixture_payload(1, claimed))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == snapshot
    assert events(claimed) == ["engage"]
    assert ledger(claimed)[0]["turn"] == "5707e005-e6dc-41c3-bbbe-699f84918742"


def test_a_fire_reads_the_transcript_once(claimed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its turn, its closing words and the tokens its segment spent all come from one read of
    the transcript's tail."""
    opened: list[str] = []
    real = os.open

    def counted(path: str, flags: int, mode: int = 0o777, **kw: int | None) -> int:
        opened.append(os.fspath(path))
        return real(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", counted)
    payload = fixture_payload(1, claimed)
    del payload["prompt_id"]  # the turn too is read from the transcript
    assert fire(claimed, payload).returncode == 2
    assert opened.count(str(claimed / "transcript.jsonl")) == 1


def test_captured_payloads_of_one_turn_then_a_new_turn(claimed: Path) -> None:
    codes = [fire(claimed, fixture_payload(n, claimed)).returncode for n in (1, 2, 3, 4)]
    assert codes == [2, 2, 2, 2]
    entries = ledger(claimed)
    assert [(e["event"], e["iterations"]) for e in entries] == [
        ("engage", 1), ("engage", 2), ("engage", 3),
        ("cut-short", 3),  # the new prompt came while the third block still held the turn
        ("engage", 4),
    ]  # fmt: skip
    assert {e["turn"] for e in entries[:3]} == {"5707e005-e6dc-41c3-bbbe-699f84918742"}
    assert entries[3]["turn"] == entries[4]["turn"] != entries[0]["turn"]


def test_without_a_claim_the_hook_allows_silently(ws: Path) -> None:
    for n in (1, 2, 3, 4):
        result = fire(ws, fixture_payload(n, ws))
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (ws / "state").exists()


def test_the_console_script_answers_the_same(claimed: Path) -> None:
    script = Path(sys.executable).parent / "agentcfg"
    proc = subprocess.run(
        [str(script), "hook", "stop", "--host", "claude"],
        input=json.dumps(fixture_payload(1, claimed)),
        capture_output=True,
        text=True,
        env=hook_env(claimed),
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("run-continuation: roadmap `demo` has 3 open steps")


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


def test_sixteen_simultaneous_fires_of_one_reply(ws: Path) -> None:
    host = started(ws)
    host.reply("Working on it.")
    payload = host.payload()
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda _: fire(ws, payload, env=host.env, process=True), range(16)))
    assert all(r.returncode in (0, 2) and "Traceback" not in r.stderr for r in results)
    run = json.loads(run_file(ws, host.session_id).read_text())
    engages = events(ws).count("engage")
    assert run["iterations"] == engages >= 1
    blocks = sum(r.returncode == 2 for r in results)
    assert blocks <= 3 * engages
    assert all(r.stderr.startswith("run-continuation:") for r in results if r.returncode == 2)


def garbage_inputs(root: Path) -> list[bytes]:
    good = fixture_payload(1, root)
    return [
        b"",
        b"not json at all",
        b"[1, 2, 3]",
        b"\xff\xfe\xfd",
        b'{"session_id": 5, "cwd": [], "prompt_id": null}',
        json.dumps({k: v for k, v in good.items() if k != "session_id"}).encode(),
        json.dumps({k: v for k, v in good.items() if k != "transcript_path"}).encode(),
        json.dumps({**good, "last_assistant_message": None, "background_tasks": "many"}).encode(),
        b"{" * 100000,
    ]


def test_fail_open_on_garbage_stdin(claimed: Path) -> None:
    for data in garbage_inputs(claimed):
        result = fire(claimed, data)
        assert result.returncode in (0, 2), data[:40]
        assert "Traceback" not in result.stderr
        if result.returncode == 2:  # only a payload naming the claimed session can engage
            assert result.stderr.startswith("run-continuation:")


def told(result: subprocess.CompletedProcess[str]) -> str:
    """The line Claude Code shows the person: `systemMessage` on stdout, exit 0."""
    assert (result.returncode, result.stderr) == (0, "")
    message: str = json.loads(result.stdout)["systemMessage"]
    return message


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


def test_fail_open_when_state_cannot_be_written(claimed: Path) -> None:
    # CI runs as root, which file modes do not stop; a file where a folder belongs does.
    runs = claimed / "state" / "runs"
    shutil.rmtree(runs)
    runs.write_text("a file where the runs folder should be")
    result = fire(claimed, fixture_payload(1, claimed))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_bad_command_line_is_a_usage_error(ws: Path) -> None:
    result = fire(ws, fixture_payload(1, ws), "--host", "vim")
    assert result.returncode == 2
    assert result.stderr.startswith("agentcfg: error: usage: agentcfg hook stop")


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


def test_hook_stop_help_prints_usage_and_exits_zero(ws: Path) -> None:
    for args in (("--help",), ("-h",)):
        result = fire(ws, b"", *args)
        assert result.returncode == 0
        assert result.stdout.startswith("usage: agentcfg hook stop [--host ")
        assert result.stderr == ""
    bad = fire(ws, b"", "--host", "nope")
    assert bad.returncode == 2 and bad.stderr.startswith("agentcfg: error: usage: ")


def test_read_only_commands_create_nothing(ws: Path) -> None:
    for args in (
        ("roadmap", "list"),
        ("roadmap", "status", "demo"),
        ("roadmap", "next", "demo"),
        ("roadmap", "lint"),
        ("sessions", "list"),
        ("report",),
        ("doctor",),
    ):
        run_cli(*args)
        assert sorted(p.name for p in ws.iterdir()) == ["roadmaps"], args


def test_the_click_route_to_the_hook_answers_like_the_lean_one(ws: Path) -> None:
    from click.testing import CliRunner

    from agentcfg.cli import cli

    result = CliRunner().invoke(cli, ["hook", "stop", "--host", "codex"], input=b"not json")
    assert (result.exit_code, result.output) == (0, "")
    assert "Read one stop payload" in run_cli("hook", "stop", "--help").output


SPEND = {"input_tokens": 30, "output_tokens": 200, "cache_read_input_tokens": 5000,
         "cache_creation_input_tokens": 770}  # fmt: skip
PER_MESSAGE = {"input": 30, "output": 200, "cache_read": 5000, "cache_write": 770, "total": 6000}


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
