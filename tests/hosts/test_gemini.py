"""Gemini CLI: payloads and the session file captured from the real Gemini CLI 0.61.0, a claim
bound through the token its session file shows, its token usage, and the trust it needs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from agentcfg.claims import pending_name, session_key
from agentcfg.hosts import gemini
from agentcfg.hosts.registry import adapter, detect
from tests.conftest import fire, hook_env, run_cli
from tests.helpers import ledger
from tests.hosts.shared import FIXTURES, captured, findings, write_lines

GEMINI = FIXTURES / "gemini-cli-0.61.0"


def test_gemini_fires_of_one_human_turn(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    shutil.copy(GEMINI / "transcript.jsonl", transcript)
    fires = captured(GEMINI, "afteragent-payloads.json", transcript)
    events = [detect(p).to_event(p) for p in fires]
    assert {e.host for e in events} == {"gemini"}
    # prompt_response piles up every reply of the turn; the event carries the last one only
    assert fires[-1]["prompt_response"].count("That step is done.") == 4
    assert {e.last_assistant_message for e in events} == {"That step is done."}
    # the person's message in the session file is the turn, through every retry
    assert {e.turn_id for e in events} == {"message-ac1e20b1-207b-4e4f-8502-f8159db38127"}


def test_gemini_two_identical_prompts_are_two_turns(tmp_path: Path) -> None:
    lines = (GEMINI / "transcript.jsonl").read_text().splitlines()
    person = next(line for line in lines if '"Work through the demo roadmap."' in line)
    again = json.loads(person)
    again["id"] = "second-prompt"
    reply = {"id": "r2", "type": "gemini", "content": "Looking at it again.", "tokens": {}}
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join([*lines, json.dumps(again), json.dumps(reply)]) + "\n")
    payload = captured(GEMINI, "afteragent-payloads.json", transcript)[0]
    payload["prompt_response"] = "Looking at it again."
    event = adapter("gemini").to_event(payload)
    assert (event.turn_id, event.last_assistant_message) == (
        "message-second-prompt",
        "Looking at it again.",
    )


def test_gemini_without_its_session_file_falls_back_to_the_prompt(tmp_path: Path) -> None:
    payload = captured(GEMINI, "afteragent-payloads.json", tmp_path / "gone.jsonl")[2]
    event = adapter("gemini").to_event(payload)
    assert event.turn_id.startswith("prompt-")
    assert event.last_assistant_message == payload["prompt_response"]  # nothing to cut it with


def pending_token(ws: Path) -> str:
    made = run_cli("sessions", "claim", "demo")  # no session id in this shell
    assert made.exit_code == 0, made.output
    found = re.search(r"agentcfg-claim-[0-9a-f]{16}", made.output)
    assert found is not None
    return found.group(0)


def gemini_transcript(path: Path, claim_output: str) -> Path:
    """The captured session file, with the claim command's output as this claim printed it."""
    text = (GEMINI / "transcript.jsonl").read_text()
    path.write_text(text.replace("claimed roadmap `demo` for session", claim_output, 2))
    return path


def test_the_session_that_shows_the_token_adopts_the_claim(ws: Path) -> None:
    token = pending_token(ws)
    mine = gemini_transcript(
        ws.parent / "mine.jsonl", f"claimed for the session that shows {token}"
    )
    other = shutil.copy(GEMINI / "transcript.jsonl", ws.parent / "other.jsonl")
    payload = captured(GEMINI, "afteragent-payloads.json", mine)[0]
    stranger = {**payload, "session_id": "someone-else", "transcript_path": str(other)}
    assert fire(ws, stranger).stdout == ""  # its transcript does not show the token
    assert not (ws / "state" / "claims").exists()
    answer = json.loads(fire(ws, {**payload, "cwd": str(ws)}).stdout)
    assert answer["decision"] == "deny"
    assert answer["reason"].startswith("run-continuation: roadmap `demo`")
    claimed = [e for e in ledger(ws, claims=True) if e["event"] == "claimed"]
    assert [(e["run"], e["pending"]) for e in claimed] == [
        (session_key(payload["session_id"]), session_key(token))
    ]
    assert list((ws / "state" / "pending").glob("*.json")) == []  # adopted once
    again = {**stranger, "transcript_path": str(mine)}
    assert fire(ws, again).stdout == ""  # the same transcript later: the token is spent


def test_an_expired_pending_claim_is_dropped(ws: Path) -> None:
    token = pending_token(ws)
    path = ws / "state" / "pending" / pending_name(token)
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "claimed_at": "2020-01-01T00:00:00Z"}))
    mine = gemini_transcript(ws.parent / "mine.jsonl", token)
    payload = captured(GEMINI, "afteragent-payloads.json", mine)[0]
    assert fire(ws, {**payload, "cwd": str(ws)}, env=hook_env(ws)).stdout == ""
    assert not path.exists()


def test_gemini_counts_cached_thoughts_and_tool_prompts(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    tokens = {"input": 1000, "output": 20, "cached": 600, "thoughts": 30, "tool": 5, "total": 1055}
    write_lines(path, [
        {"id": "u1", "type": "user", "content": [{"text": "do it"}]},
        {"id": "g1", "type": "gemini", "content": "", "tokens": tokens},
        {"id": "u2", "type": "user", "content": [{"text": "run-continuation: roadmap ..."}]},
        {"id": "g2", "type": "gemini", "content": "", "tokens": tokens},
    ])  # fmt: skip
    # our continuation is not the person's turn
    spent = gemini.usage_since(str(path), None, settle=0.0)
    assert spent.usage is not None
    assert spent.usage.to_json() == {
        "input": 810, "output": 100, "cache_read": 1200, "cache_write": 0, "total": 2110
    }  # fmt: skip


def test_gemini_needs_a_trusted_folder_and_hooks_on(ws: Path) -> None:
    run_cli("hooks", "install", "--host", "gemini")
    assert [f["level"] for f in findings("gemini")] == ["error"]
    gemini = ws.parent / "home" / ".gemini"
    gemini.mkdir(parents=True)
    (gemini / "trustedFolders.json").write_text(json.dumps({str(ws.parent): "TRUST_FOLDER"}))
    assert [f["level"] for f in findings("gemini")] == ["ok"]
    (gemini / "settings.json").write_text(json.dumps({"hooksConfig": {"enabled": False}}))
    off = findings("gemini")
    assert [f["level"] for f in off] == ["error", "ok"]
    assert "hooksConfig.enabled: false" in off[0]["message"]


# --- what `gemini -p` tells of the agent's tool calls (`agentcfg run`'s ending) ---


def test_gemini_calls_to_the_shell_it_left_out_headless_are_refusals() -> None:
    """Without yolo, Gemini CLI offers no shell headless; the scripted agent called it anyway."""
    told = (GEMINI / "shell-excluded.txt").read_text()
    found = gemini.refusals("", told)
    assert found.denied == ("run_shell_command",) * 4  # the tool: no command was run
    assert found.failed == () and found.ignored == ()
    assert gemini.refusals(told, "").denied == ()  # it says so on stderr only


def test_gemini_calls_to_a_tool_that_does_not_exist_are_no_refusals() -> None:
    told = (
        'Error executing tool frobnicate: Tool "frobnicate" not found. Did you mean one of: "x"?\n'
    )
    assert gemini.refusals("", told).denied == ()
