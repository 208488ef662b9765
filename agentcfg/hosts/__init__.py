"""Host adapters: one module a host, from its payload to a StopEvent, from a verdict to its answer.

This module stays import-light: the stop hook uses it before it knows it has work to do.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

HOSTS = ("claude", "codex", "gemini", "cursor")
# what each host prints to allow a stop; only Cursor answers with anything
ALLOW_STDOUT = {"cursor": "{}\n"}


def detect(payload: dict[str, object]) -> str:
    """The host that sent a payload, from its event name and fields; Claude Code by default."""
    event = payload.get("hook_event_name")
    if event == "AfterAgent":
        return "gemini"
    if event == "stop" or "conversation_id" in payload:
        return "cursor"
    if "turn_id" in payload and "prompt_id" not in payload:
        return "codex"
    return "claude"


def session_of(payload: dict[str, object]) -> str:
    for name in ("session_id", "conversation_id"):
        value = payload.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def cwd_of(payload: dict[str, object]) -> str:
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        return cwd
    roots = payload.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    return ""


def adapter(name: str) -> ModuleType:
    """The adapter module of a host (imported on demand)."""
    if name not in HOSTS:
        raise KeyError(name)
    return importlib.import_module(f"agentcfg.hosts.{name}")
