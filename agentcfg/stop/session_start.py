"""`agentcfg hook session-start`: when a host has compacted a session's context, tell the agent
again which roadmap its session holds, the step to work, its verify line and where the run
stands. Registered for the hosts' own after-compaction event (Claude Code's, Codex's and Qwen Code's
`SessionStart` with source `compact`; OpenCode's `session.compacted`, through our plugin).

A session with no claim gets nothing, as cheaply as the stop hook's preflight; anything that
goes wrong prints nothing and exits 0: the host goes on as if the hook were not there.
"""

from __future__ import annotations

import os
import sys

from agentcfg import paths
from agentcfg.hosts.registry import HOSTS, adapter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import BinaryIO

USAGE = f"usage: agentcfg hook session-start --host {'|'.join(sorted(HOSTS))}\n"
HELP = (
    USAGE + "\nRead one session-start payload on stdin; when the session holds a roadmap, print\n"
    "the claimed step, its verify line and the run's counts as context for the agent.\n"
    "It never fails a session: anything unreadable prints nothing.\n"
)
EVENT = "SessionStart"


def main(
    argv: list[str], stdin: BinaryIO | None = None, env: Mapping[str, str] | None = None
) -> int:
    from agentcfg.stop.hook import _read_payload, _write, command_line

    name = command_line(argv, HELP, USAGE, required=True)
    if isinstance(name, int):
        return name
    try:
        payload = _read_payload(sys.stdin.buffer if stdin is None else stdin)
        text = context(name, payload or {}, os.environ if env is None else env)
    except Exception:  # fail open: the session starts as if the hook were not there
        text = None
    if text:
        _write(1, answer(text))
    return 0


def context(host: str, payload: Mapping[str, object], env: Mapping[str, str]) -> str | None:
    """The text to hand back for this payload; None when its session holds no live claim on
    an autonomous roadmap with work left to tell."""
    if payload.get("source", "compact") != "compact":
        return None  # a new, resumed or cleared session: its prompt says what to do
    spec = adapter(host)
    session = spec.session_of(payload)
    root = paths.locate_root(spec.cwd_of(payload), env)
    key = paths.session_key(session) if session else ""
    if not key or not os.path.exists(os.path.join(root, paths.STATE, "claims", key + ".json")):
        return None
    from pathlib import Path

    from agentcfg import claims, loading
    from agentcfg.core.reinjection import reinjection
    from agentcfg.core.roadmap import scan
    from agentcfg.fleet import membership
    from agentcfg.workspace import Workspace

    ws = Workspace(Path(root))
    claim = claims.read_claim(ws, key)
    if claim is None or claims.is_stale(ws, claim):
        return None
    roadmap = loading.load(ws, claim.slug)
    if not roadmap.autonomous:
        return None
    scanned = scan(roadmap)
    member = membership.read_membership(ws, claim.slug)
    if member is None:
        return reinjection(claim.slug, scanned.counts, scanned.next)
    leased = next((s for s in roadmap.steps if s.id == member.step and s.is_open), None)
    return reinjection(claim.slug, scanned.counts, leased, member.step)


def answer(text: str) -> str:
    """The documented SessionStart answer of Claude Code and Qwen Code: context on stdout."""
    import json

    output = {"hookEventName": EVENT, "additionalContext": text}
    return json.dumps({"hookSpecificOutput": output}, ensure_ascii=False) + "\n"
