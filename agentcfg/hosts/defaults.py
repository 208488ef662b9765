"""Every function hosts share, written once: the members most hosts keep as they are, and the
helpers a host's own members are built from (payload fields, JSON files, hook lists). The
values they trade in are `hosts/base.py`'s records.

A host module imports the defaults it keeps in one line (`from agentcfg.hosts.defaults import
allow, block, ...`) and spells out only what makes that host different. Like the host modules
it serves, this one is imported before the stop hook knows it has work to do: it loads nothing
at import time, and each function imports what it needs.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from agentcfg.hosts.base import Answer, Finding, Plugin, Probe, Reach, Refused, StopEvent
    from agentcfg.hosts.protocols import Wiring
    from agentcfg.run.runners import Runner
    from agentcfg.transcript import Spent


def inside(path: Path, roots: Iterable[Path]) -> bool:
    """`path` is one of `roots` or below one (each made absolute, links resolved)."""
    import os

    real = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(root)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def settings_hook(host: Wiring, root: Path, home: Path, env: Mapping[str, str]) -> Path | None:
    """The host config file (project or user scope) whose stop hook of ours runs, if any."""
    import os

    from agentcfg.hosts.base import HostFileError

    for scope in ("project", "user"):
        path = host.config_path(scope, root, home, env)
        try:
            document = host.parse(path.read_bytes())
        except (OSError, HostFileError):
            continue
        for command in host.registered(document):
            import shlex  # only for a file that has our hook

            try:
                program = shlex.split(command)[0]
            except (ValueError, IndexError):
                continue
            if not os.path.isabs(program) or os.access(program, os.X_OK):
                return path
    return None


def text(payload: Mapping[str, object], name: str) -> str:
    value = payload.get(name)
    return value if isinstance(value, str) else ""


def message(payload: Mapping[str, object], name: str) -> str | None:
    value = payload.get(name)
    return value if isinstance(value, str) else None


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


def claude_style_event(payload: Mapping[str, object], host: str, **fields: Any) -> StopEvent:
    """The StopEvent of a Claude Code `Stop`/`SubagentStop` payload, or of a host that copies
    its shape; `prompt_id` names the person's turn. `fields` are where the host differs."""
    from agentcfg.hosts.base import StopEvent

    values: dict[str, Any] = {
        "session_id": text(payload, "session_id"),
        "turn_id": text(payload, "prompt_id"),
        "transcript_path": text(payload, "transcript_path"),
        "cwd": text(payload, "cwd"),
        "last_assistant_message": message(payload, "last_assistant_message"),
        "stop_hook_active": payload.get("stop_hook_active") is True,
        "is_subagent": payload.get("hook_event_name") == "SubagentStop",
        "background_tasks": count_tasks(payload.get("background_tasks")),
        "host": host,
    }
    return StopEvent(**{**values, **fields})


def json_line(data: Mapping[str, object]) -> str:
    import json

    return json.dumps(data, ensure_ascii=False) + "\n"


def read_json_file(path: Path) -> dict[str, Any] | None:
    """A host file's JSON object; None when it is absent, unreadable or not an object."""
    import json

    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_ours(command: object) -> bool:
    """A hook command line in the very shape `hooks install` or our plugin writes: our program
    (the CLI, `python -m agentcfg` or the plugin's shim), `hook stop` (or `hook session-start`),
    at most `--host NAME`, and nothing else. A line that merely mentions us (`touch X; agentcfg
    hook stop`) is not."""
    import shlex

    from agentcfg.hosts.base import PLUGIN_PROGRAMS

    if not isinstance(command, str):
        return False
    program, found, rest = command.partition(" hook stop")
    if not found:
        program, found, rest = command.partition(" hook session-start")
    host = rest.removeprefix(" --host ")
    if not found or (rest and (host == rest or not (host.isascii() and host.isalpha()))):
        return False
    if program in PLUGIN_PROGRAMS:
        return True
    try:
        words = shlex.split(program)
    except ValueError:
        return False
    if not words or shlex.join(words) != program:  # quoted as shlex.join quotes, so inert
        return False
    name = words[0].rsplit("/", 1)[-1]
    return (len(words) == 1 and name == "agentcfg") or (
        words[1:] == ["-m", "agentcfg"] and name.startswith("python")
    )


