"""The person's stop: a marker per roadmap under state/stops/ that halts its runs from outside
the model, holds until `resume`, and refuses new claims on the roadmap meanwhile.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from agentcfg import claims, state
from agentcfg.core.records import Record
from agentcfg.core.times import iso, parse_iso
from agentcfg.errors import ClaimError, RoadmapError
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any

TERMINAL = "terminal"  # who ran a control when no session id is in the environment


class Stop(Record):
    slug: str
    stopped_at: float
    by: str
    told: tuple[str, ...] = ()  # keys of the sessions whose hook has told their agent

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "stopped_at": iso(self.stopped_at),
            "by": self.by,
            "told": list(self.told),
        }


class StopResult(Record):
    stop: Stop
    already: bool  # it was stopped before this command: nothing changed
    sessions: tuple[str, ...]  # the sessions holding a live claim on the roadmap


class ResumeResult(Record):
    slug: str
    was: Stop | None  # the stop that was lifted; None when the roadmap was not stopped


def who(env: Mapping[str, str], host_env: Sequence[str]) -> str:
    """The session id of whoever runs a control, or "terminal" for a person at a shell."""
    try:
        return claims.resolve_session(None, env, host_env)
    except ClaimError:
        return TERMINAL


def canonical(ws: Workspace, slug: str) -> str:
    """The stem of the file a slug resolves to: two slugs naming one file share one stop."""
    return ws.canonical(slug)


def stop_path(ws: Workspace, slug: str) -> Path:
    return ws.state / "stops" / f"{slug}.json"


def read_stop(ws: Workspace, slug: str) -> Stop | None:
    """The stop on the roadmap a slug names; None when it is not stopped or cannot be named."""
    try:
        name = canonical(ws, slug)
    except RoadmapError:
        return None
    return _read(ws, name)


def _read(ws: Workspace, name: str) -> Stop | None:
    data = state.read_json(stop_path(ws, name))
    if data is None:
        return None
    at, by, told = parse_iso(data.get("stopped_at")), data.get("by"), data.get("told")
    if not isinstance(told, list) or not all(isinstance(k, str) for k in told):
        told = []
    # an odd marker still stops: a person asked for it, and `resume` removes it whatever it holds
    return Stop(name, at or 0.0, by if isinstance(by, str) else "?", tuple(told))


def _lock(ws: Workspace, name: str) -> Path:
    return stop_path(ws, name).with_suffix(".lock")


def stop(ws: Workspace, slugs: list[str] | None, by: str, now: float) -> list[StopResult]:
    """Stop the runs on these roadmaps (None: every roadmap a live claim holds)."""
    live = [c for c in claims.all_claims(ws) if not claims.is_stale(ws, c)]
    names = (
        sorted({canonical(ws, c.slug) for c in live})
        if slugs is None
        else list(dict.fromkeys(canonical(ws, s) for s in slugs))  # RoadmapError: nothing done
    )
    results = []
    for name in names:
        with state.locked(_lock(ws, name)):
            found = _read(ws, name)
            already = found is not None
            if found is None:
                found = Stop(name, now, by)
                state.write_json(stop_path(ws, name), found.to_json())
                state.append_ledger(ws.state, state.event("stop-requested", now, None, name, by=by))
        sessions = tuple(c.session_id for c in live if canonical(ws, c.slug) == name)
        results.append(StopResult(found, already, sessions))
    return results


def resume(ws: Workspace, slug: str, by: str, now: float) -> ResumeResult:
    """Lift the stop on a roadmap; the runs carry on at their next fire."""
    name = canonical(ws, slug)
    with state.locked(_lock(ws, name)):
        found = _read(ws, name)
        if found is not None:
            state.remove(stop_path(ws, name))
            state.append_ledger(ws.state, state.event("resumed", now, None, name, by=by))
    return ResumeResult(name, found)


def tell(ws: Workspace, found: Stop, key: str) -> bool:
    """Record that session `key` has been told of the stop; False when it was told already."""
    with state.locked(_lock(ws, found.slug)):
        current = _read(ws, found.slug)
        if current is None or key in current.told:
            return False
        told = Stop(current.slug, current.stopped_at, current.by, (*current.told, key))
        state.write_json(stop_path(ws, found.slug), told.to_json())
    return True


def claim(ws: Workspace, session_id: str, slug: str, **options: Any) -> claims.ClaimResult:
    """`claims.claim`, refused (even with force) while a person has stopped the roadmap."""
    claims.check_session(session_id)  # before the stop lock writes anything
    with _unstopped(ws, slug):
        return claims.claim(ws, session_id, slug, **options)


def claim_pending(ws: Workspace, slug: str, **options: Any) -> claims.Pending:
    """`claims.claim_pending`, refused the same way."""
    with _unstopped(ws, slug):
        return claims.claim_pending(ws, slug, **options)


@contextlib.contextmanager
def _unstopped(ws: Workspace, slug: str) -> Iterator[None]:
    """Hold the roadmap's stop lock; ClaimError when a person has stopped it."""
    name = canonical(ws, slug)
    with state.locked(_lock(ws, name)):
        found = _read(ws, name)
        if found is not None:
            raise ClaimError(
                f"roadmap `{name}` was stopped by {found.by} at {iso(found.stopped_at)}; it "
                f"cannot be claimed until a person runs `agentcfg resume {name}`. "
                "Hand back to the person now."
            )
        yield
