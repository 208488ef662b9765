"""Gemini CLI: `AfterAgent` hooks in `.gemini/settings.json`; a `deny` decision on stdout rejects
the response and sends the reason back as the next prompt.

Gemini gives no turn id and a `prompt_response` that accumulates every reply of the human turn.
Its session file tells both apart: the person's message that carries the payload's prompt
identifies the turn (a retry keeps the prompt; a second identical prompt is a new message),
and its last model message is the reply. Without the file, the prompt's hash is the turn,
unless the prompt is one of our own texts sent back on a retry: that is no new turn.
"""

from __future__ import annotations

from agentcfg.hosts import defaults
from agentcfg.hosts.defaults import IDLE as IDLE
from agentcfg.hosts.defaults import allow as allow
from agentcfg.hosts.defaults import block_cap as block_cap
from agentcfg.hosts.defaults import cwd_of as cwd_of
from agentcfg.hosts.defaults import hear as hear
from agentcfg.hosts.defaults import parse as parse
from agentcfg.hosts.defaults import render as render
from agentcfg.hosts.defaults import runner as runner
from agentcfg.hosts.defaults import session_of as session_of

# folder trust is the person's to give in Gemini CLI; `checks` says how
from agentcfg.hosts.defaults import trust as trust

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from agentcfg.hosts.base import Answer, Finding, Plugin, Probe, Reach, Refused, StopEvent
    from agentcfg.transcript import Spent, Usage

NAME = "gemini"
TITLE = "Gemini CLI"
SESSION_ENV = ("GEMINI_SESSION_ID",)
AGENT_ENV = ("GEMINI_CLI",)
PROGRAMS = ("gemini", "@google/gemini-cli")
PROVEN = True
EVENT = "AfterAgent"
HOOK_NAME = "agentcfg-stop"


def recognises(payload: Mapping[str, object]) -> bool:
    return payload.get("hook_event_name") == EVENT


def to_event(payload: Mapping[str, object]) -> StopEvent:
    from agentcfg.core.digest import sha256_hex
    from agentcfg.hosts.base import OWN_TEXTS, StopEvent
    from agentcfg.hosts.defaults import text

    prompt = text(payload, "prompt")
    ours = prompt.lstrip().startswith(OWN_TEXTS)
    response = text(payload, "prompt_response")
    message_id, reply = read_session(text(payload, "transcript_path"), prompt)
    if message_id:
        turn = f"message-{message_id}"
    elif prompt and not ours:
        turn = f"prompt-{sha256_hex(prompt.encode('utf-8', 'replace'))[:16]}"
    else:
        turn = ""
    return StopEvent(
        session_id=text(payload, "session_id"),
        turn_id=turn,
        transcript_path=text(payload, "transcript_path"),
        cwd=text(payload, "cwd"),
        last_assistant_message=reply if reply and response.endswith(reply) else response,
        stop_hook_active=payload.get("stop_hook_active") is True,
        is_subagent=False,
        background_tasks=0,
        host=NAME,
        prompt=prompt if prompt and not ours else None,
    )


def read_session(path: str, prompt: str) -> tuple[str, str]:
    """(id of the person's latest message that is `prompt`, the last model reply) from Gemini's
    session file, read from its end; "" for what it does not show."""
    import json

    from agentcfg.transcript import read_tail

    message_id, reply = "", ""
    for line in reversed(read_tail(path).split(b"\n")):
        if b'"gemini"' not in line and b'"user"' not in line:
            continue  # no message of either kind: not worth parsing
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict):
            continue
        kind, words = record.get("type"), _words(record.get("content"))
        if kind == "gemini" and not reply and words:
            reply = words
        elif kind == "user" and prompt and words == prompt and isinstance(record.get("id"), str):
            message_id = record["id"]
            break
    return message_id, reply


