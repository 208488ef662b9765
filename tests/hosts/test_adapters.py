"""Host adapters: payloads as each host documents them, and each host's block and allow answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg.hosts.registry import HOSTS, adapter, detect
from tests.conftest import fire, run_cli

SESSION = "host-session"
STDOUT_BLOCKS = {
    "cursor": "followup_message", "gemini": "reason", "copilot": "reason", "opencode": "reason"
}  # fmt: skip


def payloads(root: Path) -> dict[str, dict[str, Any]]:
    cwd = str(root)
    events = root / "events.jsonl"  # Copilot's payload names its transcript and nothing more
    events.write_text(
        json.dumps({"type": "user.message", "data": {"content": "work", "messageId": "m-1"}})
        + "\n"
        + json.dumps({"type": "assistant.message", "data": {"content": "Working."}})
        + "\n"
    )
    return {
        "claude": {
            "session_id": SESSION, "transcript_path": "", "cwd": cwd, "prompt_id": "p-1",
            "hook_event_name": "Stop", "stop_hook_active": False,
            "last_assistant_message": "Working.", "background_tasks": [],
        },
        "codex": {
            "session_id": SESSION, "turn_id": "turn-7", "cwd": cwd, "transcript_path": None,
            "model": "gpt-5-codex", "permission_mode": "default", "hook_event_name": "Stop",
            "stop_hook_active": False, "last_assistant_message": "Working.",
        },
        "gemini": {
            "session_id": SESSION, "transcript_path": "", "cwd": cwd,
            "hook_event_name": "AfterAgent", "timestamp": "2026-11-30T10:00:00Z",
            "prompt": "work the roadmap", "prompt_response": "Working.", "stop_hook_active": False,
        },
        "cursor": {
            "conversation_id": SESSION, "generation_id": "gen-1", "model": "auto",
            "hook_event_name": "stop", "cursor_version": "3.7.21", "workspace_roots": [cwd],
            "status": "completed", "loop_count": 0, "transcript_path": None,
        },
        "qwen": {
            "session_id": SESSION, "transcript_path": "", "cwd": cwd, "hook_event_name": "Stop",
            "timestamp": "2026-11-30T10:00:00Z", "permission_mode": "yolo", "prompt_id": "p-1",
            "stop_hook_active": False, "last_assistant_message": "Working.",
            "background_tasks": [], "crons": [], "context_usage": 0.1, "context_limit": 200000,
            "input_tokens": 10,
        },
        "copilot": {
            "sessionId": SESSION, "timestamp": 1796052709716, "cwd": cwd,
            "transcriptPath": str(events), "stopReason": "end_turn", "stop_hook_active": False,
        },
        "opencode": {
            "hook_event_name": "session.idle", "session_id": SESSION, "cwd": cwd,
            "prompt_id": "msg_1", "last_assistant_message": "Working.", "stop_hook_active": False,
            "interrupted": False,
        },
    }  # fmt: skip


@pytest.mark.parametrize("host", HOSTS)
def test_payload_to_event(tmp_path: Path, host: str) -> None:
    payload = payloads(tmp_path)[host]
    assert host == detect(payload).NAME
    event = adapter(host).to_event(payload)
    assert (event.session_id, event.cwd, event.host) == (SESSION, str(tmp_path), host)
    assert event.turn_id  # every host gives the first stop of a human turn an identity
    assert not event.is_subagent and not event.interrupted


def test_turn_identities(tmp_path: Path) -> None:
    p = payloads(tmp_path)
    assert adapter("codex").to_event(p["codex"]).turn_id == "turn-7"
    gemini = adapter("gemini")
    first = gemini.to_event(p["gemini"]).turn_id
    assert first == gemini.to_event({**p["gemini"], "prompt_response": "other"}).turn_id
    assert first != gemini.to_event({**p["gemini"], "prompt": "something else"}).turn_id
    retry = {**p["gemini"], "prompt": "run-continuation: roadmap `demo` has 2 open steps"}
    assert gemini.to_event(retry).turn_id == ""  # our own text coming back is no new turn
    cursor = adapter("cursor")
    assert cursor.to_event(p["cursor"]).turn_id == "gen-1"
    assert cursor.to_event({**p["cursor"], "loop_count": 2, "generation_id": "gen-3"}).turn_id == ""


def test_subagent_and_interrupt_signals(tmp_path: Path) -> None:
    p = payloads(tmp_path)
    assert (
        adapter("claude").to_event({**p["claude"], "hook_event_name": "SubagentStop"}).is_subagent
    )
    codex_sub = {**p["codex"], "hook_event_name": "SubagentStop", "agent_id": "a1"}
    assert adapter("codex").to_event(codex_sub).is_subagent
    assert adapter("cursor").to_event({**p["cursor"], "status": "aborted"}).interrupted
    assert (
        adapter("claude")
        .to_event({**p["claude"], "background_tasks": [{"status": "running"}]})
        .background_tasks
        == 1
    )


@pytest.mark.parametrize("host", HOSTS)
def test_answers(host: str, snapshot: SnapshotAssertion) -> None:
    module = adapter(host)
    block = module.block("run-continuation: keep going")
    allow = module.allow("")
    assert (block, allow) == snapshot
    assert allow.stdout == module.IDLE


@pytest.mark.parametrize("explicit", [True, False], ids=["--host", "detected"])
@pytest.mark.parametrize("host", HOSTS)
def test_real_hook_per_host(ws: Path, host: str, explicit: bool) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    args = ("--host", host) if explicit else ()
    result = fire(ws, payloads(ws)[host], *args, process=True)  # the boundary, per host
    if host in STDOUT_BLOCKS:
        assert (result.returncode, result.stderr) == (0, "")
        answer = json.loads(result.stdout)
        assert answer.get("decision", "block") in ("block", "deny")
        message = answer[STDOUT_BLOCKS[host]]
    else:
        assert (result.returncode, result.stdout) == (2, "")
        message = result.stderr
    assert message.startswith("run-continuation: roadmap `demo`")


@pytest.mark.parametrize("host", HOSTS)
def test_allow_per_host(ws: Path, host: str) -> None:
    result = fire(ws, payloads(ws)[host], "--host", host, process=True)  # no claim: nothing to do
    assert (result.returncode, result.stdout, result.stderr) == (0, adapter(host).IDLE, "")


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_the_arguments_a_host_is_told_to_take_are_the_ones_that_allow_its_commands(
    name: str, tmp_path: Path
) -> None:
    """The ending's `next:` line passes ALLOW_ARGS after `--`: the fix its ALLOW text names,
    and enough to quiet the host's warning before a start that would ask for approvals."""
    host = adapter(name)
    root, home = tmp_path / "ws", tmp_path / "home"
    root.mkdir(), home.mkdir()
    env = {"HOME": str(home)}
    if host.ALLOW_ARGS:
        assert f"`-- {' '.join(host.ALLOW_ARGS)}`" in host.ALLOW
        assert host.asks(root, home, env, host.ALLOW_ARGS) == []
    if host.asks(root, home, env, ()):  # a warning with nothing passed names the fix
        assert host.ALLOW_ARGS or "settings" in host.ALLOW or ".json" in host.ALLOW
