"""Cursor: `stop` hooks in `.cursor/hooks.json`. Cursor never blocks a stop: it answers with a
follow-up message the agent receives next. Not proven against a real Cursor binary.

Cursor gives a generation id per agent reply and a `loop_count` of follow-ups: a count of
0 is the first stop after the person spoke, so only then is the generation a new human turn.
"""

from __future__ import annotations

from agentcfg.hosts import defaults
from agentcfg.hosts.defaults import ALLOW as ALLOW
from agentcfg.hosts.defaults import ALLOW_ARGS as ALLOW_ARGS
from agentcfg.hosts.defaults import asks as asks
from agentcfg.hosts.defaults import block_cap as block_cap
from agentcfg.hosts.defaults import headless as headless
from agentcfg.hosts.defaults import hear as hear
from agentcfg.hosts.defaults import limit_reset as limit_reset
from agentcfg.hosts.defaults import parse as parse
from agentcfg.hosts.defaults import plugin as plugin
from agentcfg.hosts.defaults import refusals as refusals
from agentcfg.hosts.defaults import render as render
from agentcfg.hosts.defaults import runner as runner

# no sandbox of its own that agentcfg reads
from agentcfg.hosts.defaults import store_reach as store_reach
from agentcfg.hosts.defaults import trust as trust

# Cursor's transcript records no token usage
from agentcfg.hosts.defaults import usage_since as usage_since

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from agentcfg.hosts.base import Answer, Finding, Probe, StopEvent

NAME = "cursor"
TITLE = "Cursor"
IDLE = "{}\n"
SESSION_ENV: tuple[str, ...] = ()
AGENT_ENV = ("CURSOR_AGENT",)
PROGRAMS = ("cursor-agent", "/cursor-agent/")
PROVEN = False
EVENT = "stop"


def recognises(payload: Mapping[str, object]) -> bool:
    return payload.get("hook_event_name") == EVENT or "conversation_id" in payload


def session_of(payload: Mapping[str, object]) -> str:
    return defaults.first_text(payload, "conversation_id", "session_id")


def cwd_of(payload: Mapping[str, object]) -> str:
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        return cwd
    roots = payload.get("workspace_roots")
    return roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else ""


def to_event(payload: Mapping[str, object]) -> StopEvent:
    from agentcfg.hosts.base import StopEvent
    from agentcfg.hosts.defaults import text

    loop_count = payload.get("loop_count")
    first = loop_count in (0, None) or isinstance(loop_count, bool)
    status = payload.get("status")
    return StopEvent(
        session_id=session_of(payload),
        turn_id=text(payload, "generation_id") if first else "",
        transcript_path=text(payload, "transcript_path"),
        cwd=cwd_of(payload),
        last_assistant_message=None,  # read from the transcript when there is one
        stop_hook_active=not first,
        is_subagent=False,
        background_tasks=0,
        host=NAME,
        interrupted=isinstance(status, str) and status not in ("completed", ""),
        fire_id=text(payload, "generation_id"),  # one a reply, where a transcript may be missing
    )


def block(text: str) -> Answer:
    from agentcfg.hosts.base import Answer
    from agentcfg.hosts.defaults import json_line

    return Answer(0, stdout=json_line({"followup_message": text}))


def allow(note: str) -> Answer:
    from agentcfg.hosts.base import Answer

    return Answer(0, stdout=IDLE)


def config_path(scope: str, root: Path, home: Path, env: Mapping[str, str]) -> Path:
    return (root if scope == "project" else home) / ".cursor" / "hooks.json"


def install(document: dict[str, Any], command: str) -> dict[str, Any]:
    from agentcfg.hosts.defaults import install_hook

    if "version" not in document:
        document = {"version": 1, **document}
    return install_hook(document, EVENT, {"command": command})


def uninstall(document: dict[str, Any]) -> dict[str, Any]:
    from agentcfg.hosts.defaults import uninstall_hook

    result = uninstall_hook(document, EVENT, grouped=False)
    return {} if result == {"version": 1} else result


def registered(document: Mapping[str, Any]) -> list[str]:
    from agentcfg.hosts.defaults import registered_commands

    return registered_commands(document, EVENT, grouped=False)


def checks(path: Path, root: Path, home: Path, env: Mapping[str, str]) -> list[Finding]:
    from agentcfg.hosts.base import Finding

    return [
        Finding(
            "warning",
            f"{NAME}",
            "the Cursor adapter follows Cursor's documented payloads; it is not proven "
            "against a real Cursor binary",
            "watch the first runs in the ledger (`agentcfg report`)",
        )
    ]


def probe(cwd: str) -> Probe:
    # allowed: `{}` on stdout, no follow-up
    return defaults.probe_of(
        "conversation_id",
        {
            "generation_id": "probe",
            "hook_event_name": EVENT,
            "status": "completed",
            "loop_count": 0,
            "workspace_roots": [cwd],
        },
        IDLE,
    )


# --- unattended runs (`agentcfg run`): not driven headless yet ---

BINARY = "cursor-agent"
NAMES_SESSION = False
