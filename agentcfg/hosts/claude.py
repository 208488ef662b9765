"""Claude Code: `Stop` and `SubagentStop` hooks in `.claude/settings.json`.

It blocks a stop on exit 2 and hands stderr to the model; a `systemMessage` on stdout with
exit 0 is shown to the person.
"""

from __future__ import annotations

from agentcfg.hosts import defaults
from agentcfg.hosts.defaults import IDLE as IDLE
from agentcfg.hosts.defaults import allow as allow
from agentcfg.hosts.defaults import block as block

# 8 blocks in a row at most, but a tool call resets the count: work never meets it
from agentcfg.hosts.defaults import block_cap as block_cap
from agentcfg.hosts.defaults import cwd_of as cwd_of
from agentcfg.hosts.defaults import parse as parse
from agentcfg.hosts.defaults import registered as registered
from agentcfg.hosts.defaults import render as render
from agentcfg.hosts.defaults import runner as runner
from agentcfg.hosts.defaults import session_of as session_of
from agentcfg.hosts.defaults import trust as trust

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from agentcfg.hosts.base import Finding, Plugin, Probe, Reach, Refused, StopEvent
    from agentcfg.transcript import Segment, Spent, Usage

NAME = "claude"
TITLE = "Claude Code"
SESSION_ENV = ("CLAUDE_CODE_SESSION_ID",)
AGENT_ENV = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT")
PROGRAMS = ("claude", "@anthropic-ai/claude-code")
PROVEN = True
EVENT = "Stop"


def recognises(payload: Mapping[str, object]) -> bool:
    return payload.get("hook_event_name") in ("Stop", "SubagentStop") and "turn_id" not in payload


def to_event(payload: Mapping[str, object]) -> StopEvent:
    from agentcfg.hosts.defaults import claude_style_event

    return claude_style_event(payload, NAME)


def config_path(scope: str, root: Path, home: Path, env: Mapping[str, str]) -> Path:
    return (root if scope == "project" else home) / ".claude" / "settings.json"


def install(document: dict[str, Any], command: str) -> dict[str, Any]:
    """Our Stop hook, and our SessionStart hook for the session's start after a compaction."""
    from agentcfg.hosts.base import SESSION_START
    from agentcfg.hosts.defaults import install_hook, session_start_entry

    result = defaults.install(document, command)
    compact = {"matcher": "compact"}
    return install_hook(result, SESSION_START, session_start_entry(command), group=compact)


def uninstall(document: dict[str, Any]) -> dict[str, Any]:
    from agentcfg.hosts.base import SESSION_START
    from agentcfg.hosts.defaults import uninstall_hook

    return uninstall_hook(defaults.uninstall(document), SESSION_START)


def checks(path: Path, root: Path, home: Path, env: Mapping[str, str]) -> list[Finding]:
    """Claude Code merges the user's, the project's and the local settings: none may switch
    hooks off, and two different commands of ours would both run at every stop."""
    import sys

    from agentcfg.hosts.base import Finding
    from agentcfg.hosts.defaults import read_json_file, registered_commands, session_start_finding

    files = (
        config_path("user", root, home, env),
        config_path("project", root, home, env),
        root / ".claude" / "settings.local.json",
    )
    found, commands = [], set()
    for settings in files:
        document = read_json_file(settings) or {}
        commands.update(registered_commands(document, EVENT))
        if document.get("disableAllHooks") is True:
            found.append(Finding(
                "error", NAME, f"{settings} switches every hook off (disableAllHooks: true)",
                f"remove `disableAllHooks` from {settings}",
            ))  # fmt: skip
    found += session_start_finding(sys.modules[__name__], path)
    if len(commands) > 1:
        found.append(Finding(
            "warning", NAME, f"the merged settings run {len(commands)} different stop hooks of ours",
            "agentcfg hooks uninstall --host claude --scope user (or the project one)",
        ))  # fmt: skip
    return found


def probe(cwd: str) -> Probe:
    return defaults.stop_probe(
        cwd, prompt_id="probe", last_assistant_message="probe", background_tasks=[]
    )


def plugin(root: Path, home: Path, env: Mapping[str, str]) -> Plugin | None:
    """Our plugin when a settings file enables it; the narrowest scope that names it decides."""
    from agentcfg.hosts.base import PLUGIN, Plugin
    from agentcfg.hosts.defaults import read_json_file

    decided: dict[str, tuple[bool, Path, str]] = {}
    for scope, path in (
        ("local", root / ".claude" / "settings.local.json"),
        ("project", root / ".claude" / "settings.json"),
        ("user", home / ".claude" / "settings.json"),
    ):
        enabled = (read_json_file(path) or {}).get("enabledPlugins")
        for key, on in enabled.items() if isinstance(enabled, dict) else ():
            if key.partition("@")[0] == PLUGIN and key not in decided:
                decided[key] = (on is True, path, scope)
    for key, (on, path, scope) in decided.items():
        if on:
            return Plugin(path, f"claude plugin uninstall {key} --scope {scope}")
    return None


