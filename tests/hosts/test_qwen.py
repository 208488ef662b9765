"""Qwen Code: its Stop payload captured from the real Qwen Code 0.24.4, told apart from Claude
Code's, and the block cap `hooks install` raises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcfg.hosts import qwen
from agentcfg.hosts.registry import detect
from tests.conftest import FIXTURES as CLAUDE_FIXTURES
from tests.conftest import run_cli
from tests.hosts.shared import FIXTURES, labelled

QWEN = FIXTURES / "qwen-code-0.24.4"


def test_qwen_stop_payload_is_told_apart_from_claudes() -> None:
    (payload,) = labelled(QWEN / "qwen-hook-payloads.json", "Stop")
    assert detect(payload).NAME == "qwen"
    event = qwen.to_event(payload)
    assert event.turn_id == "7fa38102-10da-4bd7-8a12-a2656253140c########0"
    assert event.last_assistant_message == "That step is done."
    assert (event.session_id, event.host, event.background_tasks) == (
        payload["session_id"],
        "qwen",
        0,
    )
    for n in (1, 2, 3, 4):
        claude = json.loads((CLAUDE_FIXTURES / f"stop-payload-{n}.json").read_text())
        assert detect(claude).NAME == "claude"


def test_qwen_install_raises_its_block_cap_and_uninstall_takes_it_back(ws: Path) -> None:
    home = ws.parent / "home"
    assert qwen.block_cap(ws, home, {}) is not None
    assert qwen._cap(ws, home, {}) == 8
    run_cli("hooks", "install", "--host", "qwen")
    settings = json.loads((ws / ".qwen" / "settings.json").read_text())
    assert settings["env"] == {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "100"}
    assert qwen._cap(ws, home, {}) == 100
    assert qwen._cap(ws, home, {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "12"}) == 12  # the process wins
    run_cli("hooks", "uninstall", "--host", "qwen")
    assert not (ws / ".qwen").exists()


@pytest.mark.parametrize(
    ("settings", "env", "cap"),
    [
        ({"stopHookBlockingCap": 20}, {}, 20),
        ({"stopHookBlockingCap": 500}, {}, 100),
        ({"stopHookBlockingCap": 0}, {}, 8),
        ({"env": {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "30"}, "stopHookBlockingCap": 20}, {}, 30),
        ({"env": {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "many"}}, {}, 8),
        ({}, {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": " 40 "}, 40),
        ({}, {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "-3"}, 8),
        ({}, {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "²"}, 8),
    ],
)
def test_qwen_block_cap_follows_qwens_own_rule(
    tmp_path: Path, settings: dict[str, Any], env: dict[str, str], cap: int
) -> None:
    (tmp_path / ".qwen").mkdir()
    (tmp_path / ".qwen" / "settings.json").write_text(json.dumps(settings))
    assert qwen._cap(tmp_path, tmp_path / "home", env) == cap


def test_qwen_install_leaves_a_cap_the_person_set(ws: Path) -> None:
    path = ws / ".qwen" / "settings.json"
    path.parent.mkdir()
    mine = {"env": {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "50"}}
    path.write_text(json.dumps(mine))
    run_cli("hooks", "install", "--host", "qwen")
    assert json.loads(path.read_text())["env"] == mine["env"]
    run_cli("hooks", "uninstall", "--host", "qwen")
    assert json.loads(path.read_text()) == mine


# --- what `qwen` headless tells of the agent's tool calls (`agentcfg run`'s ending) ---


def test_qwen_tool_calls_it_declined_for_want_of_approval_are_refusals() -> None:
    """Without yolo, Qwen Code offers no shell headless; the scripted agent called it anyway."""
    told = (QWEN / "permission-declined.txt").read_text()
    found = qwen.refusals("", told)
    assert found.denied == ("run_shell_command",) * 4  # the tool: no command was run
    assert found.failed == () and found.ignored == ()
    assert qwen.refusals(told, "").denied == ()  # it says so on stderr only
    assert qwen.refusals("", "Warning: Tool output was long\n").denied == ()