def session_start_entry(stop_command: str) -> dict[str, Any]:
    """Our `hook session-start` entry, beside the stop hook that runs `stop_command`."""
    from agentcfg.hosts.base import HOOK_TIMEOUT

    command = stop_command.replace(" hook stop ", " hook session-start ", 1)
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}


# The two shapes hosts give their hook lists. Grouped: {"hooks": {EVENT: [{"hooks": [entry]}]}}
# (Claude Code, Codex, Gemini); flat: {"hooks": {EVENT: [entry]}} (Cursor).


def _event_list(document: dict[str, Any], event: str) -> list[Any] | None:
    """The document's list of hooks for `event`, None when it has none."""
    from agentcfg.hosts.base import HostFileError

    hooks = document.get("hooks")
    if hooks is None:
        return None
    if not isinstance(hooks, dict):
        raise HostFileError("its `hooks` is not an object")
    entries = hooks.get(event)
    if entries is not None and not isinstance(entries, list):
        raise HostFileError(f"its `hooks.{event}` is not a list")
    return entries


def _made_event_list(document: dict[str, Any], event: str) -> list[Any]:
    """The document's list of hooks for `event`, made where missing."""
    found = _event_list(document, event)
    if found is not None:
        return found
    made: list[Any] = []
    document.setdefault("hooks", {})[event] = made
    return made


def _inner(group: object) -> list[Any]:
    inner = group.get("hooks") if isinstance(group, dict) else None
    return inner if isinstance(inner, list) else []


def registered_commands(
    document: Mapping[str, Any], event: str, key: str = "command", grouped: bool = True
) -> list[str]:
    """The commands of ours registered for a stop event."""
    from agentcfg.hosts.base import HostFileError

    try:
        entries = _event_list(dict(document), event) or []
    except HostFileError:
        return []
    hooks = [h for g in entries for h in _inner(g)] if grouped else entries
    return [h[key] for h in hooks if isinstance(h, dict) and is_ours(h.get(key))]


