"""Qwen Code: Claude-style `Stop` hooks in `.qwen/settings.json`; exit 2 hands stderr to the model.

Its payload is Claude's plus fields of its own (`crons`, `context_usage`, `context_limit`).
`prompt_id` names the person's prompt and stays the same through continuations. Qwen ends a
prompt after 8 blocks in a row unless `QWEN_CODE_STOP_HOOK_BLOCK_CAP` (at most 100) says
otherwise: install sets that variable in the settings' `env`, which Qwen exports at start.
"""

from __future__ import annotations

from agentcfg.hosts import defaults
from agentcfg.hosts.defaults import IDLE as IDLE
from agentcfg.hosts.defaults import allow as allow
from agentcfg.hosts.defaults import block as block
from agentcfg.hosts.defaults import cwd_of as cwd_of
from agentcfg.hosts.defaults import hear as hear
from agentcfg.hosts.defaults import parse as parse
from agentcfg.hosts.defaults import plugin as plugin
from agentcfg.hosts.defaults import registered as registered
from agentcfg.hosts.defaults import render as render
from agentcfg.hosts.defaults import runner as runner
from agentcfg.hosts.defaults import session_of as session_of

# no sandbox of its own that agentcfg reads
from agentcfg.hosts.defaults import store_reach as store_reach
from agentcfg.hosts.defaults import trust as trust

# no captured Qwen Code session file shows its usage
from agentcfg.hosts.defaults import usage_since as usage_since

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from agentcfg.hosts.base import Finding, Probe, Refused, StopEvent

NAME = "qwen"
TITLE = "Qwen Code"
SESSION_ENV = ("QWEN_CODE_SESSION_ID",)
AGENT_ENV = ("QWEN_CODE", "QWEN_CODE_CLI")
PROGRAMS = ("qwen", "@qwen-code/qwen-code")
PROVEN = True
EVENT = "Stop"
OWN_FIELDS = ("crons", "context_usage", "context_limit")
CAP_ENV = "QWEN_CODE_STOP_HOOK_BLOCK_CAP"
CAP_SETTING = "stopHookBlockingCap"
DEFAULT_CAP, MAX_CAP = 8, 100


def recognises(payload: Mapping[str, object]) -> bool:
    return payload.get("hook_event_name") in ("Stop", "SubagentStop") and any(
        name in payload for name in OWN_FIELDS
    )


def to_event(payload: Mapping[str, object]) -> StopEvent:
    from agentcfg.hosts.defaults import claude_style_event

    return claude_style_event(payload, NAME)


def config_path(scope: str, root: Path, home: Path, env: Mapping[str, str]) -> Path:
    return (root if scope == "project" else home) / ".qwen" / "settings.json"


def install(document: dict[str, Any], command: str) -> dict[str, Any]:
    """Our Stop hook, our SessionStart hook (it answers the start after a compaction), and
    the block cap raised to Qwen's ceiling unless the file sets one."""
    from agentcfg.hosts.base import SESSION_START, HostFileError
    from agentcfg.hosts.defaults import install_hook, session_start_entry

    result = defaults.install(document, command)
    result = install_hook(result, SESSION_START, session_start_entry(command), group={})
    env = result.get("env", {})
    if not isinstance(env, dict):
        raise HostFileError("its `env` is not an object")
    if CAP_ENV not in env and CAP_SETTING not in result:
        result["env"] = {**env, CAP_ENV: str(MAX_CAP)}
    return result


def uninstall(document: dict[str, Any]) -> dict[str, Any]:
    """Without our hook, nor the cap install set (a cap of another value is the person's)."""
    from agentcfg.hosts.base import SESSION_START
    from agentcfg.hosts.defaults import uninstall_hook

    result = uninstall_hook(defaults.uninstall(document), SESSION_START)
    env = result.get("env")
    if isinstance(env, dict) and env.get(CAP_ENV) == str(MAX_CAP):
        del env[CAP_ENV]
        if not env:
            del result["env"]
    return result


