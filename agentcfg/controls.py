"""The person's stop: a marker per roadmap under state/stops/ that halts its runs from outside
the model, holds until `resume`, and refuses new claims on the roadmap meanwhile.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from agentcfg import claims, state
from agentcfg.core import events
from agentcfg.core.records import Record
from agentcfg.core.times import iso, parse_iso
from agentcfg.errors import ClaimError, RoadmapError, StateError
from agentcfg.paths import STOPS, YIELDS
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any

TERMINAL = "terminal"  # who ran a control when no session id is in the environment
PERSON_LOCK_WAIT = 1.0  # seconds a person's control waits on the stop lock, then goes on without


class Stop(Record):
    slug: str
    stopped_at: float
    by: str
    told: tuple[str, ...] = ()  # keys of the sessions whose hook has told their agent
    held: tuple[str, ...] = ()  # keys of the sessions on the roadmap when it was stopped

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "stopped_at": iso(self.stopped_at),
            "by": self.by,
            "told": list(self.told),
            "held": list(self.held),
        }


class StopResult(Record):
    stop: Stop
    already: bool  # it was stopped before this command: nothing changed
    sessions: tuple[str, ...]  # the sessions holding a live claim on the roadmap


class ResumeResult(Record):
    slug: str
    was: Stop | None  # the stop that was lifted; None when the roadmap was not stopped


def who(env: Mapping[str, str], host_env: Sequence[str]) -> str:
    """The session id of whoever runs a control, or "terminal" for a person at a shell; shown
    with its control characters (a newline too) made visible, never obeyed: the control is
    never refused for it, and what is recorded stays on one line."""
    found = claims.find_session(None, env, host_env)
    return TERMINAL if found is None else _shown(found)


def _shown(text: str) -> str:
    from agentcfg.core.visible import visible  # a stop fire's only when a person stopped the run

    return visible(text[: claims.SESSION_LIMIT]).replace("\n", "\\u000a")


def canonical(ws: Workspace, slug: str) -> str:
    """The stem of the file a slug resolves to: two slugs naming one file share one stop."""
    return ws.canonical(slug)


def stop_path(ws: Workspace, slug: str) -> Path:
    return ws.state / STOPS / f"{slug}.json"


def yield_path(ws: Workspace, key: str) -> Path:
    return ws.state / YIELDS / f"{key}.json"


def ask_yield(ws: Workspace, key: str, reason: str, now: float) -> None:
    """`agentcfg run` asks the run `key` to let its next turn end through (the host then ends
    its start by itself): a usage window reached the person's reserve."""
    state.write_json(yield_path(ws, key), {"reason": reason, "asked_at": iso(now)})


def read_yield(ws: Workspace, key: str) -> str | None:
    """Why the driver asked the run to end its turn; None when it did not. Whatever stands at
    the path asks (an odd file reads as `?`): only the driver's start is ended by it."""
    path = yield_path(ws, key)
    try:
        os.lstat(path)
    except OSError:
        return None
    reason = (state.read_json(path) or {}).get("reason")
    return _shown(reason) if isinstance(reason, str) else "?"


def drop_yield(ws: Workspace, key: str) -> None:
    with contextlib.suppress(OSError):
        state.remove(yield_path(ws, key))


def read_stop(ws: Workspace, slug: str) -> Stop | None:
    """The stop on the roadmap a slug names; None when it is not stopped or cannot be named."""
    try:
        name = canonical(ws, slug)
    except RoadmapError:
        return None
    return _read(ws, name)


def _read(ws: Workspace, name: str) -> Stop | None:
    """The marker's stop. Whatever stands at its path stops (empty, odd, oversized, not a
    file): a person asked for it, and `resume` removes it whatever it holds."""
    path = stop_path(ws, name)
    try:
        os.lstat(path)
    except OSError:
        return None
    data = state.read_json(path) or {}
    at, by = parse_iso(data.get("stopped_at")), data.get("by")
    return Stop(
        name, at or 0.0, _shown(by) if isinstance(by, str) else "?",
        _keys(data.get("told")), _keys(data.get("held")),
    )  # fmt: skip


def _keys(value: object) -> tuple[str, ...]:
    """Session keys from a marker; anything but a short string left out."""
    if not isinstance(value, list):
        return ()
    return tuple(k for k in value[:1000] if isinstance(k, str) and len(k) <= 64)


def _lock(ws: Workspace, name: str) -> Path:
    return stop_path(ws, name).with_suffix(".lock")


@contextlib.contextmanager
def _persons_lock(ws: Workspace, name: str) -> Iterator[None]:
    """The roadmap's stop lock for a person's control, which nothing in the workspace may
    defeat: whatever stands in place of the stops folder or of the lock (a file, a link, a
    folder) is moved aside first, and a lock some process holds past the wait is gone
    without (the marker is written whole, by a rename, either way)."""
    for path, folder in ((ws.state / STOPS, True), (_lock(ws, name), False)):
        _move_aside(path, folder)
    with contextlib.ExitStack() as held:
        with contextlib.suppress(StateError):
            held.enter_context(state.locked(_lock(ws, name), timeout=PERSON_LOCK_WAIT))
        yield


