"""What every host module provides (the `Host` protocol) and the values it trades in.

A host module is imported before the stop hook knows it has work to do, so it loads nothing
at import time: it imports this module inside the functions that build values.
"""

from __future__ import annotations

from agentcfg.core.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from collections.abc import Iterable, Mapping, Sequence
    from pathlib import Path
    from typing import Any, Protocol

    from agentcfg.run.runners import Runner
    from agentcfg.transcript import Spent

    class Host(Protocol):
        """One agent host: its payload, its answers, its config file and its doctor checks."""

        # read-only members: each module declares them as constants
        @property
        def NAME(self) -> str: ...  # the --host value
        @property
        def TITLE(self) -> str: ...  # how a person calls it
        @property
        def IDLE(self) -> str: ...  # what the hook prints when it allows with nothing to say
        @property
        def SESSION_ENV(self) -> tuple[str, ...]: ...  # the session id in the agent's shell
        @property
        def AGENT_ENV(self) -> tuple[str, ...]: ...  # set in the agent's shell, id or not
        @property
        def PROGRAMS(self) -> tuple[str, ...]: ...  # its process's name, or its package's path
        @property
        def PROVEN(self) -> bool: ...  # driven by its real binary in `make e2e`

        def recognises(self, payload: Mapping[str, object]) -> bool: ...
        def session_of(self, payload: Mapping[str, object]) -> str: ...
        def cwd_of(self, payload: Mapping[str, object]) -> str: ...
        def to_event(self, payload: Mapping[str, object]) -> StopEvent: ...
        def block(self, text: str) -> Answer: ...
        def allow(self, note: str) -> Answer: ...
        def config_path(
            self, scope: str, root: Path, home: Path, env: Mapping[str, str]
        ) -> Path: ...
        def parse(self, raw: bytes) -> dict[str, Any]: ...  # the config file as a document
        def render(self, document: dict[str, Any]) -> bytes: ...
        def install(self, document: dict[str, Any], command: str) -> dict[str, Any]: ...
        def uninstall(self, document: dict[str, Any]) -> dict[str, Any]: ...
        def registered(self, document: Mapping[str, Any]) -> list[str]: ...
        def checks(
            self, path: Path, root: Path, home: Path, env: Mapping[str, str]
        ) -> list[Finding]: ...
        def probe(self, cwd: str) -> Probe: ...
        def trust(
            self,
            document: Mapping[str, Any],
            path: Path,
            root: Path,
            home: Path,
            env: Mapping[str, str],
            grant: bool,
        ) -> TrustEdit | None: ...
        def block_cap(
            self, root: Path, home: Path, env: Mapping[str, str]
        ) -> tuple[int, str] | None:
            """How many blocks one prompt takes before the host ends it, and how a person can
            go further; None when the host has no such cap."""

        def plugin(self, root: Path, home: Path, env: Mapping[str, str]) -> Plugin | None: ...
        def usage_since(self, path: str, start: int | None, settle: float) -> Spent:
            """Tokens spent since offset `start` of the transcript at `path`; a host that may
            fire before its reply is written waits at most `settle` seconds for it."""

        # unattended runs (`agentcfg run`)
        @property
        def BINARY(self) -> str: ...  # the program `agentcfg run` starts
        @property
        def NAMES_SESSION(self) -> bool: ...  # a headless start takes a session id of ours

        def headless(
            self, prompt: str, session: str | None, resume: bool, extra: Sequence[str]
        ) -> list[str] | None:
            """The arguments after BINARY for one headless run sending `prompt`: a new session
            (named `session` where NAMES_SESSION), or with `resume` the session `session`
            carried on; `extra` are the person's own arguments. None: the host cannot do that."""

        def runner(self, binary: str, root: Path, env: Mapping[str, str]) -> Runner | None:
            """What starts the host for the whole run when one process per start built from
            `headless` is not enough (a server kept for the run); None: it is enough."""

        def limit_reset(self, output: str, now: float) -> float | None:
            """When the host process ended on a usage or rate limit (`output`: its stdout and
            stderr), the epoch seconds of the reset it announced (`now` or earlier: a limit
            whose reset it did not tell); None when it did not end on a limit."""

        @property
        def ALLOW(self) -> str: ...  # how a person lets a headless run's agent run commands

        def asks(
            self, root: Path, home: Path, env: Mapping[str, str], extra: Sequence[str]
        ) -> list[str]:
            """What keeps a headless start (with the person's `extra` arguments) from running
            the agent's commands, as the host's configuration says before it starts: one line
            each (approvals nobody is there to give, an allowlist the host will ignore)."""

        def hear(self, line: bytes) -> list[Any]:
            """What one line of a headless start's stdout tells as it comes (Claude Code's
            stream-json records, `hosts/stream.py`); [] for a host that prints none."""

        def refusals(self, stdout: str, stderr: str) -> Refused:
            """What a headless start's output tells of the agent's tool calls the host refused
            for lack of permission, the last ones that failed, and what the host said of its
            own settings."""

        def store_reach(
            self, root: Path, home: Path, env: Mapping[str, str], store: Path, extra: Sequence[str]
        ) -> Reach:
            """Whether the host's sandbox, as its configuration (and `extra`, the person's own
            arguments to a headless run) sets it, keeps the agent from writing `store`, the
            person's own state (the seal key, the trust store)."""