def _words(content: object) -> str:
    """A message's text: a string, or the text parts of a list (tool calls and results have none)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def block(text: str) -> Answer:
    from agentcfg.hosts.base import Answer
    from agentcfg.hosts.defaults import json_line

    # Exit 2 also blocks, but Gemini then reports a failed hook with a warning on every block.
    return Answer(0, stdout=json_line({"decision": "deny", "reason": text}))


def config_path(scope: str, root: Path, home: Path, env: Mapping[str, str]) -> Path:
    return (root if scope == "project" else gemini_home(home, env)) / ".gemini" / "settings.json"


def gemini_home(home: Path, env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home


def install(document: dict[str, Any], command: str) -> dict[str, Any]:
    from agentcfg.hosts.base import HOOK_TIMEOUT
    from agentcfg.hosts.defaults import install_hook

    entry = {
        "name": HOOK_NAME,
        "type": "command",
        "command": command,
        "timeout": HOOK_TIMEOUT * 1000,  # Gemini counts milliseconds
    }
    return install_hook(document, EVENT, entry, group={"matcher": "*"})


def uninstall(document: dict[str, Any]) -> dict[str, Any]:
    from agentcfg.hosts.defaults import uninstall_hook

    return uninstall_hook(document, EVENT)


def registered(document: Mapping[str, Any]) -> list[str]:
    from agentcfg.hosts.defaults import registered_commands

    return registered_commands(document, EVENT)


def checks(path: Path, root: Path, home: Path, env: Mapping[str, str]) -> list[Finding]:
    """Hooks switched on in every settings file Gemini merges; the folder trusted for project
    hooks."""
    from agentcfg.hosts.base import Finding
    from agentcfg.hosts.defaults import is_ours, read_json_file

    found = []
    user = config_path("user", root, home, env)
    for settings in dict.fromkeys((user, config_path("project", root, home, env))):
        config = (read_json_file(settings) or {}).get("hooksConfig")
        if not isinstance(config, dict):
            continue
        if config.get("enabled") is False:
            found.append(Finding(
                "error", NAME, f"{settings} switches hooks off (hooksConfig.enabled: false)",
                f"remove `hooksConfig.enabled: false` from {settings}",
            ))  # fmt: skip
        disabled = config.get("disabled")
        if isinstance(disabled, list) and any(n == HOOK_NAME or is_ours(n) for n in disabled):
            found.append(Finding(
                "error", NAME, f"{settings} lists the stop hook in hooksConfig.disabled",
                f"take `{HOOK_NAME}` out of hooksConfig.disabled in {settings}",
            ))  # fmt: skip
    if path != user:
        found.append(_folder_trust(root, home, env, read_json_file(user) or {}))
    return found


def _folder_trust(
    root: Path, home: Path, env: Mapping[str, str], user_settings: dict[str, Any]
) -> Finding:
    """Gemini runs a folder's own hooks only when the folder is trusted."""
    import os
    from pathlib import Path

    from agentcfg.hosts.base import Finding
    from agentcfg.hosts.defaults import read_json_file

    security = user_settings.get("security")
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true" or (
        isinstance(folder_trust, dict) and folder_trust.get("enabled") is False
    ):
        return Finding("ok", NAME, "folder trust does not hold back project hooks")
    rules_path = Path(
        env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
        or gemini_home(home, env) / ".gemini" / "trustedFolders.json"
    )
    rules = read_json_file(rules_path) or {}
    where = os.path.realpath(root)
    best, level = -1, None
    for rule, given in rules.items():
        folder = os.path.dirname(rule) if given == "TRUST_PARENT" else rule
        real = os.path.realpath(folder)
        if (where == real or where.startswith(real.rstrip("/") + "/")) and len(rule) > best:
            best, level = len(rule), given
    if level in ("TRUST_FOLDER", "TRUST_PARENT"):
        return Finding("ok", NAME, f"{root} is a trusted folder")
    return Finding(
        "error",
        NAME,
        f"{root} is not a trusted folder: Gemini CLI skips its project hooks",
        f'trust the folder when Gemini CLI asks, or add "{root}": "TRUST_FOLDER" to {rules_path}',
    )


def probe(cwd: str) -> Probe:
    return defaults.stop_probe(cwd, hook_event_name=EVENT, prompt="probe", prompt_response="probe")


def plugin(root: Path, home: Path, env: Mapping[str, str]) -> Plugin | None:
    """Our extension when it is installed or linked (a folder of that name under extensions/)."""
    from agentcfg.hosts.base import PLUGIN, Plugin

    folder = home / ".gemini" / "extensions" / PLUGIN
    if not folder.is_dir():
        return None
    return Plugin(folder, f"gemini extensions uninstall {PLUGIN}")


def usage_since(path: str, start: int | None, settle: float) -> Spent:
    """Tokens spent since offset `start` (None: since the person's prompt): each model message's
    `tokens`, counted once though Gemini writes a message again as it grows."""
    from agentcfg.transcript import read_segment, spent_per_message

    return spent_per_message(read_segment(path, start, _prompt_line), _message_usage)


def _prompt_line(line: bytes) -> bool:
    """A message the person wrote: a user message with text that is none of our own texts."""
    from agentcfg.hosts.base import OWN_TEXTS
    from agentcfg.transcript import load

    if b'"user"' not in line:
        return False
    record = load(line)
    content = record.get("content")
    first = content[0] if isinstance(content, list) and content else None
    words = first.get("text") if isinstance(first, dict) else None
    return (
        record.get("type") == "user"
        and isinstance(words, str)
        and not words.lstrip().startswith((*OWN_TEXTS, "<session_context>"))
    )


