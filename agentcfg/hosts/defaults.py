"""What most hosts do alike, written once. A host module binds what it shares by assignment
(`session_of = defaults.session_of`) and spells out only what makes that host different.

Like the host modules it serves, this one is imported before the stop hook knows it has work
to do: it loads nothing at import time, and each function imports what it needs.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from agentcfg.hosts.base import Answer, Finding, Plugin, Probe, Reach, Refused, TrustEdit
    from agentcfg.run.runners import Runner
    from agentcfg.transcript import Spent

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
    from agentcfg.hosts.base import Answer, json_line

    return Answer(0, stdout=json_line({"decision": "block", "reason": text}))


def allow(note: str) -> Answer:
    """Exit 0; a note goes to the person as a `systemMessage` on stdout."""
    from agentcfg.hosts.base import Answer, json_line

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
    from agentcfg.hosts.base import HOOK_TIMEOUT, install_hook

    entry = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT}
    return install_hook(document, STOP, entry, group={})


def uninstall(document: dict[str, Any]) -> dict[str, Any]:
    from agentcfg.hosts.base import uninstall_hook

    return uninstall_hook(document, STOP)


def registered(document: Mapping[str, Any]) -> list[str]:
    from agentcfg.hosts.base import registered_commands

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


def trust(
    document: Mapping[str, Any],
    path: Path,
    root: Path,
    home: Path,
    env: Mapping[str, str],
    grant: bool,
) -> TrustEdit | None:
    return None  # no trust of the host's own for agentcfg to write


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


def asks(root: Path, home: Path, env: Mapping[str, str], extra: Sequence[str]) -> list[str]:
    return []  # nothing known to us keeps this host's headless start from running commands


YOLO = "pass `-- --approval-mode yolo` to `agentcfg run`"


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