def usage_since(path: str, start: int | None, settle: float) -> Spent:
    """Tokens spent since offset `start` (None: since the human turn began): each assistant
    message's `usage`, which Claude Code copies onto every line of a message.

    Claude Code may run the hook before the reply it stopped on is in the transcript; while
    the segment does not end on a reply, the file is watched up to `settle` seconds for it
    to grow.
    """
    import os
    import time

    from agentcfg.transcript import human_line, read_segment, spent_per_message

    deadline = time.monotonic() + settle
    segment = read_segment(path, start, human_line)
    seen = -1
    while (
        segment is not None
        and segment.lines is not None
        and not _ends_on_reply(segment)
        and time.monotonic() < deadline  # a partial last line must not keep it reading
    ):
        size = seen = max(seen, segment.end)
        while size == seen and time.monotonic() < deadline:
            time.sleep(0.02)
            try:
                size = os.stat(path).st_size
            except OSError:
                break
        if size == seen:
            break  # it did not grow in time: what is there is what this fire saw
        seen = size
        segment = read_segment(path, start, human_line, fresh=True)
    return spent_per_message(segment, _message_usage)


def _ends_on_reply(segment: Segment) -> bool:
    """The last message in the segment is the assistant's, and not a call for a tool."""
    from agentcfg.transcript import load

    for line in reversed(segment.lines or ()):
        if b'"user"' in line or b'"assistant"' in line:
            record = load(line)
            message = record.get("message")
            if record.get("type") in ("user", "assistant") and isinstance(message, dict):
                return record["type"] == "assistant" and message.get("stop_reason") != "tool_use"
    return True  # no message at all: nothing to wait for


def _message_usage(line: bytes) -> tuple[object, Usage | None] | None:
    from agentcfg.transcript import Usage, count, load

    if b'"assistant"' not in line:
        return None
    record = load(line)
    message = record.get("message")
    if record.get("type") != "assistant" or not isinstance(message, dict):
        return None
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return message.get("id"), None
    return message.get("id"), Usage(
        input=count(usage.get("input_tokens")),
        output=count(usage.get("output_tokens")),
        cache_read=count(usage.get("cache_read_input_tokens")),
        cache_write=count(usage.get("cache_creation_input_tokens")),
    )


# --- unattended runs (`agentcfg run`) ---

BINARY = "claude"
NAMES_SESSION = True  # `--session-id <uuid>` names a new session; `--resume <id>` carries it on


def headless(prompt: str, session: str | None, resume: bool, extra: Sequence[str]) -> list[str]:
    """`-p` as `defaults.print_headless`, printing stream-json (what `refusals` and the usage
    windows are read from) unless the person chose an output format of their own."""
    from agentcfg.hosts.stream import STREAM_ARGS

    own = defaults.given(extra, "--output-format") is not None
    return [*defaults.print_headless(prompt, session, resume, extra), *(() if own else STREAM_ARGS)]


ALLOW_ARGS = ("--allowedTools", "Bash")
ALLOW = "pass `-- --allowedTools Bash` to `agentcfg run`, or allow Bash in .claude/settings.json"
_ALLOWING = ("--allowedTools", "--allowed-tools")
_BYPASS_MODES = ("bypassPermissions",)


def asks(root: Path, home: Path, env: Mapping[str, str], extra: Sequence[str]) -> list[str]:
    """Claude Code headless refuses every command no allowlist names (nobody is there to
    approve it): the person's `--allowedTools`, a bypass, or `permissions.allow` in the
    user's settings, or in the project's once the folder is trusted (a new clone never is:
    its allowlist is ignored)."""
    from agentcfg.hosts.defaults import read_json_file

    if any(word.partition("=")[0] in (*_ALLOWING, *BYPASS[:1]) for word in extra):
        return []
    if defaults.given(extra, "--permission-mode") in _BYPASS_MODES:
        return []
    project = [root / ".claude" / "settings.json", root / ".claude" / "settings.local.json"]
    trusted = _trusted(root, home)
    allowing, ignored = False, []
    for path in [home / ".claude" / "settings.json", *project]:
        permissions = (read_json_file(path) or {}).get("permissions")
        if not isinstance(permissions, dict):
            continue
        listed = permissions.get("allow")
        bash = isinstance(listed, list) and any(
            isinstance(rule, str) and rule.startswith("Bash") for rule in listed
        )
        bypass = permissions.get("defaultMode") in _BYPASS_MODES
        if (bash or bypass) and path in project and not trusted:
            ignored.append(path.relative_to(root).as_posix())
        elif bash or bypass:
            allowing = True
    if allowing:
        return []
    told = (
        [
            f"{TITLE} will ignore the allowlist in {', '.join(ignored)}: this folder is not trusted "
            f"(a new clone never is); trust it headless with "
            f'projects["{root}"].hasTrustDialogAccepted: true in {home / ".claude.json"}, or '
            "pass `-- --allowedTools Bash`"
        ]
        if ignored
        else []
    )
    return told or [
        f"{TITLE} headless asks approval for each command the agent runs and nobody is there "
        f"to give it: {ALLOW}"
    ]


