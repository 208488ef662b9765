"""Codex CLI: `Stop` (and `SubagentStop`) with its own `turn_id`; block with exit 2 and stderr."""

from __future__ import annotations

from agentcfg.hosts.base import Answer, StopEvent, Verdict, block_on_stderr, text

NAME = "codex"


def to_event(payload: dict[str, object]) -> StopEvent:
    message = payload.get("last_assistant_message")
    return StopEvent(
        session_id=text(payload, "session_id"),
        turn_id=text(payload, "turn_id"),
        transcript_path=text(payload, "transcript_path"),
        cwd=text(payload, "cwd"),
        last_assistant_message=message if isinstance(message, str) else None,
        stop_hook_active=payload.get("stop_hook_active") is True,
        is_subagent=payload.get("hook_event_name") == "SubagentStop" or "agent_id" in payload,
        background_tasks=0,  # Codex reports none
        host=NAME,
    )


def answer(verdict: Verdict) -> Answer:
    return block_on_stderr(verdict)
