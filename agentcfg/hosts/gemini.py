"""Gemini CLI: `AfterAgent` hooks in `.gemini/settings.json`; exit 2 rejects the response and
sends stderr back as the next prompt.

Gemini gives no turn id. The person's prompt identifies the human turn, except when the
prompt is one of our own texts sent back on a retry: that is the same turn, not a new one.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from agentcfg.hosts.base import Answer, Finding, Probe, StopEvent

NAME = "gemini"
TITLE = "Gemini CLI"
IDLE = ""
SESSION_ENV = ("GEMINI_SESSION_ID",)
PROVEN = True
EVENT = "AfterAgent"
OWN_TEXTS = ("run-continuation:", "turn-end-gate:")


def recognises(payload: Mapping[str, object]) -> bool:
    return payload.get("hook_event_name") == EVENT


def session_of(payload: Mapping[str, object]) -> str:
    value = payload.get("session_id")
    return value if isinstance(value, str) else ""


def cwd_of(payload: Mapping[str, object]) -> str:
    value = payload.get("cwd")
    return value if isinstance(value, str) else ""


def to_event(payload: Mapping[str, object]) -> StopEvent:
    from agentcfg.hosts.base import StopEvent, message, text
    from agentcfg.paths import sha256_hex

    prompt = text(payload, "prompt")
    ours = prompt.lstrip().startswith(OWN_TEXTS)
    turn = (
        f"prompt-{sha256_hex(prompt.encode('utf-8', 'replace'))[:16]}"
        if prompt and not ours
        else ""
    )
    return StopEvent(
        session_id=text(payload, "session_id"),
        turn_id=turn,
        transcript_path=text(payload, "transcript_path"),
        cwd=text(payload, "cwd"),
        last_assistant_message=message(payload, "prompt_response"),
        stop_hook_active=payload.get("stop_hook_active") is True,
        is_subagent=False,
        background_tasks=0,
        host=NAME,
    )


def block(text: str) -> Answer:
    from agentcfg.hosts.base import exit_two

    return exit_two(text)


def allow(note: str) -> Answer:
    from agentcfg.hosts.base import Answer, json_line

    return Answer(0, stdout=json_line({"systemMessage": note})) if note else Answer(0)


def config_path(scope: str, root: Path, home: Path, env: Mapping[str, str]) -> Path:
    return (root if scope == "project" else home) / ".gemini" / "settings.json"


def install(document: dict[str, Any], command: str) -> dict[str, Any]:
    from agentcfg.hosts.base import HOOK_TIMEOUT, install_hook

    entry = {
        "name": "agentcfg-stop",
        "type": "command",
        "command": command,
        "timeout": HOOK_TIMEOUT * 1000,  # Gemini counts milliseconds
    }
    return install_hook(document, EVENT, entry, group={"matcher": "*"})


def uninstall(document: dict[str, Any]) -> dict[str, Any]:
    from agentcfg.hosts.base import uninstall_hook

    return uninstall_hook(document, EVENT)


def registered(document: Mapping[str, Any]) -> list[str]:
    from agentcfg.hosts.base import registered_commands

    return registered_commands(document, EVENT)


def checks(path: Path, root: Path, home: Path, env: Mapping[str, str]) -> list[Finding]:
    return []


def probe(cwd: str) -> Probe:
    from agentcfg.hosts.base import PROBE_SESSION, Answer, Probe

    payload: dict[str, object] = {
        "session_id": PROBE_SESSION,
        "transcript_path": "",
        "cwd": cwd,
        "hook_event_name": EVENT,
        "prompt": "probe",
        "prompt_response": "probe",
        "stop_hook_active": False,
    }
    return Probe(payload, Answer(0))  # allowed: exit 0, no decision on stdout
