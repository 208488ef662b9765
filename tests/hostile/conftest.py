"""The workspace the hostile cases start from: the demo roadmap trusted by the person and
claimed by the agent's session, with a transcript holding the person's prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import hook_env
from tests.hostile.harness import SESSION, run_hostile


def env_of(root: Path, **extra: str) -> dict[str, str]:
    """The person's shell: no session variable, the trust store beside the workspace."""
    return {**hook_env(root), "XDG_STATE_HOME": str(root.parent / "xdg"), **extra}


def agent_env(root: Path, session: str = SESSION) -> dict[str, str]:
    """The agent's shell inside its claimed session: the host's session variable is set."""
    return env_of(root, CLAUDE_CODE_SESSION_ID=session)


PROMPT = {"type": "user", "message": {"content": "go"}}
REPLY = {"type": "assistant", "message": {"content": [{"type": "text", "text": "Working on it."}]}}


def say_to(root: Path, line: str) -> None:
    """A tool's output in the session's transcript, and the agent's reply after it (the reply
    the turn ends on: the hook need not wait for it)."""
    result = {"type": "user", "message": {"content": [{"type": "tool_result", "content": line}]}}
    with (root / "transcript.jsonl").open("a") as handle:
        handle.write(json.dumps(result) + "\n" + json.dumps(REPLY) + "\n")


@pytest.fixture
def claimed(ws: Path) -> Path:
    """The demo workspace: trusted by the person, claimed by SESSION."""
    run_hostile(ws, ["roadmap", "trust", "demo"], 0)
    run_hostile(ws, ["sessions", "claim", "demo", "--session", SESSION], 0)
    (ws / "transcript.jsonl").write_text(json.dumps(PROMPT) + "\n" + json.dumps(REPLY) + "\n")
    return ws