def checks(path: Path, root: Path, home: Path, env: Mapping[str, str]) -> list[Finding]:
    import sys

    from agentcfg.hosts.defaults import session_start_finding

    return session_start_finding(sys.modules[__name__], path)


def probe(cwd: str) -> Probe:
    return defaults.stop_probe(
        cwd,
        prompt_id="probe",
        last_assistant_message="probe",
        background_tasks=[],
        crons=[],
        context_usage=0,
        context_limit=0,
    )


def block_cap(root: Path, home: Path, env: Mapping[str, str]) -> tuple[int, str] | None:
    fix = (
        f"`agentcfg hooks install --host qwen` raises it to {MAX_CAP}, Qwen's ceiling "
        f"({CAP_ENV} in .qwen/settings.json); past that, send another prompt to go on"
    )
    return _cap(root, home, env), fix


def _cap(root: Path, home: Path, env: Mapping[str, str]) -> int:
    """Qwen's own rule: the variable (from the process, else a settings `env`), else the
    `stopHookBlockingCap` setting, else 8; at most 100. The project's settings win over the
    user's."""
    from agentcfg.hosts.defaults import read_json_file

    found = (read_json_file(config_path(scope, root, home, env)) for scope in ("project", "user"))
    documents = [document for document in found if document is not None]
    variable = env.get(CAP_ENV, "").strip()
    for document in documents:
        if variable:
            break
        settings_env = document.get("env")
        if isinstance(settings_env, dict) and isinstance(settings_env.get(CAP_ENV), str):
            variable = settings_env[CAP_ENV].strip()
    if variable:
        whole = variable.lstrip("-")
        return _capped(int(variable)) if whole.isascii() and whole.isdigit() else DEFAULT_CAP
    setting = next((d[CAP_SETTING] for d in documents if CAP_SETTING in d), None)
    return _capped(setting) if isinstance(setting, (int, float)) else DEFAULT_CAP


def _capped(value: float) -> int:
    return int(min(value, MAX_CAP)) if value >= 1 else DEFAULT_CAP


# --- unattended runs (`agentcfg run`) ---

BINARY = "qwen"
# `qwen <prompt> --session-id <id>` names a new session; `--resume <id>` carries it on
NAMES_SESSION = True


ALLOW, ALLOW_ARGS = defaults.YOLO, defaults.YOLO_ARGS
asks = defaults.yolo_asks(TITLE)


def refusals(stdout: str, stderr: str) -> Refused:
    """The agent's tool calls Qwen Code declined for want of approval: headless without yolo
    it offers the model no shell, and a call to it anyway ends on stderr in `Warning: Tool
    "run_shell_command" was not run: Qwen Code requires permission to use ...`, which names the
    tool, never the command. Nothing it prints tells a command that failed."""
    import re

    from agentcfg.hosts.base import Refused

    found = re.findall(
        r'^Warning: Tool "([^"]+)" was not run: \S.* requires permission', stderr, re.M
    )
    return Refused(tuple(found))


def headless(prompt: str, session: str | None, resume: bool, extra: Sequence[str]) -> list[str]:
    named = [] if session is None else ["--resume" if resume else "--session-id", session]
    return [prompt, *named, *extra]


def limit_reset(output: str, now: float) -> float | None:
    """The reset Qwen Code announced when it ended on a rate limit, else None.

    Qwen waits a 429 out inside the process: after its client's own quick retries it prints
    `Retrying in 60s (attempt 1/10): [API Error: 429 ...]` and doubles the wait each attempt;
    only when the attempts are spent does it end on the error, which tells no reset (`now`).
    """

    from agentcfg.hosts.limits import tail

    last = tail(output, 3)
    ended = [line for line in last.splitlines() if "API Error: 429" in line]
    return now if ended and not any("Retrying in" in line for line in ended) else None
