"""Codex CLI: `Stop` hooks in `.codex/hooks.json` (or `$CODEX_HOME/hooks.json`), and a
`SessionStart` hook with matcher `compact` for the start after a compaction.

Its payload carries its own `turn_id`, stable through a continuation loop. It blocks a stop
on exit 2 and hands stderr to the model. Codex runs a project's hooks only in a trusted
project, and any hook only once its hash is trusted in `$CODEX_HOME/config.toml`; an
untrusted hook is skipped without a word, so install and doctor say which trust is missing.
"""

from __future__ import annotations

from agentcfg.hosts import defaults
from agentcfg.hosts.defaults import IDLE as IDLE
from agentcfg.hosts.defaults import block as block
from agentcfg.hosts.defaults import block_cap as block_cap
from agentcfg.hosts.defaults import cwd_of as cwd_of
from agentcfg.hosts.defaults import hear as hear
from agentcfg.hosts.defaults import parse as parse
from agentcfg.hosts.defaults import registered as registered
from agentcfg.hosts.defaults import render as render
from agentcfg.hosts.defaults import runner as runner
from agentcfg.hosts.defaults import session_of as session_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from agentcfg.hosts.base import Finding, Plugin, Probe, Reach, Refused, StopEvent, TrustEdit
    from agentcfg.transcript import Spent, Usage

NAME = "codex"
TITLE = "Codex CLI"
SESSION_ENV = ("CODEX_SESSION_ID", "CODEX_THREAD_ID")
AGENT_ENV = ("CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_MANAGED_PACKAGE_ROOT")
PROGRAMS = ("codex", "@openai/codex")
PROVEN = True
EVENT = "Stop"


def recognises(payload: Mapping[str, object]) -> bool:
    return payload.get("hook_event_name") in ("Stop", "SubagentStop") and "turn_id" in payload


def to_event(payload: Mapping[str, object]) -> StopEvent:
    from agentcfg.hosts.defaults import claude_style_event, text

    subagent = payload.get("hook_event_name") == "SubagentStop" or "agent_id" in payload
    return claude_style_event(payload, NAME, turn_id=text(payload, "turn_id"), is_subagent=subagent)


allow = defaults.allow_unseen  # Codex shows a hook's output to nobody when it allows


def config_path(scope: str, root: Path, home: Path, env: Mapping[str, str]) -> Path:
    return (root if scope == "project" else codex_home(home, env)) / (
        ".codex/hooks.json" if scope == "project" else "hooks.json"
    )


def codex_home(home: Path, env: Mapping[str, str]) -> Path:
    from pathlib import Path

    return Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"


def install(document: dict[str, Any], command: str) -> dict[str, Any]:
    """Our Stop hook, and our SessionStart hook for the session's start after a compaction."""
    from agentcfg.hosts.base import SESSION_START
    from agentcfg.hosts.defaults import install_hook, session_start_entry

    result = defaults.install(document, command)
    compact = {"matcher": COMPACT}
    return install_hook(result, SESSION_START, session_start_entry(command), group=compact)


def uninstall(document: dict[str, Any]) -> dict[str, Any]:
    from agentcfg.hosts.base import SESSION_START
    from agentcfg.hosts.defaults import uninstall_hook

    return uninstall_hook(defaults.uninstall(document), SESSION_START)


# Trust. Codex keys a hook's trust by "<hooks.json>:<event>:<group>:<index>" and hashes the
# hook's normalised identity: sha256 of the compact, key-sorted JSON of its event name and
# handler (async false, the command, the timeout in seconds, type "command"), and the group's
# matcher when it has one.

TRUST_BEGIN = "# >>> agentcfg hooks install --trust (agentcfg hooks uninstall takes this out)"
TRUST_END = "# <<< agentcfg"
COMPACT = "compact"
# Our events in hooks.json, by the name Codex gives them in a trust key and a hash.
_EVENTS = {"Stop": "stop", "SessionStart": "session_start"}


