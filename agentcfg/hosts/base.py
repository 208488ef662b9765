"""What every host adapter produces and consumes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StopEvent:
    session_id: str
    turn_id: str  # the host's own turn identity; "" when it has none
    transcript_path: str
    cwd: str
    last_assistant_message: str | None
    stop_hook_active: bool
    is_subagent: bool
    background_tasks: int
    host: str
    interrupted: bool = False  # the person stopped the agent (Cursor's aborted or error status)


@dataclass(frozen=True)
class Verdict:
    kind: str  # "allow" | "warn" | "block"
    message: str = ""
    source: str = ""  # the concern that gave it

    @property
    def blocks(self) -> bool:
        return self.kind == "block"


ALLOW = Verdict("allow")


@dataclass(frozen=True)
class Answer:
    exit_code: int
    stdout: str = ""
    stderr: str = ""


def block_on_stderr(verdict: Verdict) -> Answer:
    """The answer of the hosts that block with exit 2 and read the reason on stderr."""
    if verdict.kind == "block":
        return Answer(2, stderr=verdict.message + "\n")
    return Answer(0)


def text(payload: dict[str, object], name: str) -> str:
    value = payload.get(name)
    return value if isinstance(value, str) else ""


def count_tasks(value: object) -> int:
    """How many background tasks a payload reports as still running."""
    if isinstance(value, list):
        return sum(
            1
            for task in value
            if not isinstance(task, dict)
            or str(task.get("status", "running")).lower() in ("running", "pending", "in_progress")
        )
    if isinstance(value, int) and not isinstance(value, bool):
        return max(0, value)
    return 0
