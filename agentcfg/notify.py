"""Telling the person about every ending: config `notify.command` run, bounded, off the hook.

The hook only spawns a detached courier and goes on. The courier is this module's own code,
started by absolute interpreter in isolated mode, so that no file of the workspace can stand
in for it; it runs the command only when a person trusted it (`roadmap trust`), within
NOTIFY_TIMEOUT, and records a refusal or a failure as `notify-error`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from agentcfg import state
from agentcfg.core import events
from agentcfg.core.times import wall_clock
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from collections.abc import Mapping, Sequence
    from typing import Any

NOTIFY_TIMEOUT = 10.0
# the endings told in words of their own; any other halt is told by its name
ENDINGS = {
    name: events.WORDS[name]
    for name in (
        events.COMPLETE,
        events.BLOCKED,
        events.PAUSED,
        events.STOPPED,
        events.HANDBACK_QUESTION,
        events.HALT_UNPROVEN,
    )
}


# The folder our package is in, put first on the courier's path: isolated mode (-I) leaves
# out the working folder and the environment's PYTHON* variables, so only our code loads.
OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COURIER = "import sys; sys.path.insert(0, sys.argv[1]); from agentcfg.notify import courier; "
COURIER += "sys.exit(courier(sys.argv[2:]))"
UNTRUSTED = (
    "notify.command of agentcfg.yaml is not trusted (new or changed): a person reviews it with "
    "`agentcfg roadmap trust <slug>`"
)


def is_ending(event: str) -> bool:
    return event in ENDINGS or event.startswith("halt-")


def message(record: Mapping[str, Any]) -> str:
    """One line for the person about an ending ledger event."""
    event, slug = str(record.get("event")), record.get("slug") or "?"
    what = ENDINGS.get(event) or f"halted: {event.removeprefix('halt-')}"
    if event == events.STOPPED and record.get("by"):
        what += f" by {record['by']}"
    iterations, proven, contract = (record.get(k) for k in ("iterations", "proven", "contract"))
    facts = [f"{iterations} iterations"] if type(iterations) is int else []
    if type(proven) is int and type(contract) is int:
        facts.append(f"{proven}/{contract} contracted steps proven")
    done = f" ({', '.join(facts)})" if facts else ""
    changes = record.get("changes")
    if event in (events.HALT_CONTRACT_CHANGED, events.HALT_CHECK_CHANGED) and isinstance(
        changes, list
    ):
        named = "; ".join(str(c) for c in changes)
        done += f": {named}; accept with `agentcfg roadmap trust {slug}`, or undo it"
    if event == events.HALT_STATE_TAMPERED and isinstance(record.get("record"), str):
        done += f": {record['record']} failed its seal"
    return f"agentcfg: roadmap `{slug}`: {what}{done}"


def expand(template: Sequence[str], record: Mapping[str, Any]) -> list[str]:
    """The command's words with {event}, {slug} and {message} filled in; other braces stay."""
    values = (
        ("{event}", str(record.get("event"))),
        ("{slug}", str(record.get("slug") or "")),
        ("{message}", message(record)),  # last: a message is never expanded again
    )
    words = []
    for word in template:
        for placeholder, value in values:
            word = word.replace(placeholder, value)
        words.append(word)
    return words


def on_event(template: Sequence[str], record: Mapping[str, Any], ws: Workspace) -> None:
    """Start the courier for an ending; never raises, never waits (the hook is on the clock)."""
    if not is_ending(str(record.get("event"))):
        return
    try:
        import subprocess

        spec = json.dumps(
            {"argv": expand(template, record), "command": list(template), "record": dict(record)}
        )
        subprocess.Popen(
            [os.path.abspath(sys.executable), "-I", "-c", COURIER, OURS, str(ws.root), spec],
            cwd=ws.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # outlives the hook, out of the host's process group
        )
    except Exception as exc:  # fail open: the stop decision is already made
        record_error(ws.state, record, f"cannot start: {type(exc).__name__}: {exc}")


def deliver(argv: Sequence[str], timeout: float = NOTIFY_TIMEOUT) -> str | None:
    """Run the command; None when it exited 0 in time, else what went wrong."""
    import subprocess

    try:
        done = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"`{argv[0]}` ran longer than {timeout:g}s and was killed"
    except OSError as exc:
        return f"`{argv[0]}` cannot run: {exc.strerror or exc}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"`{argv[0]}` exited {done.returncode}" + (f": {said[-1][:200]}" if said else "")


def record_error(folder: Path, record: Mapping[str, Any], error: str) -> None:
    state.append_ledger(
        folder,
        state.event(
            events.NOTIFY_ERROR,
            wall_clock(),
            record.get("run"),
            record.get("slug"),
            host=record.get("host"),
            ending=record.get("event"),
            error=error,
        ),
    )


def courier(argv: list[str]) -> int:
    """The detached courier: [workspace root, spec]. Runs the command only if trusted."""
    from agentcfg.contract import trust
    from agentcfg.errors import AgentcfgError

    ws, spec = Workspace(Path(argv[0])), json.loads(argv[1])
    try:
        error = None if trust.notify_trusted(ws, spec["command"], os.environ) else UNTRUSTED
    except AgentcfgError as exc:  # the store is not a file of its own: nothing runs
        error = str(exc)
    if error is None:
        error = deliver(spec["argv"])
    if error is not None:
        record_error(ws.state, spec["record"], error)
    return 0
