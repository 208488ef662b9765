"""Claude Code: `Stop` and `SubagentStop`; block with exit 2 and the text on stderr."""

from __future__ import annotations

import json

from agentcfg.hosts.base import Answer, StopEvent, Verdict, block_on_stderr, count_tasks, text

NAME = "claude"


def to_event(payload: dict[str, object]) -> StopEvent:
    message = payload.get("last_assistant_message")
    return StopEvent(
        session_id=text(payload, "session_id"),
        turn_id=text(payload, "prompt_id"),
        transcript_path=text(payload, "transcript_path"),
        cwd=text(payload, "cwd"),
        last_assistant_message=message if isinstance(message, str) else None,
        stop_hook_active=payload.get("stop_hook_active") is True,
        is_subagent=payload.get("hook_event_name") == "SubagentStop",
        background_tasks=count_tasks(payload.get("background_tasks")),
        host=NAME,
    )


def answer(verdict: Verdict) -> Answer:
    if verdict.kind == "warn" and verdict.message:  # shown to the person, not the model
        return Answer(0, stdout=json.dumps({"systemMessage": verdict.message}) + "\n")
    return block_on_stderr(verdict)
