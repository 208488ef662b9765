"""OpenCode: the plugin agentcfg writes, run by node with a stand-in OpenCode client (what it
sends the real stop hook, and what it does with each answer), and where `hooks install` puts it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentcfg import install
from agentcfg.hosts import opencode
from tests.conftest import run_cli
from tests.helpers import ledger
from tests.hosts.shared import FIXTURES

NODE = shutil.which("node")
DRIVER = Path(__file__).with_name("opencode_plugin_driver.mjs")
MESSAGES = FIXTURES / "opencode-1.18.33" / "opencode-session-messages.json"
SESSION = "ses_dd2ebfa6cffeEr5L003RS6JTI4"  # the captured session's id
FIRST_PROMPT = "msg_22d1405d9001JKZ9slOHZqMXYN"

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def run_plugin(
    ws: Path,
    command: str,
    *,
    parent: str | None = None,
    messages: list[Any] | None = None,
    event: dict[str, Any] | None = None,
    events: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    plugin = ws / ".opencode" / "plugin" / "agentcfg.js"
    plugin.parent.mkdir(parents=True, exist_ok=True)
    plugin.write_text(opencode.plugin_source(command))
    data = {
        "directory": str(ws),
        "session_id": SESSION,
        "session": {"directory": str(ws), **({"parentID": parent} if parent else {})},
        "messages": json.loads(MESSAGES.read_text()) if messages is None else messages,
        "events": events
        or [event or {"type": "session.idle", "properties": {"sessionID": SESSION}}],
    }
    (ws / "input.json").write_text(json.dumps(data))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTCFG_")}
    proc = subprocess.run(
        [str(NODE), str(DRIVER), str(plugin), str(ws / "input.json")],
        capture_output=True, text=True, timeout=60, check=False, cwd=ws, env={**env, "AGENTCFG_ROOT": str(ws)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_a_top_level_idle_with_work_left_is_continued(ws: Path) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    result = run_plugin(ws, install.hook_command("opencode"))
    assert result["exports"] == ["AgentcfgStop"]  # OpenCode calls every export as a plugin
    assert result["env"] == {"OPENCODE_SESSION_ID": SESSION}
    ((kind, request),) = result["calls"]
    assert kind == "promptAsync" and request["path"] == {"id": SESSION}
    (part,) = request["body"]["parts"]
    assert part["type"] == "text" and part["text"].startswith("run-continuation: roadmap `demo`")
    (engaged,) = ledger(ws)
    assert (engaged["event"], engaged["host"], engaged["turn"]) == (
        "engage",
        "opencode",
        FIRST_PROMPT,
    )


def test_our_own_continuation_is_not_a_new_prompt(ws: Path) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    messages = json.loads(MESSAGES.read_text())
    ours = {"info": {"id": "msg_ours", "role": "user"},
            "parts": [{"type": "text", "text": "run-continuation: roadmap `demo` has 3 open steps"}]}  # fmt: skip
    reply = {"info": {"id": "msg_reply", "role": "assistant"},
             "parts": [{"type": "text", "text": "Working on it."}]}  # fmt: skip
    run_plugin(ws, install.hook_command("opencode"), messages=[*messages, ours, reply])
    assert {e["turn"] for e in ledger(ws)} == {FIRST_PROMPT}


def test_nothing_to_do_lets_the_session_rest(ws: Path) -> None:
    result = run_plugin(ws, install.hook_command("opencode"))  # no claim
    assert result["calls"] == []


def test_a_subagent_session_is_never_driven(ws: Path, tmp_path: Path) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    marker = tmp_path / "ran"
    result = run_plugin(ws, shlex.join(["sh", "-c", f"touch {marker}"]), parent="ses_parent")
    assert result["calls"] == [] and not marker.exists()


@pytest.mark.parametrize(
    "answer",
    [
        "echo Traceback; exit 3",  # a crash
        'echo \'{"decision": "block", "reason": "go"}\'; exit 2',  # a block with the wrong code
        "echo not json",
        'echo \'{"decision": "block", "reason": ""}\'',
        "exec sleep 0",  # silence
    ],
)
def test_anything_but_a_clean_block_lets_the_session_rest(ws: Path, answer: str) -> None:
    assert run_plugin(ws, shlex.join(["sh", "-c", answer]))["calls"] == []


def test_a_missing_hook_program_lets_the_session_rest(ws: Path) -> None:
    assert run_plugin(ws, "/nonexistent/agentcfg hook stop --host opencode")["calls"] == []


def test_a_note_goes_to_the_opencode_log(ws: Path) -> None:
    answer = 'echo \'{"systemMessage": "run-continuation: halted"}\''
    ((kind, request),) = run_plugin(ws, shlex.join(["sh", "-c", answer]))["calls"]
    assert kind == "log" and request["body"]["message"] == "run-continuation: halted"


def test_other_events_are_ignored(ws: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    event = {"type": "session.updated", "properties": {"sessionID": SESSION}}
    result = run_plugin(ws, shlex.join(["sh", "-c", f"touch {marker}"]), event=event)
    assert result["calls"] == [] and not marker.exists()


def test_the_payload_the_plugin_builds(ws: Path, tmp_path: Path) -> None:
    seen = tmp_path / "payload.json"
    messages = json.loads(MESSAGES.read_text())
    aborted = {"info": {"id": "msg_x", "role": "assistant", "error": {"name": "MessageAbortedError"}},
               "parts": [{"type": "text", "text": "Half"}, {"type": "tool", "tool": "bash"}]}  # fmt: skip
    run_plugin(ws, shlex.join([sys.executable, "-c", f"import sys; open({str(seen)!r}, 'wb').write(sys.stdin.buffer.read())"]),
               messages=[*messages, aborted])  # fmt: skip
    assert json.loads(seen.read_text()) == {
        "hook_event_name": "session.idle",
        "session_id": SESSION,
        "cwd": str(ws),
        "prompt_id": FIRST_PROMPT,
        "reply_id": "msg_x",
        "last_assistant_message": "Half",
        "stop_hook_active": True,  # the captured session's last user message is a continuation
        "interrupted": True,
    }


def test_opencode_plugin_install_is_ours_alone(ws: Path) -> None:
    path = ws / ".opencode" / "plugin" / "agentcfg.js"
    assert run_cli("hooks", "install", "--host", "opencode").exit_code == 0
    source = path.read_text()
    assert opencode.registered({"source": source}) == [install.hook_command("opencode")]
    assert "unchanged" in run_cli("hooks", "install", "--host", "opencode").output
    run_cli("hooks", "uninstall", "--host", "opencode")
    assert not path.exists()
    path.parent.mkdir()
    path.write_text("export const Mine = async () => ({});\n")  # a plugin of the person's
    refused = run_cli("hooks", "install", "--host", "opencode")
    assert refused.exit_code == 1 and "not the plugin agentcfg writes" in refused.output
    assert "unchanged" in run_cli("hooks", "uninstall", "--host", "opencode").output
    assert path.read_text() == "export const Mine = async () => ({});\n"


def test_opencode_user_scope_follows_xdg_config_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert opencode.config_path("user", tmp_path, home, {}) == (
        home / ".config" / "opencode" / "plugin" / "agentcfg.js"
    )
    xdg = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert opencode.config_path("user", tmp_path, home, xdg) == (
        tmp_path / "xdg" / "opencode" / "plugin" / "agentcfg.js"
    )


def test_a_compaction_gives_the_session_its_step_back_without_a_reply(ws: Path) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    event = {"type": "session.compacted", "properties": {"sessionID": SESSION}}
    result = run_plugin(ws, install.hook_command("opencode"), event=event)
    ((kind, request),) = result["calls"]
    assert kind == "prompt" and request["path"] == {"id": SESSION}
    assert request["body"]["noReply"] is True  # context for the agent, not a turn of its own
    (part,) = request["body"]["parts"]
    assert part["type"] == "text"
    assert part["text"].startswith(
        "agentcfg: this session holds the autonomous run of roadmap `demo`"
    )
    assert "Next step: **" in part["text"] and "verify: " in part["text"]
    assert ledger(ws) == []  # a re-injection is no engagement


def test_a_compaction_of_a_session_without_a_claim_adds_nothing(ws: Path) -> None:
    event = {"type": "session.compacted", "properties": {"sessionID": SESSION}}
    assert run_plugin(ws, install.hook_command("opencode"), event=event)["calls"] == []


def test_the_idle_after_a_compaction_is_continued_once_the_step_is_back(ws: Path) -> None:
    # a hook whose re-injection is slower than its stop answer: the idle still waits for it
    answers = (
        'if [ "$1" = session-start ]; then sleep 1; '
        """echo '{"hookSpecificOutput": {"additionalContext": "the step"}}'; """
        """else echo '{"decision": "block", "reason": "go on"}'; fi"""
    )
    events = [
        {"type": "session.compacted", "properties": {"sessionID": SESSION}},
        {"type": "session.idle", "properties": {"sessionID": SESSION}},
    ]  # OpenCode's bus does not wait for one plugin call before the next
    result = run_plugin(ws, shlex.join(["sh", "-c", answers, "hook", "stop"]), events=events)
    sent = [(kind, r["body"]["parts"][0]["text"]) for kind, r in result["calls"]]
    assert sent == [("prompt", "the step"), ("promptAsync", "go on")]


def test_a_reply_that_ended_on_an_error_is_not_continued(ws: Path) -> None:
    """OpenCode gave up retrying the provider's 429: the session rests, so `agentcfg run`
    reads the limit from its messages instead of the hook continuing it into the limit."""
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    limited = json.loads(
        (FIXTURES / "opencode-1.18.33" / "session-messages-rate-limit.json").read_text()
    )
    for number, message in enumerate(limited):
        message["info"]["id"] = f"msg_{number}"
    assert run_plugin(ws, install.hook_command("opencode"), messages=limited)["calls"] == []
    assert ledger(ws) == []


# --- what `opencode run --attach` tells of the agent's tool calls (`agentcfg run`'s ending) ---


def test_opencode_commands_it_refused_for_want_of_approval_are_refusals() -> None:
    """`"permission": {"bash": "ask"}`: the attached run refuses the call itself."""
    told = (FIXTURES / "opencode-1.18.33" / "permission-ask.txt").read_text()
    assert "\x1b[" in told  # coloured, as the person's terminal would show it
    found = opencode.refusals("", told)
    assert found.denied == ("agentcfg roadmap done e2e 1.1",)
    assert found.failed == () and found.ignored == ()
    assert opencode.refusals(told, "").denied == ()  # it says so on stderr only


@pytest.mark.parametrize(
    ("person", "project", "warned"),
    [
        (None, None, None),
        (None, {"permission": {"bash": "ask"}}, "asks approval for"),
        (None, {"permission": {"bash": {"*": "deny", "git *": "allow"}}}, "denies"),
        (None, {"permission": "ask"}, "asks approval for"),
        ({"permission": {"bash": "deny"}}, None, "denies"),
        ({"permission": {"bash": "deny"}}, {"permission": {"bash": "allow"}}, None),
        (None, {"permission": {"edit": "ask"}}, None),
    ],
)
def test_a_start_whose_settings_ask_for_the_shell_is_warned_about(
    tmp_path: Path, person: object, project: object, warned: str | None
) -> None:
    root, home = tmp_path / "ws", tmp_path / "home"
    (home / ".config" / "opencode").mkdir(parents=True)
    root.mkdir()
    for folder, document in ((home / ".config" / "opencode", person), (root, project)):
        if document is not None:
            (folder / "opencode.json").write_text(json.dumps(document))
    found = opencode.asks(root, home, {}, ())
    if warned is None:
        assert found == []
    else:
        (line,) = found
        assert f"OpenCode headless {warned} the agent's shell commands" in line
        assert line.endswith(opencode.ALLOW)