def hook_hash(command: str, timeout: int, event: str = "stop", matcher: str | None = None) -> str:
    import json

    from agentcfg.core.digest import sha256_hex

    handler = {"async": False, "command": command, "timeout": timeout, "type": "command"}
    identity: dict[str, object] = {"event_name": event, "hooks": [handler]}
    if matcher is not None:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + sha256_hex(text.encode())


def _our_hooks(document: Mapping[str, Any], path: Path) -> list[tuple[str, str]]:
    """(trust key, current hash) of each of our hooks in a hooks.json document."""
    from agentcfg.hosts.defaults import is_ours

    hooks = document.get("hooks")
    found = []
    for name, event in _EVENTS.items():
        groups = hooks.get(name) if isinstance(hooks, dict) else None
        for i, group in enumerate(groups if isinstance(groups, list) else []):
            inner = group.get("hooks") if isinstance(group, dict) else None
            matcher = group.get("matcher") if isinstance(group, dict) else None
            for j, hook in enumerate(inner if isinstance(inner, list) else []):
                if isinstance(hook, dict) and is_ours(hook.get("command")):
                    timeout = hook.get("timeout")
                    seconds = timeout if type(timeout) is int else 600  # Codex's default
                    current = hook_hash(hook["command"], seconds, event, matcher)
                    found.append((f"{path}:{event}:{i}:{j}", current))
    return found


def _trust_file(home: Path, env: Mapping[str, str]) -> Path:
    return codex_home(home, env) / "config.toml"


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """The file's text and parsed value ("" and {} when absent); HostFileError when unreadable."""
    from agentcfg.hosts.base import HostFileError

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "", {}
    except (OSError, UnicodeDecodeError) as exc:
        raise HostFileError(f"cannot read {path}: {exc}") from None
    return text, _parse_toml(path, text)


def _parse_toml(path: Path, text: str) -> dict[str, Any]:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    from agentcfg.hosts.base import HostFileError

    try:
        return tomlkit.parse(text).unwrap()
    except TOMLKitError as exc:
        raise HostFileError(f"{path} is not valid TOML ({exc})") from None


def _project_trusted(config: Mapping[str, Any], root: Path) -> bool:
    """Codex trusts a project when it or a folder above it is trusted."""
    projects = config.get("projects")
    if not isinstance(projects, dict):
        return False
    for folder in (root, *root.parents):
        entry = projects.get(str(folder))
        if isinstance(entry, dict) and "trust_level" in entry:
            return bool(entry["trust_level"] == "trusted")
    return False


def _trusted_hash(config: Mapping[str, Any], key: str) -> object:
    hooks = config.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    entry = states.get(key) if isinstance(states, dict) else None
    return entry.get("trusted_hash") if isinstance(entry, dict) else None


def _without_block(text: str) -> str:
    """The file's text without the trust block `trust` wrote, and the blank line before it."""
    start = text.find(TRUST_BEGIN)
    end = text.find(TRUST_END + "\n", start)
    if start < 0 or end < 0:
        return text
    head = text[:start]
    return (head[:-1] if head.endswith("\n\n") else head) + text[end + len(TRUST_END) + 1 :]


def trust(
    document: Mapping[str, Any],
    path: Path,
    root: Path,
    home: Path,
    env: Mapping[str, str],
    grant: bool,
) -> TrustEdit | None:
    """The config.toml edit that trusts our hooks of `document` (the hooks file at `path`) and,
    for a project file, the project; with `grant` false, the edit that takes that trust out.

    What we add is one marked block at the end of the file, so every other byte stays and
    uninstall removes exactly it.
    """
    from agentcfg.hosts.base import HostFileError, TrustEdit

    target = _trust_file(home, env)
    before, _ = _read_toml(target)
    text = _without_block(before)
    if grant:
        config = _parse_toml(target, text)
        tables = []
        if path.is_relative_to(root) and not _project_trusted(config, root):
            tables.append(f'[projects.{_key(str(root))}]\ntrust_level = "trusted"\n')
        for key, current in _our_hooks(document, path):
            if _trusted_hash(config, key) != current:
                tables.append(f"[hooks.state.{_key(key)}]\ntrusted_hash = {_key(current)}\n")
        if tables:
            gap = "" if not text else "\n" if text.endswith("\n") else "\n\n"
            text += gap + TRUST_BEGIN + "\n" + "\n".join(tables) + TRUST_END + "\n"
            try:
                _parse_toml(target, text)
            except HostFileError:
                raise HostFileError(
                    f"{target} already holds trust tables for this project or hook that "
                    "conflict with ours; trust them by hand: " + " ".join(tables)
                ) from None
    return TrustEdit(target, before if target.exists() else None, text)