def _trusted(root: Path, home: Path) -> bool:
    """The person accepted Claude Code's trust dialog for this folder or one above it."""
    from agentcfg.hosts.defaults import read_json_file

    projects = (read_json_file(home / ".claude.json") or {}).get("projects")
    if not isinstance(projects, dict):
        return False
    folder = root.resolve()
    for candidate in (folder, *folder.parents):
        entry = projects.get(str(candidate))
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return True
    return False


def hear(line: bytes) -> list[Any]:
    """Each stream-json line as it comes: tool calls, refusals, tokens, usage windows."""
    from agentcfg.hosts.stream import parse_line

    return list(parse_line(line)) if line.startswith(b"{") else []


def refusals(stdout: str, stderr: str) -> Refused:
    """The stream-json's refused and failed tool calls, and the line in which Claude Code
    says it ignored the project's allowlist in a folder nobody trusted."""
    import re

    from agentcfg.hosts.base import Refused
    from agentcfg.hosts.stream import outcome, parse

    found = outcome(parse(stdout))
    ignored = re.findall(r"^Ignoring \d+ permissions\.allow entr[^\n:]*:[^\n.]*", stderr, re.M)
    return Refused(found.denied, found.failed, tuple(dict.fromkeys(ignored)))


def limit_reset(output: str, now: float) -> float | None:
    """The reset Claude Code announced when it ended on a usage or rate limit, else None.

    In stream-json (`--output-format stream-json --verbose`) a `rate_limit_event` whose status
    is `rejected` carries the exact `resetsAt`, and the failed reply repeats it in
    `api_error_params`; only the host's own records are read, and a `result` that is not an
    error is the model's reply, whatever its words. In text and `json` output a
    subscription's limit reads `You've hit your 5-hour limit · resets 8:51am (UTC)` (a date
    before the time when the reset is over a day away; earlier releases printed `Claude AI
    usage limit reached|<epoch>`), and an API key's rate limit `API Error: Request rejected
    (429) · <message>`, with no reset at all (then `now`). Those words are believed only from
    a start that failed: the driver asks only then (`runners.Plain`).
    """
    import re

    from agentcfg.hosts.limits import clock_time, epoch, epoch_digits, json_records, tail, zone

    rejected, failed = None, False
    for record in json_records(output):
        kind = record.get("type")
        info = record.get("rate_limit_info") if kind == "rate_limit_event" else None
        params = record.get("api_error_params")
        if isinstance(params, dict):
            info = params.get("rate_limit_info", info)
        if isinstance(info, dict) and info.get("status") == "rejected":
            rejected = epoch(info.get("resetsAt")) or rejected
        if kind == "result":
            if record.get("is_error") is not True:
                return None  # a reply the model wrote, ending a turn that did not fail
            failed = record.get("api_error_status") == 429 or record.get("error") == "rate_limit"
            output = str(record.get("result", ""))  # the text of the ending, as `-p` prints it
    if failed and rejected:
        return rejected
    last = tail(output, 3)
    older = re.search(r"usage limit reached\|(\d+)", last)  # what earlier releases printed
    if older:
        return epoch_digits(older[1]) or now
    told = re.search(r" · resets (?P<when>[^·\n]+?) \((?P<zone>[^)\n]+)\)", last)
    if told and re.search(r"limit|out of usage", last[: told.start()], re.IGNORECASE):
        return clock_time(told["when"], now, zone(told["zone"]))
    if re.search(r"API Error: (?:Request rejected \()?429\b", last) or failed:
        return now
    return None


# --- the person's store (contract/seal.py): out of the agent's reach? ---

BYPASS = ("--dangerously-skip-permissions", "bypassPermissions")


def store_reach(
    root: Path, home: Path, env: Mapping[str, str], store: Path, extra: Sequence[str]
) -> Reach:
    """Sealed when Claude Code's sandbox is on (`sandbox.enabled`) and a command it refuses is
    never run again outside it (`sandbox.allowUnsandboxedCommands: false`; true unless set),
    and no permission bypass lets the file tools write anywhere. Settings files in their
    order: the user's, the project's, the project's local one; a later one wins."""
    from agentcfg.hosts.base import OPEN, Reach
    from agentcfg.hosts.defaults import inside, read_json_file

    sandbox: dict[str, Any] = {}
    mode = None
    for path in (
        home / ".claude" / "settings.json",
        root / ".claude" / "settings.json",
        root / ".claude" / "settings.local.json",
    ):
        data = read_json_file(path) or {}
        found = data.get("sandbox")
        sandbox.update(found if isinstance(found, dict) else {})
        permissions = data.get("permissions")
        if isinstance(permissions, dict) and "defaultMode" in permissions:
            mode = permissions["defaultMode"]
    if mode in BYPASS or any(arg in BYPASS for arg in extra) or inside(store, [root]):
        return OPEN
    if sandbox.get("enabled") is True and sandbox.get("allowUnsandboxedCommands") is False:
        return Reach(True, "sandbox.enabled, allowUnsandboxedCommands false")
    return OPEN
