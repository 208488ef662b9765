"""OpenCode: no shell stop hook, so install writes our own plugin, `.opencode/plugin/agentcfg.js`
(its source is `opencode_plugin.js` beside this module).

On `session.idle` of a top-level session the plugin sends `agentcfg hook stop --host opencode`
a payload it builds from the session's messages (the person's latest prompt id, the last reply
and its message id, whether the last message was one of ours) and continues the session with a
block's reason. It gives the agent's shell the session id as OPENCODE_SESSION_ID, leaves a
session whose last reply ended on an error at rest, and after `session.compacted` adds the
text of `agentcfg hook session-start --host opencode` to the session. Headless, only
`opencode serve` with `opencode run --attach` keeps a session alive for a continuation (how
`agentcfg run` starts it: `opencode_server.py`); plain `opencode run` exits at the first idle.
"""

from __future__ import annotations

from agentcfg.hosts import defaults
from agentcfg.hosts.defaults import IDLE as IDLE
from agentcfg.hosts.defaults import allow as allow
from agentcfg.hosts.defaults import block_cap as block_cap
from agentcfg.hosts.defaults import cwd_of as cwd_of
from agentcfg.hosts.defaults import hear as hear

# `hooks install` writes our OpenCode plugin itself: no second route
from agentcfg.hosts.defaults import plugin as plugin
from agentcfg.hosts.defaults import session_of as session_of

# no sandbox of its own that agentcfg reads
from agentcfg.hosts.defaults import store_reach as store_reach

# OpenCode loads a project's plugins without asking
from agentcfg.hosts.defaults import trust as trust

# OpenCode keeps its messages in a database
from agentcfg.hosts.defaults import usage_since as usage_since

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from agentcfg.hosts.base import Finding, Probe, Refused, StopEvent
    from agentcfg.run.runners import Runner

NAME = "opencode"
TITLE = "OpenCode"
SESSION_ENV = ("OPENCODE_SESSION_ID",)
AGENT_ENV = ("OPENCODE", "OPENCODE_PID")
PROGRAMS = ("opencode", "/opencode-ai/")
PROVEN = True
EVENT = "session.idle"
FILE = "agentcfg.js"
HEADER = "// agentcfg stop hook for OpenCode"
COMMAND_LINE = "const COMMAND = []; // the hook command, filled in at install"


def recognises(payload: Mapping[str, object]) -> bool:
    return payload.get("hook_event_name") == EVENT


def to_event(payload: Mapping[str, object]) -> StopEvent:
    from agentcfg.hosts.defaults import claude_style_event, text

    # The messages live in OpenCode's database, so no transcript tells two replies of the same
    # words apart: the plugin sends the reply's message id. It never asks for a subagent's session.
    return claude_style_event(
        payload,
        NAME,
        interrupted=payload.get("interrupted") is True,
        fire_id=text(payload, "reply_id"),
    )


block = defaults.block_on_stdout


def config_path(scope: str, root: Path, home: Path, env: Mapping[str, str]) -> Path:
    if scope == "project":
        return root / ".opencode" / "plugin" / FILE
    from pathlib import Path

    config = env.get("XDG_CONFIG_HOME")
    return (Path(config) if config else home / ".config") / "opencode" / "plugin" / FILE


def parse(raw: bytes) -> dict[str, Any]:
    """The plugin file as {"source": text}."""
    return {"source": raw.decode("utf-8", "replace")} if raw else {}


def render(document: dict[str, Any]) -> bytes:
    return str(document.get("source", "")).encode()


def install(document: dict[str, Any], command: str) -> dict[str, Any]:
    from agentcfg.hosts.base import HostFileError

    if document and not _ours(document):
        raise HostFileError("it is not the plugin agentcfg writes")
    return {"source": plugin_source(command)}


def uninstall(document: dict[str, Any]) -> dict[str, Any]:
    return {} if _ours(document) else document


def registered(document: Mapping[str, Any]) -> list[str]:
    import json
    import shlex

    if not _ours(document):
        return []
    prefix = "const COMMAND = "
    for line in str(document["source"]).splitlines():
        if line.startswith(prefix):
            try:
                words, _ = json.JSONDecoder().raw_decode(line, len(prefix))
            except ValueError:
                return []
            ok = isinstance(words, list) and words and all(isinstance(w, str) for w in words)
            return [shlex.join(words)] if ok else []
    return []


def checks(path: Path, root: Path, home: Path, env: Mapping[str, str]) -> list[Finding]:
    from agentcfg.hosts.base import Finding

    found = [
        Finding(
            "ok",
            NAME,
            "headless, OpenCode continues a session only under `opencode serve` with "
            "`opencode run --attach` (how `agentcfg run --host opencode` starts it); plain "
            "`opencode run` exits at the first idle",
        )
    ]
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return found
    commands = registered({"source": source})
    if commands and source != plugin_source(commands[0]):
        found.append(
            Finding(
                "warning",
                NAME,
                f"{path} is not the plugin this agentcfg writes",
                f"agentcfg hooks install --host {NAME}"
                + ("" if path.is_relative_to(root) else " --scope user"),
            )
        )
    return found