def _key(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)  # a TOML basic string


def checks(path: Path, root: Path, home: Path, env: Mapping[str, str]) -> list[Finding]:
    """Both trusts Codex needs before it runs our hooks: the project's, and each hook's hash;
    and a warning when the session-start hook is missing."""
    import sys

    from agentcfg.hosts.base import Finding, HostFileError
    from agentcfg.hosts.defaults import read_json_file, session_start_finding

    target = _trust_file(home, env)
    scope = "project" if path.is_relative_to(root) else "user"
    fix = "agentcfg hooks install --host codex --trust" + (
        "" if scope == "project" else " --scope user"
    )
    try:
        _, config = _read_toml(target)
    except HostFileError as exc:
        return [Finding("error", NAME, str(exc), f"repair {target}")]
    found = []
    if scope == "project":
        if _project_trusted(config, root):
            found.append(Finding("ok", NAME, f"project {root} is trusted in {target}"))
        else:
            found.append(Finding(
                "error", NAME,
                f"project {root} is not trusted in {target}: Codex skips its hooks "
                f'(needs [projects."{root}"] trust_level = "trusted")',
                fix,
            ))  # fmt: skip
    for key, current in _our_hooks(read_json_file(path) or {}, path):
        which = "session-start" if ":session_start:" in key else "stop"
        trusted = _trusted_hash(config, key)
        if trusted == current:
            found.append(Finding("ok", NAME, f"the {which} hook's hash is trusted ({key})"))
            continue
        why = "has no trusted hash" if trusted is None else "has a trusted hash of an older command"
        found.append(Finding(
            "error", NAME,
            f"the {which} hook {why} in {target}: Codex skips it without a word "
            f'(needs [hooks.state."{key}"] trusted_hash = "{current}")',
            fix,
        ))  # fmt: skip
    return found + session_start_finding(sys.modules[__name__], path)


def probe(cwd: str) -> Probe:
    return defaults.stop_probe(cwd, turn_id="probe", last_assistant_message="probe")


def plugin(root: Path, home: Path, env: Mapping[str, str]) -> Plugin | None:
    """Our plugin when config.toml holds an enabled `[plugins."agentcfg@<marketplace>"]`."""
    from agentcfg.hosts.base import PLUGIN, HostFileError, Plugin

    path = codex_home(home, env) / "config.toml"
    try:
        plugins = _read_toml(path)[1].get("plugins")
    except HostFileError:
        return None
    for key, table in plugins.items() if isinstance(plugins, dict) else ():
        enabled = table.get("enabled", True) if isinstance(table, dict) else False
        if key.partition("@")[0] == PLUGIN and enabled is not False:
            return Plugin(path, f"codex plugin remove {key}")
    return None


def usage_since(path: str, start: int | None, settle: float) -> Spent:
    """Tokens spent since offset `start` (None: since the turn began): the growth of the last
    cumulative `total_token_usage` of `token_count` events across the segment."""
    from agentcfg.transcript import NOT_READ, Spent, read_segment

    segment = read_segment(path, start, _turn_start)
    if segment is None:
        return NOT_READ
    if segment.lines is None:
        return Spent(None, segment.end)
    before = _last_total(segment.before)
    after = _last_total(segment.lines) or before
    if before is None and not segment.whole and after is not None:
        return Spent(None, segment.end)  # the baseline lies beyond the tail
    return Spent(_growth(before or {}, after or {}), segment.end)


