"""The values hosts trade in: the records a host module makes and reads, and their constants.

Every function hosts share, and the members most hosts keep as they are, live in
`hosts/defaults.py`; the roles a host module plays are `hosts/protocols.py`'s Protocols. This
module is loaded by the stop hook: it imports nothing but the records' base.
"""

from __future__ import annotations

from agentcfg.core.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

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


# the program of our plugins' hook lines, as their hook files write it
PLUGIN_PROGRAMS = ('"${CLAUDE_PLUGIN_ROOT}/bin/agentcfg"', '"${extensionPath}/plugin/bin/agentcfg"')

# how our own texts to the agent begin: a prompt that starts so is ours sent back, not the person's
OWN_TEXTS = ("run-continuation:", "turn-end-gate:")

SESSION_START = "SessionStart"  # Claude Code's and Qwen Code's event, source `compact` after one
