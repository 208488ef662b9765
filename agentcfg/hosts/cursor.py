"""Cursor: `stop`; it never blocks, it answers with a follow-up message the agent receives next.

Cursor gives a generation id per agent reply and a `loop_count` of follow-ups: a count of
0 is the first stop after the person spoke, so only then is the generation a new human turn.
"""

from __future__ import annotations

import json

from agentcfg.hosts.base import Answer, StopEvent, Verdict, text

NAME = "cursor"


def to_event(payload: dict[str, object]) -> StopEvent:
    loop_count = payload.get("loop_count")
    first = loop_count in (0, None) or isinstance(loop_count, bool)
    status = payload.get("status")
    return StopEvent(
        session_id=text(payload, "conversation_id") or text(payload, "session_id"),
        turn_id=text(payload, "generation_id") if first else "",
        transcript_path=text(payload, "transcript_path"),
        cwd=text(payload, "cwd") or _first_root(payload),
        last_assistant_message=None,  # read from the transcript when there is one
        stop_hook_active=not first,
        is_subagent=False,
        background_tasks=0,
        host=NAME,
        interrupted=isinstance(status, str) and status not in ("completed", ""),
    )


def _first_root(payload: dict[str, object]) -> str:
    roots = payload.get("workspace_roots")
    return roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else ""


def answer(verdict: Verdict) -> Answer:
    if verdict.kind == "block":
        return Answer(0, stdout=json.dumps({"followup_message": verdict.message}) + "\n")
    return Answer(0, stdout="{}\n")