def _turn_start(line: bytes) -> bool:
    from agentcfg.transcript import load

    if b'"task_started"' not in line:
        return False
    payload = load(line).get("payload")
    return isinstance(payload, dict) and payload.get("type") == "task_started"


_PARTS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens")


def _last_total(lines: list[bytes]) -> dict[str, int] | None:
    from agentcfg.transcript import count, load

    for line in reversed(lines):
        if b'"token_count"' not in line:
            continue
        payload = load(line).get("payload")
        info = payload.get("info") if isinstance(payload, dict) else None
        total = info.get("total_token_usage") if isinstance(info, dict) else None
        if isinstance(total, dict):
            return {part: count(total.get(part)) for part in _PARTS}
    return None


def _growth(before: dict[str, int], after: dict[str, int]) -> Usage | None:
    from agentcfg.transcript import Usage

    grew = {part: after.get(part, 0) - before.get(part, 0) for part in _PARTS}
    if any(n < 0 for n in grew.values()):
        return None  # the running total went back: not the same thread's count
    # `input_tokens` includes the cached and cache-written parts; `output_tokens` the reasoning
    cached, written = grew["cached_input_tokens"], grew["cache_write_input_tokens"]
    return Usage(
        input=max(0, grew["input_tokens"] - cached - written),
        output=grew["output_tokens"],
        cache_read=cached,
        cache_write=written,
    )


# --- unattended runs (`agentcfg run`) ---

BINARY = "codex"
NAMES_SESSION = False  # `codex exec` picks its own thread id: the claim waits for its token


ALLOW_ARGS = ("--sandbox", "workspace-write")
ALLOW = (
    "pass `-- --sandbox workspace-write` to `agentcfg run`, or set sandbox_mode = "
    '"workspace-write" in config.toml'
)


def asks(root: Path, home: Path, env: Mapping[str, str], extra: Sequence[str]) -> list[str]:
    """`codex exec` runs in a read-only sandbox unless told otherwise: the agent's `roadmap
    done` cannot write the workspace's state there."""
    from agentcfg.hosts.base import HostFileError

    mode, _how = _mode(extra)
    if mode is None:
        try:
            _text, config = _read_toml(_trust_file(home, env))
        except HostFileError:
            config = {}
        found = config.get("sandbox_mode")
        mode = found if isinstance(found, str) else None
    if mode not in (None, "read-only"):
        return []
    return [f"{TITLE}'s sandbox is read-only here: the agent cannot write the workspace; {ALLOW}"]


def refusals(stdout: str, stderr: str, keep: int = 3) -> Refused:
    """The agent's commands Codex's sandbox kept from writing, and its last failed ones.

    `codex exec` asks nobody (its approval is `never`): each command runs in the sandbox, and
    stderr tells it as `exec`, the command line with `in <folder>`, then ` exited <code> in
    <time>:` and its output. A read-only sandbox lets the command run but fails its writes with
    `Read-only file system`: that is a refusal; any other non-zero exit is a failure.
    """
    from agentcfg.hosts.base import Refused

    denied: list[str] = []
    failed: list[str] = []
    for command, output in _exits(stderr):
        (denied if "Read-only file system" in output else failed).append(command)
    return Refused(tuple(denied), tuple(failed[-keep:]))


def _exits(stderr: str) -> list[tuple[str, str]]:
    """Each command of a `codex exec` that exited non-zero, with its output."""
    import re

    told = re.compile(
        r"^exec\n([^\n]+) in [^\n]*\n exited -?\d+ in [^\n]*:\n(.*?)(?=^(?:exec|codex|hook: .*|tokens used)$|\Z)",
        re.M | re.S,
    )
    return [(_shown(line), output) for line, output in told.findall(stderr)]


