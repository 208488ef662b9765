"""GitHub Copilot CLI: `agentStop` hooks in `.github/hooks/<file>.json` (or `~/.copilot/hooks/`).

Copilot ignores exit 2: a block is `{"decision": "block", "reason": ...}` on stdout with exit 0.
Its payload is camelCase (`sessionId`, `transcriptPath`, `stopReason`), or Claude-shaped when
registered in the Claude format, and carries neither the last message nor a prompt id: both
come from its `events.jsonl` transcript. It ends a prompt after 8 blocks, with no setting.
Project hooks fire in `-p` only in a trusted folder (`--trust-folder`).
"""

from __future__ import annotations

from agentcfg.hosts import defaults
from agentcfg.hosts.defaults import IDLE as IDLE
from agentcfg.hosts.defaults import cwd_of as cwd_of
from agentcfg.hosts.defaults import hear as hear
from agentcfg.hosts.defaults import parse as parse
from agentcfg.hosts.defaults import plugin as plugin
from agentcfg.hosts.defaults import render as render
from agentcfg.hosts.defaults import runner as runner

# no sandbox of its own that agentcfg reads
from agentcfg.hosts.defaults import store_reach as store_reach

# folder trust is the person's to give in Copilot CLI; `checks` says how
from agentcfg.hosts.defaults import trust as trust

# no captured Copilot CLI events file shows its usage
from agentcfg.hosts.defaults import usage_since as usage_since

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from agentcfg.hosts.base import Finding, Probe, Refused, StopEvent

NAME = "copilot"
TITLE = "Copilot CLI"
SESSION_ENV = ("COPILOT_AGENT_SESSION_ID",)
AGENT_ENV = ("COPILOT_CLI",)
PROGRAMS = ("copilot", "@github/copilot")
PROVEN = True
EVENT = "agentStop"
FILE = "agentcfg.json"
BLOCK_CAP = 8


def recognises(payload: Mapping[str, object]) -> bool:
    return "sessionId" in payload or (
        payload.get("hook_event_name") == "Stop" and "stop_reason" in payload
    )


def session_of(payload: Mapping[str, object]) -> str:
    return defaults.first_text(payload, "sessionId", "session_id")


def to_event(payload: Mapping[str, object]) -> StopEvent:
    from agentcfg.hosts.base import StopEvent
    from agentcfg.hosts.defaults import text

    transcript = text(payload, "transcriptPath") or text(payload, "transcript_path")
    turn, final = read_events(transcript)
    reason = (text(payload, "stopReason") or text(payload, "stop_reason")).lower()
    return StopEvent(
        session_id=session_of(payload),
        turn_id=turn,
        transcript_path=transcript,
        cwd=cwd_of(payload),
        last_assistant_message=final,
        stop_hook_active=payload.get("stop_hook_active") is True,
        is_subagent=False,  # subagents stop through `subagentStop`, which we do not register
        background_tasks=0,
        host=NAME,
        interrupted=any(word in reason for word in ("abort", "cancel", "interrupt")),
        # Copilot writes events.jsonl after its `-p` run, so replies cannot be told apart by
        # the transcript; each fire carries its own timestamp, and Copilot fires once a reply
        fire_id=str(payload.get("timestamp", "")),
    )


def read_events(path: str) -> tuple[str, str | None]:
    """From the tail of `events.jsonl`: the id of the person's latest prompt ("" when the tail
    holds none) and the text of the reply since the last message to the agent (None: unknown)."""
    import json

    from agentcfg.hosts.base import OWN_TEXTS
    from agentcfg.transcript import read_tail

    tail = read_tail(path)
    if not tail:
        return "", None
    final: str | None = None
    for line in reversed(tail.split(b"\n")):  # a partial first line does not parse: skipped
        if b'"assistant.message"' not in line and b'"user.message"' not in line:
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        data = record.get("data") if isinstance(record, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("content"), str):
            continue
        content = data["content"]
        if record.get("type") == "assistant.message":
            if final is None and content.strip():
                final = content
        elif record.get("type") == "user.message":
            if final is None:
                final = ""  # the agent has not written since it was last spoken to
            if not content.lstrip().startswith(OWN_TEXTS):
                ident = data.get("messageId") or record.get("id")
                return (f"prompt-{ident}" if isinstance(ident, str) else ""), final
    return "", final


block = defaults.block_on_stdout
allow = defaults.allow_unseen  # Copilot shows nothing of an agentStop hook that allows