def probe(cwd: str) -> Probe:
    # allowed: exit 0, nothing for the plugin to do
    return defaults.probe_of(
        "session_id",
        {
            "hook_event_name": EVENT,
            "cwd": cwd,
            "prompt_id": "probe",
            "last_assistant_message": "probe",
            "stop_hook_active": False,
            "interrupted": False,
        },
    )


def plugin_source(command: str) -> str:
    """Our plugin with `command` written in as its argument list."""
    import json
    import shlex
    from pathlib import Path

    template = (Path(__file__).parent / "opencode_plugin.js").read_text(encoding="utf-8")
    filled = COMMAND_LINE.replace("[]", json.dumps(shlex.split(command)), 1)
    return template.replace(COMMAND_LINE, filled, 1)


def _ours(document: Mapping[str, Any]) -> bool:
    source = document.get("source")
    return isinstance(source, str) and source.startswith(HEADER)


# --- unattended runs (`agentcfg run`) ---

BINARY = "opencode"
NAMES_SESSION = False  # OpenCode names its sessions: the run's server makes each one first


# its headless permissions come from opencode.json (`permission.bash`), allowed by default
ALLOW = 'set `"permission": {"bash": "allow"}` in opencode.json'
ALLOW_ARGS: tuple[str, ...] = ()  # only its settings allow commands


def asks(root: Path, home: Path, env: Mapping[str, str], extra: Sequence[str]) -> list[str]:
    """A headless start whose opencode.json (the person's, then the project's, which wins)
    asks approval for the shell or denies it: nobody is there to approve, so every command
    of the agent is refused (`ask`) or never offered (`deny`)."""
    from pathlib import Path

    config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    said = None
    for folder in (config / "opencode", root):
        for name in ("opencode.json", "opencode.jsonc"):
            said = _bash_permission(folder / name) or said
    does = {"ask": "asks approval for", "deny": "denies"}.get(said or "")
    if does is None:
        return []
    return [f"{TITLE} headless {does} the agent's shell commands (opencode.json: {said}): {ALLOW}"]


def _bash_permission(path: Path) -> str | None:
    """What one opencode.json says of the shell (`permission.bash`, or a `*` pattern under it,
    or `permission` itself for every tool); None when it says nothing or cannot be read."""
    import json

    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    permission = document.get("permission") if isinstance(document, dict) else None
    bash = permission.get("bash") if isinstance(permission, dict) else permission
    if isinstance(bash, dict):
        bash = bash.get("*")
    return bash if isinstance(bash, str) else None


def refusals(stdout: str, stderr: str) -> Refused:
    """The agent's commands OpenCode refused for want of approval (`"bash": "ask"`): the
    attached `opencode run` refuses each one it sees and says so on stderr, `! permission
    requested: bash (<command>); auto-rejecting`. Those the session asks once it has exited
    the run's server refuses unseen (see `opencode_server`). `"bash": "deny"` offers the model
    no shell at all, and nothing is printed. Nothing it prints tells a command that failed."""
    import re

    from agentcfg.hosts.base import Refused

    plain = re.sub(r"\x1b\[[0-9;]*m", "", stderr)
    found = re.findall(r"^! permission requested: \S+ \((.*)\); auto-rejecting$", plain, re.M)
    return Refused(tuple(found))


def headless(
    prompt: str, session: str | None, resume: bool, extra: Sequence[str]
) -> list[str] | None:
    """`run [--session <id>] <prompt>`: alone it exits at the session's first idle, before
    the plugin continues it, so `agentcfg run` sends it to its server (see `runner`)."""
    return ["run", *([] if session is None else ["--session", session]), *extra, prompt]


def runner(binary: str, root: Path, env: Mapping[str, str]) -> Runner:
    """One `opencode serve` for the whole run, each start a `run --attach` to it."""
    from agentcfg.hosts.opencode_server import Served

    return Served(binary, root, env, headless, limit_reset)


def limit_reset(output: str, now: float, messages: str = "") -> float | None:
    """The reset OpenCode's provider announced when the session ended on a rate limit, else
    None. `messages`: the session's messages as `GET /session/<id>/message` returns them.

    OpenCode retries a 429 inside the server, honouring `retry-after` (300 s waited), and when
    it gives up `opencode run --attach` exits 0 with nothing printed: the error is only on the
    session's last assistant message, `info.error` = `{"name": "APIError", "data":
    {"statusCode": 429, "responseHeaders": {"retry-after": ..., "date": ...}, ...}}`.
    """
    import json

    from agentcfg.hosts.limits import after, epoch

    try:
        found = json.loads(messages) if messages else []
    except ValueError:
        return None
    infos = [m.get("info") for m in found if isinstance(m, dict)] if isinstance(found, list) else []
    replies = [i for i in infos if isinstance(i, dict) and i.get("role") == "assistant"]
    error = replies[-1].get("error") if replies else None
    data = error.get("data") if isinstance(error, dict) else None
    if not isinstance(data, dict) or data.get("statusCode") != 429:
        return None
    headers = data.get("responseHeaders")
    wait = headers.get("retry-after") if isinstance(headers, dict) else None
    times = replies[-1].get("time")
    ended = epoch(times.get("completed")) if isinstance(times, dict) else None
    return (after(ended or now, str(wait)) or now) if wait is not None else now