def _shown(line: str) -> str:
    """The command the agent gave, from the command line Codex ran (`/bin/bash -lc '...'`)."""
    import os
    import shlex

    try:
        words = shlex.split(line)
    except ValueError:
        return line
    shells = ("bash", "sh", "zsh")
    if len(words) == 3 and os.path.basename(words[0]) in shells and words[1] in ("-c", "-lc"):
        return words[2]
    return line


def headless(
    prompt: str, session: str | None, resume: bool, extra: Sequence[str]
) -> list[str] | None:
    if resume:
        return None if session is None else ["exec", "resume", *extra, session, prompt]
    return ["exec", *extra, prompt]


def limit_reset(output: str, now: float) -> float | None:
    """The reset Codex announced when it ended on a usage or rate limit, else None.

    A plan's usage limit (`usage_limit_reached`) ends `codex exec` at once with exit 1 and
    `You’ve hit your usage limit. ... try again at 9:04 AM.` (local time; a date first, as in
    `Dec 3rd, 2026 4:32 PM`, when the reset is on another day), on stderr as `ERROR: ...` or in
    the `turn.failed` event under `--json`. An API rate limit is retried after each
    `retry-after` (5 retries), then ends with `exceeded retry limit, last status: 429 Too Many
    Requests`, with no reset (then `now`).
    """
    import re

    from agentcfg.hosts.limits import clock_time

    told = re.search(r"hit your usage limit\b[^\n]*?try again at ([^\n\"]+)", output)
    if told:
        return clock_time(told[1], now) or now
    if re.search(r"hit your usage limit|last status: 429\b", output):
        return now
    return None


# --- the person's store (contract/seal.py): out of the agent's reach? ---

_FLAGS = {
    "--full-auto": "workspace-write",
    "--dangerously-bypass-approvals-and-sandbox": "danger-full-access",
    "--yolo": "danger-full-access",
}


def store_reach(
    root: Path, home: Path, env: Mapping[str, str], store: Path, extra: Sequence[str]
) -> Reach:
    """Sealed when Codex's sandbox is `read-only`, or `workspace-write` with the store under
    none of the folders it may write (the workspace, /tmp, $TMPDIR and its `writable_roots`):
    `--sandbox`/`-s`, `--full-auto` or `-c sandbox_mode=...` among the person's arguments,
    else `sandbox_mode` in the user's config.toml. Unset, the mode is Codex's own default,
    which agentcfg does not assume."""
    from pathlib import Path

    from agentcfg.hosts.base import OPEN, HostFileError, Reach
    from agentcfg.hosts.defaults import inside

    try:
        _text, config = _read_toml(_trust_file(home, env))
    except HostFileError:
        config = {}
    mode, why = _mode(extra)
    if mode is None:
        found = config.get("sandbox_mode")
        mode, why = (found, f"sandbox_mode = {found} in config.toml") if found else (None, "")
    if mode == "read-only":
        return Reach(True, why)
    if mode != "workspace-write":
        return OPEN
    table = config.get("sandbox_workspace_write")
    listed = table.get("writable_roots") if isinstance(table, dict) else None
    roots = [Path(r) for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
    roots += [root, Path("/tmp")] + ([Path(env["TMPDIR"])] if env.get("TMPDIR") else [])
    return OPEN if inside(store, roots) else Reach(True, why)


def _mode(extra: Sequence[str]) -> tuple[str | None, str]:
    """The sandbox mode the person's arguments set, and how; None when they set none."""
    found: tuple[str | None, str] = (None, "")
    for n, arg in enumerate(extra):
        following = extra[n + 1] if n + 1 < len(extra) else ""
        if arg in ("--sandbox", "-s") and following:
            found = following, f"{arg} {following}"
        elif arg.startswith("--sandbox="):
            found = arg.partition("=")[2], arg
        elif arg in _FLAGS:
            found = _FLAGS[arg], arg
        elif arg in ("-c", "--config") and following.replace(" ", "").startswith("sandbox_mode="):
            found = following.partition("=")[2].strip().strip("\"'"), f"{arg} {following}"
    return found