def install_hook(
    document: dict[str, Any],
    event: str,
    entry: dict[str, Any],
    key: str = "command",
    group: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The document with our hook `entry` in it, once; an older command of ours is replaced.

    With `group` the entry goes into a new {**group, "hooks": [entry]}; without, into the list.
    """
    import copy

    result = copy.deepcopy(document)
    entries = _made_event_list(result, event)
    grouped = group is not None
    if registered_commands(result, event, key, grouped) == [entry[key]] and _entries(
        entries, key, grouped
    ) == [entry]:
        return result  # installed already, exactly as it would be now
    _remove(entries, key, grouped)
    entries.append({**group, "hooks": [entry]} if group is not None else entry)
    return result


def uninstall_hook(
    document: dict[str, Any], event: str, key: str = "command", grouped: bool = True
) -> dict[str, Any]:
    """The document without our hooks, nor the containers that held only them."""
    import copy

    result = copy.deepcopy(document)
    entries = _event_list(result, event)
    if entries is None or not _remove(entries, key, grouped):
        return result
    hooks = result["hooks"]
    if not entries:
        del hooks[event]
    if not hooks:
        del result["hooks"]
    return result


def _entries(entries: list[Any], key: str, grouped: bool) -> list[Any]:
    hooks = [h for g in entries for h in _inner(g)] if grouped else entries
    return [h for h in hooks if isinstance(h, dict) and is_ours(h.get(key))]


def _remove(entries: list[Any], key: str, grouped: bool) -> bool:
    """Take our hooks out of an event's list, and any group that held nothing else; True if any."""
    found = bool(_entries(entries, key, grouped))

    def ours(hook: object) -> bool:
        return isinstance(hook, dict) and is_ours(hook.get(key))

    if not grouped:
        entries[:] = [e for e in entries if not ours(e)]
        return found
    kept = []
    for group in entries:
        inner = _inner(group)
        if inner:
            rest = [h for h in inner if not ours(h)]
            if not rest:
                continue  # the group held only ours
            group["hooks"] = rest
        kept.append(group)
    entries[:] = kept
    return found


def session_start_finding(host: Wiring, path: Path) -> list[Finding]:
    """A warning when the file runs our stop hook but not our session-start one: after a
    compaction the agent would not be told its step again."""
    from agentcfg.hosts.base import SESSION_START, Finding

    document = read_json_file(path) or {}
    if not host.registered(document) or registered_commands(document, SESSION_START):
        return []
    return [
        Finding(
            "warning", host.NAME,
            f"{path} has no session-start hook of ours: after a compaction the agent is not "
            "told its step again",
            f"agentcfg hooks install --host {host.NAME}",
        )
    ]  # fmt: skip


IDLE = ""  # nothing printed when the hook allows with nothing to say

# Claude Code's settings shape, which Codex and Qwen Code copy: a `Stop` hook in a group of its own
STOP = "Stop"


def session_of(payload: Mapping[str, object]) -> str:
    value = payload.get("session_id")
    return value if isinstance(value, str) else ""


def first_text(payload: Mapping[str, object], *names: str) -> str:
    """The first of the payload's fields `names` that holds a string, for a host that names a
    value in more than one way; "" when none does."""
    for name in names:
        value = payload.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def cwd_of(payload: Mapping[str, object]) -> str:
    value = payload.get("cwd")
    return value if isinstance(value, str) else ""


def block(text: str) -> Answer:
    """Exit 2 with the reason on stderr, which the host hands the model."""
    from agentcfg.hosts.base import Answer

    return Answer(2, stderr=text + "\n")


def block_on_stdout(text: str) -> Answer:
    """Exit 0 with `{"decision": "block", "reason": ...}` on stdout."""
    from agentcfg.hosts.base import Answer

    return Answer(0, stdout=json_line({"decision": "block", "reason": text}))


def allow(note: str) -> Answer:
    """Exit 0; a note goes to the person as a `systemMessage` on stdout."""
    from agentcfg.hosts.base import Answer

    return Answer(0, stdout=json_line({"systemMessage": note})) if note else Answer(0)


def allow_unseen(note: str) -> Answer:
    """Exit 0 and nothing printed, for a host that shows nobody what an allowing hook says."""
    from agentcfg.hosts.base import Answer

    return Answer(0)


def parse(raw: bytes) -> dict[str, Any]:
    """A JSON config file's object; HostFileError when it holds anything else."""
    import json

    from agentcfg.hosts.base import HostFileError

    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise HostFileError(f"it is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise HostFileError("it does not hold a JSON object")
    return data


def render(document: dict[str, Any]) -> bytes:
    import json

    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def install(document: dict[str, Any], command: str) -> dict[str, Any]:
    from agentcfg.hosts.base import HOOK_TIMEOUT

    entry = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}
    return install_hook(document, STOP, entry, group={})


def uninstall(document: dict[str, Any]) -> dict[str, Any]:
    return uninstall_hook(document, STOP)


def registered(document: Mapping[str, Any]) -> list[str]:
    return registered_commands(document, STOP)


def probe_of(session: str, fields: Mapping[str, object], stdout: str = "") -> Probe:
    """The `doctor --probe` payload: `fields`, and the id of a session with no claim under the
    host's name for it (`session`). A healthy hook allows it with exit 0 and `stdout`."""
    from agentcfg.hosts.base import PROBE_SESSION, Answer, Probe

    return Probe({session: PROBE_SESSION, **fields}, Answer(0, stdout=stdout))


def stop_probe(cwd: str, **fields: object) -> Probe:
    """The probe of a host whose stop payload names its session, transcript and folder as
    Claude Code's does, plus `fields`."""
    shape = {"transcript_path": "", "cwd": cwd, "hook_event_name": STOP, "stop_hook_active": False}
    return probe_of("session_id", {**shape, **fields})


def checks(path: Path, root: Path, home: Path, env: Mapping[str, str]) -> list[Finding]:
    return []  # nothing the host needs beyond the hook in its file


def trust(*_: object) -> None:
    """No trust of the host's own for agentcfg to write (whatever `Wiring.trust` is given)."""


def block_cap(root: Path, home: Path, env: Mapping[str, str]) -> tuple[int, str] | None:
    return None  # the host continues as long as the hook blocks


def plugin(root: Path, home: Path, env: Mapping[str, str]) -> Plugin | None:
    return None  # no plugin of ours for this host: `hooks install` is the only route


def usage_since(path: str, start: int | None, settle: float) -> Spent:
    from agentcfg.transcript import NOT_READ

    return NOT_READ  # no transcript of the host shows its token usage to us


def headless(
    prompt: str, session: str | None, resume: bool, extra: Sequence[str]
) -> list[str] | None:
    return None  # `agentcfg run` does not start this host headless yet


def runner(binary: str, root: Path, env: Mapping[str, str]) -> Runner | None:
    return None  # one process per start, from `headless`, is all the host needs


def print_headless(
    prompt: str, session: str | None, resume: bool, extra: Sequence[str]
) -> list[str]:
    """`-p <prompt>`, with `--session-id <id>` naming a new session or `--resume <id>` carrying
    one on: Claude Code's flags, which Gemini CLI and Copilot CLI share."""
    named = [] if session is None else ["--resume" if resume else "--session-id", session]
    return ["-p", prompt, *named, *extra]


def limit_reset(output: str, now: float) -> float | None:
    return None  # no usage-limit answer of this host is known to us


def store_reach(
    root: Path, home: Path, env: Mapping[str, str], store: Path, extra: Sequence[str]
) -> Reach:
    from agentcfg.hosts.base import OPEN

    return OPEN  # no sandbox of this host that keeps the agent out is known to us


ALLOW = "allow the agent's shell commands in the host's own settings"
ALLOW_ARGS: tuple[str, ...] = ()


def asks(root: Path, home: Path, env: Mapping[str, str], extra: Sequence[str]) -> list[str]:
    return []  # nothing known to us keeps this host's headless start from running commands


YOLO_ARGS = ("--approval-mode", "yolo")
YOLO = f"pass `-- {' '.join(YOLO_ARGS)}` to `agentcfg run`"


def yolo_asks(title: str) -> Callable[[Path, Path, Mapping[str, str], Sequence[str]], list[str]]:
    """`asks` for a host (Gemini CLI, Qwen Code) whose headless shell tool needs an approval
    nobody is there to give unless the person's arguments set `--approval-mode yolo` (or
    `--yolo`)."""

    def asks(root: Path, home: Path, env: Mapping[str, str], extra: Sequence[str]) -> list[str]:
        if "--yolo" in extra or "-y" in extra or given(extra, "--approval-mode") == "yolo":
            return []
        return [f"{title} headless asks approval for the agent's shell commands: {YOLO}"]

    return asks


def hear(line: bytes) -> list[Any]:
    return []  # nothing this host prints is read as it comes


def refusals(stdout: str, stderr: str) -> Refused:
    from agentcfg.hosts.base import NOTHING_REFUSED

    return NOTHING_REFUSED  # nothing this host prints tells us of refused tool calls


def given(extra: Sequence[str], *flags: str) -> str | None:
    """The value the person's arguments give one of `flags` (`--flag value` or `--flag=value`),
    the last one winning; "" for a flag given with no value after it; None when none is given."""
    found = None
    for index, word in enumerate(extra):
        name, equals, value = word.partition("=")
        if name in flags:
            following = extra[index + 1] if index + 1 < len(extra) else ""
            found = value if equals else following
    return found