HOOK_TIMEOUT = 30  # seconds a host waits on the hook; the stop chain itself gives up after 3


class StopEvent(Record):
    """One stop fire, whichever host sent it."""

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
    prompt: str | None = None  # the person's latest prompt, when the payload carries it
    fire_id: str = ""  # the host's identity of this fire or reply, where no transcript tells


class Reach(Record):
    """Whether the agent can write the person's own store: `sealed` when the host's sandbox
    keeps it out, and what in the host's configuration says so."""

    sealed: bool
    why: str = ""  # e.g. "sandbox_mode = workspace-write in ~/.codex/config.toml"


OPEN = Reach(False)


class Refused(Record):
    """A headless start's refused tool calls (commands, one per refusal), its last failed ones,
    and the host's own words about settings it ignored."""

    denied: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


NOTHING_REFUSED = Refused()


def inside(path: Path, roots: Iterable[Path]) -> bool:
    """`path` is one of `roots` or below one (each made absolute, links resolved)."""
    import os

    real = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(root)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


class Answer(Record):
    """What the hook process prints and exits with."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""


class Finding(Record):
    """One `doctor` finding, with its fix."""

    level: str  # "ok" | "warning" | "error"
    subject: str
    message: str
    fix: str = ""


class Probe(Record):
    """A synthetic stop payload of a host's shape (a session with no claim), and the answer a
    healthy hook gives it as that host expects: `doctor --probe` feeds one to each registration."""

    payload: dict[str, object]
    expected: Answer


PROBE_SESSION = "agentcfg-doctor-probe"


class TrustEdit(Record):
    """The host's own trust file, as it is and as trusting (or distrusting) our hook makes it."""

    path: Path
    before: str | None  # None: the file does not exist
    after: str


class Plugin(Record):
    """Our plugin (or extension) as a host has it installed: the stop hook comes with it."""

    record: Path  # the host's file that says so
    remove: str  # the host's command that takes it out


PLUGIN = "agentcfg"  # our plugin's name in every host's manifest
PLUGIN_ENV = "AGENTCFG_PLUGIN"  # set by the plugin's shim: this fire came through the plugin


class HostFileError(Exception):
    """A host's config file has a shape we cannot merge into."""


def settings_hook(host: Host, root: Path, home: Path, env: Mapping[str, str]) -> Path | None:
    """The host config file (project or user scope) whose stop hook of ours runs, if any."""
    import os

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


# the program of our plugins' hook lines, as their hook files write it
PLUGIN_PROGRAMS = ('"${CLAUDE_PLUGIN_ROOT}/bin/agentcfg"', '"${extensionPath}/plugin/bin/agentcfg"')


def is_ours(command: object) -> bool:
    """A hook command line in the very shape `hooks install` or our plugin writes: our program
    (the CLI, `python -m agentcfg` or the plugin's shim), `hook stop` (or `hook session-start`),
    at most `--host NAME`, and nothing else. A line that merely mentions us (`touch X; agentcfg
    hook stop`) is not."""
    import shlex

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


SESSION_START = "SessionStart"  # Claude Code's and Qwen Code's event, source `compact` after one


def session_start_entry(stop_command: str) -> dict[str, Any]:
    """Our `hook session-start` entry, beside the stop hook that runs `stop_command`."""
    command = stop_command.replace(" hook stop ", " hook session-start ", 1)
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}


# The two shapes hosts give their hook lists. Grouped: {"hooks": {EVENT: [{"hooks": [entry]}]}}
# (Claude Code, Codex, Gemini); flat: {"hooks": {EVENT: [entry]}} (Cursor).


def _event_list(document: dict[str, Any], event: str) -> list[Any] | None:
    """The document's list of hooks for `event`, None when it has none."""
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


def session_start_finding(host: Host, path: Path) -> list[Finding]:
    """A warning when the file runs our stop hook but not our session-start one: after a
    compaction the agent would not be told its step again."""
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