def config_path(scope: str, root: Path, home: Path, env: Mapping[str, str]) -> Path:
    if scope == "project":
        return root / ".github" / "hooks" / FILE
    return home / ".copilot" / "hooks" / FILE


def install(document: dict[str, Any], command: str) -> dict[str, Any]:
    from agentcfg.hosts.base import HOOK_TIMEOUT
    from agentcfg.hosts.defaults import install_hook

    if "version" not in document:
        document = {"version": 1, **document}
    entry = {"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT}
    return install_hook(document, EVENT, entry, key="bash")


def uninstall(document: dict[str, Any]) -> dict[str, Any]:
    from agentcfg.hosts.defaults import uninstall_hook

    result = uninstall_hook(document, EVENT, key="bash", grouped=False)
    return {} if result == {"version": 1} else result


def registered(document: Mapping[str, Any]) -> list[str]:
    from agentcfg.hosts.defaults import registered_commands

    return registered_commands(document, EVENT, key="bash", grouped=False)


def checks(path: Path, root: Path, home: Path, env: Mapping[str, str]) -> list[Finding]:
    from agentcfg.hosts.base import Finding

    if not path.is_relative_to(root):
        return []
    return [
        Finding(
            "warning",
            NAME,
            "Copilot runs a project's hooks only in a folder it trusts: in `copilot -p` that "
            "takes `--trust-folder` (or COPILOT_ALLOW_ALL=true), else the hook is skipped "
            "without a word",
            "trust the folder once in an interactive `copilot`, or pass --trust-folder with -p",
        )
    ]


def probe(cwd: str) -> Probe:
    # allowed: exit 0, no decision on stdout
    return defaults.probe_of(
        "sessionId",
        {
            "timestamp": 0,
            "cwd": cwd,
            "transcriptPath": "",
            "stopReason": "end_turn",
            "stop_hook_active": False,
        },
    )


def block_cap(root: Path, home: Path, env: Mapping[str, str]) -> tuple[int, str] | None:
    return BLOCK_CAP, "no setting raises it: send another prompt (`copilot --continue`) to go on"


# --- unattended runs (`agentcfg run`) ---

BINARY = "copilot"
NAMES_SESSION = True  # `--session-id <id>` names a new session; `--resume <id>` carries it on


headless = defaults.print_headless


ALLOW_ARGS = ("--allow-all-tools", "--allow-all-paths")
ALLOW = (
    "pass `-- --allow-all-tools --allow-all-paths` to `agentcfg run` (without --allow-all-paths "
    "a command that names a path outside the folder is still refused)"
)
_ALLOWING = ("--allow-all-tools", "--allow-tool", "--allow-all", "--yolo")


def asks(root: Path, home: Path, env: Mapping[str, str], extra: Sequence[str]) -> list[str]:
    """`copilot -p` runs no tool nobody allowed: `--allow-all-tools`, `--allow-tool`,
    `--allow-all` (`--yolo`), or COPILOT_ALLOW_ALL in its environment."""
    if any(w.partition("=")[0] in _ALLOWING for w in extra):
        return []
    if env.get("COPILOT_ALLOW_ALL", "").lower() in ("1", "true"):
        return []
    return [f"{TITLE} headless runs no tool nobody allowed: {ALLOW}"]


def refusals(stdout: str, stderr: str, keep: int = 3) -> Refused:
    """The agent's commands `copilot -p` refused, and its last failed ones. Each tool call that
    did not succeed is told on stdout as `✗ <title> (<tool>)`, then `  │ <command>` and
    `  └ <outcome>`: `Permission denied because no interactive user response was available.`
    for a refusal, the command's output ending in `Failed with exit code <n>` for a failure."""
    import re

    from agentcfg.hosts.base import Refused

    denied: list[str] = []
    failed: list[str] = []
    told = re.finditer(
        r"^✗ [^\n]*\n {2}│ ([^\n]*)\n(?: {2}│ [^\n]*\n)* {2}└ ([^\n]*)", stdout, re.M
    )
    for call in told:
        (denied if call[2].startswith("Permission denied") else failed).append(call[1])
    return Refused(tuple(denied), tuple(failed[-keep:]))


def limit_reset(output: str, now: float) -> float | None:
    """The reset Copilot CLI announced when it ended on a rate limit, else None.

    A 429 from the model ends `copilot -p` with exit 1 and `429 <the provider's message>` on
    stderr; it tells no reset (then `now`).
    """
    import re

    from agentcfg.hosts.limits import tail

    return now if re.search(r"^\s*429\b", tail(output, 12), re.MULTILINE) else None
