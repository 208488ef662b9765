"""Gemini CLI: `AfterAgent`; exit 2 rejects the response and sends stderr back as the next prompt.

Gemini gives no turn id. The person's prompt identifies the human turn, except when the
prompt is one of our own texts sent back on a retry: that is the same turn, not a new one.
"""

from __future__ import annotations

from agentcfg.hosts.base import Answer, StopEvent, Verdict, block_on_stderr, text
from agentcfg.preflight import sha256_hex

NAME = "gemini"
OWN_TEXTS = ("run-continuation:", "turn-end-gate:")


def to_event(payload: dict[str, object]) -> StopEvent:
    prompt = text(payload, "prompt")
    ours = prompt.lstrip().startswith(OWN_TEXTS)
    turn = (
        f"prompt-{sha256_hex(prompt.encode('utf-8', 'replace'))[:16]}"
        if prompt and not ours
        else ""
    )
    response = payload.get("prompt_response")
    return StopEvent(
        session_id=text(payload, "session_id"),
        turn_id=turn,
        transcript_path=text(payload, "transcript_path"),
        cwd=text(payload, "cwd"),
        last_assistant_message=response if isinstance(response, str) else None,
        stop_hook_active=payload.get("stop_hook_active") is True,
        is_subagent=False,
        background_tasks=0,
        host=NAME,
    )


def answer(verdict: Verdict) -> Answer:
    return block_on_stderr(verdict)