def _move_aside(path: Path, folder: bool) -> None:
    """Rename what stands at `path` out of the way unless it is a real folder (`folder`) or a
    regular file; a link is renamed itself, never followed."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode):
        return
    with contextlib.suppress(OSError):
        os.rename(path, path.with_name(f"{path.name}.in-the-way-{os.urandom(4).hex()}"))


def stop(ws: Workspace, slugs: list[str] | None, by: str, now: float) -> list[StopResult]:
    """Stop the runs on these roadmaps (None: every roadmap a live or pending claim holds)."""
    live = [c for c in claims.all_claims(ws) if not claims.is_stale(ws, c)]
    names = (
        sorted({canonical(ws, c.slug) for c in live} | _pending_names(ws, now))
        if slugs is None
        else list(dict.fromkeys(canonical(ws, s) for s in slugs))  # RoadmapError: nothing done
    )
    results = []
    for name in names:
        on_it = tuple(c.key for c in live if canonical(ws, c.slug) == name)
        with _persons_lock(ws, name):
            found = _read(ws, name)
            already = found is not None
            if found is None:
                found = Stop(name, now, by, held=on_it)
                state.write_json(stop_path(ws, name), found.to_json())
                state.append_ledger(
                    ws.state, state.event(events.STOP_REQUESTED, now, None, name, by=by)
                )
        sessions = tuple(c.session_id for c in live if canonical(ws, c.slug) == name)
        results.append(StopResult(found, already, sessions))
    return results


def _pending_names(ws: Workspace, now: float) -> set[str]:
    """The roadmaps pending claims wait to bind: a stop holds them too."""
    names = set()
    for pending in claims.all_pending(ws, now):
        with contextlib.suppress(RoadmapError):
            names.add(canonical(ws, pending.slug))
    return names


def resume(
    ws: Workspace, slug: str, by: str, now: float, session: str | None = None
) -> ResumeResult:
    """Lift the stop on a roadmap; the runs carry on at their next fire.

    Refused from inside a stopped session (`session`, from the shell's session variable):
    the stop is the person's, and only the person lifts it.
    """
    name = canonical(ws, slug)
    if session is not None:
        held = stopped_on(ws, session)
        if held is not None:
            raise ClaimError(
                f"`agentcfg resume` is for a person: this shell is session {_shown(session)}, "
                f"which a person stopped on roadmap `{held.slug}`. Hand back to the person now."
            )
    with _persons_lock(ws, name):
        found = _read(ws, name)
        if found is not None:
            state.remove(stop_path(ws, name))
            state.append_ledger(ws.state, state.event(events.RESUMED, now, None, name, by=by))
    return ResumeResult(name, found)


def tell(ws: Workspace, found: Stop, key: str) -> bool:
    """Record that session `key` has been told of the stop; False when it was told already."""
    with state.locked(_lock(ws, found.slug)):
        current = _read(ws, found.slug)
        if current is None or key in current.told:
            return False
        told = Stop(
            current.slug, current.stopped_at, current.by, (*current.told, key), current.held
        )
        state.write_json(stop_path(ws, found.slug), told.to_json())
    return True


def claim(ws: Workspace, session_id: str, slug: str, **options: Any) -> claims.ClaimResult:
    """`claims.claim`, refused (even with force) while a person has stopped the roadmap, or
    has stopped this session on any roadmap: a copy of a roadmap does not escape a stop."""
    claims.check_session(session_id)  # before the stop lock writes anything
    held = stopped_on(ws, session_id)
    if held is not None:
        raise ClaimError(
            f"a person stopped this session on roadmap `{held.slug}` ({held.by} at "
            f"{iso(held.stopped_at)}); it cannot claim a roadmap until a person runs "
            f"`agentcfg resume {held.slug}`. Hand back to the person now."
        )
    with _unstopped(ws, slug):
        return claims.claim(ws, session_id, slug, **options)


def claim_pending(ws: Workspace, slug: str, **options: Any) -> claims.Pending:
    """`claims.claim_pending`, refused the same way."""
    with _unstopped(ws, slug):
        return claims.claim_pending(ws, slug, **options)


def stopped_on(ws: Workspace, session_id: str) -> Stop | None:
    """The stop that holds this session: on the roadmap its claim names, or one that found it
    on its roadmap when the person stopped it (a release since does not lift it)."""
    key = claims.session_key(session_id)
    held = claims.read_claim(ws, key)
    if held is not None:
        found = read_stop(ws, held.slug)
        if found is not None:
            return found
    try:
        names = sorted(os.listdir(ws.state / STOPS))[:1000]
    except OSError:
        return None
    for name in names:
        found = _read(ws, name[:-5]) if name.endswith(".json") else None
        if found is not None and (key in found.held or key in found.told):
            return found
    return None


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