def _message_usage(line: bytes) -> tuple[object, Usage | None] | None:
    from agentcfg.transcript import Usage, count, load

    if b'"gemini"' not in line:
        return None
    record = load(line)
    if record.get("type") != "gemini":
        return None
    tokens = record.get("tokens")
    if not isinstance(tokens, dict):
        return record.get("id"), None
    # `input` includes the cached part; tool-use prompts and thoughts are counted beside them
    cached = count(tokens.get("cached"))
    return record.get("id"), Usage(
        input=max(0, count(tokens.get("input")) - cached) + count(tokens.get("tool")),
        output=count(tokens.get("output")) + count(tokens.get("thoughts")),
        cache_read=cached,
        cache_write=0,  # Gemini's context cache is not written by a request: nothing to count
    )


# --- unattended runs (`agentcfg run`) ---

BINARY = "gemini"
NAMES_SESSION = True  # `--session-id <id>` names a new session; `--resume <id>` carries it on


headless = defaults.print_headless


ALLOW, ALLOW_ARGS = defaults.YOLO, defaults.YOLO_ARGS
asks = defaults.yolo_asks(TITLE)


# what Gemini CLI headless leaves out of the model's tools unless `--approval-mode yolo` runs
# them unasked (nobody is there to approve them)
UNOFFERED = ("run_shell_command", "replace", "write_file")


def refusals(stdout: str, stderr: str) -> Refused:
    """The agent's calls to a tool Gemini CLI left out for want of approval. It offers the model
    no shell headless without yolo; a call to it anyway ends on stderr in `Error executing tool
    run_shell_command: Tool "run_shell_command" not found`, which names the tool, never the
    command (nothing was run). Nothing it prints tells a command that failed."""
    import re

    from agentcfg.hosts.base import Refused

    found = re.findall(r'^Error executing tool (\S+): Tool "\1" not found', stderr, re.M)
    return Refused(tuple(tool for tool in found if tool in UNOFFERED))


def limit_reset(output: str, now: float) -> float | None:
    """The reset Gemini CLI announced when it ended on a quota or rate limit, else None.

    Gemini waits out a `RESOURCE_EXHAUSTED` whose `RetryInfo.retryDelay` is 300 s or less; a
    longer one (or a daily quota, which tells no delay) ends `gemini -p` with exit 1 and a
    `TerminalQuotaError` on stderr: `Suggested retry after 301s.` and `retryDelayMs: 301000`.
    """
    import re

    from agentcfg.hosts.limits import after

    if not re.search(r"TerminalQuotaError|RetryableQuotaError|exhausted your daily quota", output):
        return None
    told = re.search(r"retryDelayMs: (\d+)", output)
    if told:
        return after(now, told[1], per=1000) or now
    told = re.search(r"Suggested retry after (\d+(?:\.\d+)?)s\b", output)
    return (after(now, told[1]) or now) if told else now


# --- the person's store (contract/seal.py): out of the agent's reach? ---

_OFF = ("", "false", "0")


def store_reach(
    root: Path, home: Path, env: Mapping[str, str], store: Path, extra: Sequence[str]
) -> Reach:
    """Sealed when Gemini CLI runs its tools in its sandbox, which lets them write the project
    folder only: `-s`/`--sandbox` among the person's arguments, else $GEMINI_SANDBOX, else
    `tools.sandbox` in its settings (the project's over the user's)."""
    from agentcfg.hosts.base import OPEN, Reach
    from agentcfg.hosts.defaults import inside

    on, why = _sandbox(root, home, env, extra)
    return Reach(True, why) if on and not inside(store, [root]) else OPEN


def _sandbox(
    root: Path, home: Path, env: Mapping[str, str], extra: Sequence[str]
) -> tuple[bool, str]:
    from agentcfg.hosts.defaults import read_json_file

    for arg in extra:
        if arg in ("-s", "--sandbox", "--sandbox=true"):
            return True, arg
        if arg == "--sandbox=false":
            return False, ""
    if "GEMINI_SANDBOX" in env:
        value = env["GEMINI_SANDBOX"]
        return value.strip().lower() not in _OFF, f"GEMINI_SANDBOX={value}"
    for scope in ("project", "user"):
        data = read_json_file(config_path(scope, root, home, env)) or {}
        tools = data.get("tools")
        found = tools.get("sandbox") if isinstance(tools, dict) else None
        found = data.get("sandbox") if found is None else found  # the settings' older shape
        if found is not None:
            on = found is True or (isinstance(found, str) and found.lower() not in _OFF)
            return on, f"tools.sandbox {json_text(found)} in its {scope} settings"
    return False, ""


def json_text(value: object) -> str:
    import json

    return json.dumps(value)
