"""Claims: which session works which roadmap, with its own budget, and where its run lives."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agentcfg import contract, seal, state
from agentcfg.core.ladder import TAMPERED, RunState, clamp
from agentcfg.core.records import Record
from agentcfg.core.times import format_duration, iso, parse_iso
from agentcfg.errors import AgentcfgError, ClaimError, RoadmapError
from agentcfg.paths import CLAIMS, PENDING, RUNS, STATE
from agentcfg.paths import session_key as session_key
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any

    from agentcfg.core.roadmap import Roadmap

PEER_WINDOW = 4 * 3600.0
PENDING_WINDOW = 3600.0  # a pending claim no turn end has adopted within an hour is dropped
TOKEN_PREFIX = "agentcfg-claim-"
OWN_SESSION_ENV = "AGENTCFG_SESSION_ID"
SESSION_LIMIT = 256


def session_names(host_env: Sequence[str]) -> tuple[str, ...]:
    """The hosts' own variables (`host_env`, from `hosts.registry.session_env`) first: each
    names the session the agent's shell runs in, so it wins over an AGENTCFG_SESSION_ID left
    behind in the environment."""
    return (*host_env, OWN_SESSION_ENV)


def find_session(
    explicit: str | None, env: Mapping[str, str], host_env: Sequence[str]
) -> str | None:
    """--session, else the first session variable set, else None."""
    for candidate in (explicit, *(env.get(name) for name in session_names(host_env))):
        if candidate:
            return candidate
    return None


def resolve_session(explicit: str | None, env: Mapping[str, str], host_env: Sequence[str]) -> str:
    """--session, else the first session variable set; ClaimError when there is none."""
    found = find_session(explicit, env, host_env)
    if found is None:
        names = session_names(host_env)
        raise ClaimError(
            "no session id: pass --session or set one of " + ", ".join(f"${n}" for n in names)
        )
    try:
        check_session(found)
    except ClaimError as exc:  # not "no session": whoever passed it is not the person's shell
        raise AgentcfgError(str(exc)) from None
    return found


class Claim(Record):
    slug: str
    session_id: str
    claimed_at: float
    max_iterations: int | None = None
    wall_clock: float | None = None
    max_tokens: int | None = None

    @property
    def key(self) -> str:
        return session_key(self.session_id)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "slug": self.slug,
            "session_id": self.session_id,
            "claimed_at": iso(self.claimed_at),
        }
        if self.max_iterations is not None:
            data["max_iterations"] = self.max_iterations
        if self.wall_clock is not None:
            data["wall_clock"] = self.wall_clock
        if self.max_tokens is not None:
            data["max_tokens"] = self.max_tokens
        return data


def claim_from_json(data: dict[str, Any]) -> Claim | None:
    slug, session, at = (
        data.get("slug"),
        data.get("session_id"),
        parse_iso(data.get("claimed_at")),
    )
    max_iterations, wall_clock = data.get("max_iterations"), data.get("wall_clock")
    if not (isinstance(slug, str) and isinstance(session, str) and session and at is not None):
        return None
    if max_iterations is not None and not (type(max_iterations) is int and max_iterations > 0):
        return None
    if wall_clock is not None and not (isinstance(wall_clock, (int, float)) and wall_clock > 0):
        return None
    max_tokens = data.get("max_tokens")
    if max_tokens is not None and not (type(max_tokens) is int and max_tokens > 0):
        return None
    return Claim(
        slug,
        session,
        at,
        max_iterations,
        None if wall_clock is None else float(wall_clock),
        max_tokens,
    )


def claims_dir(ws: Workspace) -> Path:
    return ws.state / CLAIMS


def claim_path(ws: Workspace, key: str) -> Path:
    return claims_dir(ws) / f"{key}.json"


def run_path(ws: Workspace, key: str, slug: str) -> Path:
    return ws.state / RUNS / f"{key}-{slug}.json"


def shown_run(key: str, slug: str) -> str:
    """A run state's path as the person reads it."""
    return f"{STATE}/{RUNS}/{key}-{slug}.json"


def read_claim(ws: Workspace, key: str) -> Claim | None:
    data = state.read_json(claim_path(ws, key))
    found = claim_from_json(data) if data is not None else None
    return found if found is not None and found.key == key else None


def all_claims(ws: Workspace) -> list[Claim]:
    try:
        paths = sorted(claims_dir(ws).glob("*.json"))
    except OSError:
        return []
    found = (read_claim(ws, p.stem) for p in paths)
    return sorted((c for c in found if c is not None), key=lambda c: (c.slug, c.claimed_at))


def is_stale(ws: Workspace, claim: Claim) -> bool:
    """The claimed roadmap is gone, or its slug now names another file."""
    try:
        return ws.canonical(claim.slug) != claim.slug
    except RoadmapError:
        return True


def check_session(session_id: str) -> None:
    """ClaimError for a session id no state file can hold: refused before anything is written."""
    from agentcfg.core.visible import visible

    if len(session_id) > SESSION_LIMIT or not session_id.isprintable():
        raise ClaimError(
            f"bad session id {visible(session_id[:64])!r}: at most {SESSION_LIMIT} printable "
            "characters"
        )


class ClaimResult(Record):
    claim: Claim
    replaced: Claim | None  # this session's earlier claim
    displaced: tuple[Claim, ...]  # peers' claims taken over with --force
    cut: tuple[str, ...] = ()  # budgets cut to their limits, said plainly


def claim(
    ws: Workspace,
    session_id: str,
    slug: str,
    *,
    now: float,
    force: bool = False,
    max_iterations: int | None = None,
    wall_clock: float | None = None,
    token: str | None = None,
    max_tokens: int | None = None,
) -> ClaimResult:
    """Bind a session to a roadmap and start a fresh run; refuse a peer's live claim.

    A claim that fails on the way changes nothing: peers lose theirs only once it is made.
    """
    check_session(session_id)
    slug = ws.canonical(slug)  # the roadmap must exist; an alias claims the file it names
    max_iterations, wall_clock, cut = clamp_budget(max_iterations, wall_clock)
    new = Claim(slug, session_id, now, max_iterations, wall_clock, max_tokens)
    roadmap = _readable(ws, slug)  # parsed before the lock: the lock is held briefly
    with state.locked(claims_dir(ws) / ".lock"):
        peers = _live_peers(ws, slug, session_id, now, force)
        contract.refuse_tampered(ws, slug)  # before anything is written
        replaced = read_claim(ws, new.key)
        run = run_path(ws, new.key, slug)
        with state.locked(run.with_suffix(".lock")):
            write_run(run, RunState.fresh(now))
            if roadmap is not None:  # without one, the run halts as gone or unreadable
                contract.start(ws, new.key, slug, roadmap, now)
        state.write_json(claim_path(ws, new.key), new.to_json())
        for peer in peers:
            _drop(ws, peer)
        if replaced is not None and replaced.slug != slug:
            state.remove(run_path(ws, new.key, replaced.slug))
    claimed = state.event(
        "claimed",
        now,
        new.key,
        slug,
        iterations=0,
        max_iterations=max_iterations,
        wall_clock=wall_clock,
        max_tokens=max_tokens,
        **({"pending": pending_name(token)[:-5]} if token else {}),
    )
    state.append_ledger(ws.state, claimed)
    return ClaimResult(new, replaced, tuple(peers), cut)


def _readable(ws: Workspace, slug: str) -> Roadmap | None:
    from agentcfg import loading

    try:
        return loading.load(ws, slug)
    except RoadmapError:
        return None


def clamp_budget(
    max_iterations: int | None, wall_clock: float | None
) -> tuple[int | None, float | None, tuple[str, ...]]:
    """A claim's budget cut to the limits, with a line for each value that was cut."""
    cut: list[str] = []
    if max_iterations is not None:
        limited, note = clamp("max_iterations", max_iterations)
        max_iterations, cut = int(limited), [f"--max-iterations: {note}"] if note else []
    if wall_clock is not None:
        wall_clock, note = clamp("wall_clock", wall_clock)
        cut += [f"--wall-clock: {note}"] if note else []
    return max_iterations, wall_clock, tuple(cut)


def _live_peers(
    ws: Workspace, slug: str, session_id: str | None, now: float, force: bool
) -> list[Claim]:
    """Other sessions' live claims on `slug`; ClaimError when there are some and no `force`."""
    peers = [
        c
        for c in all_claims(ws)
        if c.slug == slug and c.session_id != session_id and now - c.claimed_at < PEER_WINDOW
    ]
    if peers and not force:
        age = format_duration(now - peers[0].claimed_at)
        raise ClaimError(
            f"roadmap `{slug}` is claimed by session {peers[0].session_id} ({age} ago); "
            "pass --force to take it over"
        )
    return peers


def release(ws: Workspace, session_id: str, *, now: float, inside: bool = False) -> Claim | None:
    """Remove this session's claim and its run state; the claim that was removed, if any.

    `inside`: the command ran in the claimed session's own shell, so the agent ended its run.
    """
    check_session(session_id)
    key = session_key(session_id)
    with state.locked(claims_dir(ws) / ".lock"):
        found = read_claim(ws, key)
        if found is not None:
            _drop(ws, found)
        else:
            state.remove(claim_path(ws, key))
    if found is not None:
        released = state.event("released", now, key, found.slug, inside_session=inside)
        state.append_ledger(ws.state, released)
    return found


def _drop(ws: Workspace, claim: Claim) -> None:
    state.remove(claim_path(ws, claim.key))
    state.remove(run_path(ws, claim.key, claim.slug))


class Pending(Record):
    """A claim made where no session id is visible: the turn end that shows its token adopts it.

    The token lives only in the claim command's output (and so in the claiming session's
    transcript); state/ keeps its digest as the file name, so nothing there can be copied
    into another session's transcript to take the claim.
    """

    token: str  # "" when read back from state/
    slug: str
    claimed_at: float
    force: bool = False
    max_iterations: int | None = None
    wall_clock: float | None = None
    max_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "claimed_at": iso(self.claimed_at),
            "force": self.force,
            "max_iterations": self.max_iterations,
            "wall_clock": self.wall_clock,
            "max_tokens": self.max_tokens,
        }


PENDING_LIMIT = 1000  # pending files read by `stop --all`; tokens a turn end looks up
_TOKEN = re.escape(TOKEN_PREFIX.encode()) + rb"[0-9a-f]{16}"  # compiled when first used


def pending_dir(ws: Workspace) -> Path:
    return ws.state / PENDING


def pending_name(token: str) -> str:
    """The file a pending claim waits in: a digest of its token, never the token."""
    return session_key(token) + ".json"


def claim_pending(
    ws: Workspace,
    slug: str,
    *,
    now: float,
    force: bool = False,
    max_iterations: int | None = None,
    wall_clock: float | None = None,
    max_tokens: int | None = None,
) -> Pending:
    """Record a claim for the session whose next turn end shows the printed token."""
    import secrets  # loads hashlib, which the stop hook's lean path does without

    slug = ws.canonical(slug)  # the roadmap must exist; an alias claims the file it names
    _live_peers(ws, slug, None, now, force)
    made = Pending(
        TOKEN_PREFIX + secrets.token_hex(8),
        slug,
        now,
        force,
        max_iterations,
        wall_clock,
        max_tokens,
    )
    clean_pending(ws, now)
    state.write_json(pending_dir(ws) / pending_name(made.token), made.to_json())
    return made


def clean_pending(ws: Workspace, now: float) -> int:
    """Remove what lapsed in state/pending/: files older than the pending window, by their
    time on disk alone (nothing is read), but the lock and temp files (dot files), which
    others may hold. How many were removed."""
    removed = 0
    try:
        entries = os.scandir(pending_dir(ws))
    except OSError:
        return 0
    with entries:
        for entry in entries:
            try:
                lapsed = now - entry.stat(follow_symlinks=False).st_mtime >= PENDING_WINDOW
                if (
                    lapsed
                    and not entry.name.startswith(".")
                    and not entry.is_dir(follow_symlinks=False)
                ):
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue
    return removed


def _pending_from_json(data: dict[str, Any]) -> Pending | None:
    slug, at = data.get("slug"), parse_iso(data.get("claimed_at"))
    max_iterations, wall_clock = data.get("max_iterations"), data.get("wall_clock")
    if not isinstance(slug, str) or at is None:
        return None
    if max_iterations is not None and type(max_iterations) is not int:
        return None
    if wall_clock is not None and not isinstance(wall_clock, (int, float)):
        return None
    max_tokens = data.get("max_tokens")
    if max_tokens is not None and type(max_tokens) is not int:
        return None
    return Pending("", slug, at, data.get("force") is True, max_iterations, wall_clock, max_tokens)


def _read_pending(path: Path, now: float) -> Pending | None:
    """A live pending claim; an expired one is removed, an odd one left for the cleaner."""
    data = state.read_json(path)
    found = _pending_from_json(data) if data is not None else None
    if found is not None and not 0 <= now - found.claimed_at < PENDING_WINDOW:
        state.remove(path)
        return None
    return found


def all_pending(ws: Workspace, now: float) -> list[Pending]:
    """The live pending claims (at most PENDING_LIMIT of them), their tokens unknown."""
    try:
        names = sorted(n for n in os.listdir(pending_dir(ws)) if n.endswith(".json"))
    except OSError:
        return []
    found = (_read_pending(pending_dir(ws) / n, now) for n in names[:PENDING_LIMIT])
    return [p for p in found if p is not None]


def shown_tokens(text: bytes) -> list[str]:
    """The claim tokens a transcript shows, latest first, at most PENDING_LIMIT of them."""
    seen: dict[str, None] = {}
    for match in reversed(re.findall(_TOKEN, text)):
        seen.setdefault(match.decode(), None)
        if len(seen) >= PENDING_LIMIT:
            break
    return list(seen)


def adopt(
    ws: Workspace,
    session_id: str,
    shown: bytes,
    now: float,
    bind: Callable[..., ClaimResult] | None = None,
) -> Claim | None:
    """Bind the latest pending claim whose token the transcript text `shown` holds to this
    session; None if none.

    Only the session that ran the claim command has its token in its own transcript, so no
    other session can take the claim; each token is adopted once, and a token is looked up
    by its digest, so the cost is the transcript's, whatever state/pending/ holds. Expired
    ones are dropped. `bind` makes the claim (`claims.claim` by default; the hook passes the
    one that respects a person's stop); its ClaimError reaches the caller.
    """
    folder = pending_dir(ws)
    tokens = shown_tokens(shown)
    if not tokens:
        return None
    mine: list[Pending] = []
    with state.locked(folder / ".lock"):
        for token in tokens:
            path = folder / pending_name(token)
            found = _read_pending(path, now)
            if found is not None:
                state.remove(path)
                mine.append(found._replace(token=token))
    if not mine:
        return None
    latest = max(mine, key=lambda p: p.claimed_at)
    made = (bind or claim)(
        ws,
        session_id,
        latest.slug,
        now=now,
        force=latest.force,
        max_iterations=latest.max_iterations,
        wall_clock=latest.wall_clock,
        max_tokens=latest.max_tokens,
        token=latest.token,
    )
    return made.claim


def read_run(ws: Workspace, claim: Claim) -> RunState | None:
    """The claim's run state; None when there is none or it cannot be read. A record whose
    seal fails reads as a run halted for that (`halt-state-tampered`): what it says of the
    run's ending is never believed."""
    found, problem = load_run(run_path(ws, claim.key, claim.slug))
    if found is not None and problem == contract.TAMPERED:
        return found._replace(halted=TAMPERED, ended=None, paused=False)
    return found if not problem else None


def load_run(path: Path) -> tuple[RunState | None, str]:
    """The run state at `path` and "", or why it is not to be trusted: None and "missing" or
    "unreadable"; or the state it says, with "tampered" when its seal is missing or wrong."""
    if not (path.exists() or path.is_symlink()):
        return None, "missing"
    data = state.read_json(path)
    found = RunState.from_json(data) if data is not None else None
    if data is None or found is None:
        return None, "unreadable"
    body = {k: v for k, v in data.items() if k != seal.FIELD}
    if not seal.check(RUNS, path.stem, body, data.get(seal.FIELD)):
        return found, contract.TAMPERED
    return found, ""


def write_run(path: Path, run: RunState) -> None:
    """Write a run state, sealed as the record named by its file."""
    body = run.to_json()
    state.write_json(path, {**body, seal.FIELD: seal.sign(RUNS, path.stem, body)})


def describe(ws: Workspace, claim: Claim, now: float) -> dict[str, Any]:
    """A claim as `sessions list/show --json` give it: age, staleness, progress, run state."""
    from agentcfg import loading

    row: dict[str, Any] = {
        "session": claim.session_id,
        "slug": claim.slug,
        "claimed_at": iso(claim.claimed_at),
        "age_seconds": max(0, int(now - claim.claimed_at)),
        "stale": is_stale(ws, claim),
        "mode": None,
        "progress": None,
        "run": None,
    }
    if not row["stale"]:
        try:
            parsed = loading.load(ws, claim.slug)
            status = loading.status(claim.slug, parsed)
            row["mode"] = status["mode"]
            row["progress"] = {
                k: status[k] for k in ("open", "blocked", "done", "deferred", "cancelled")
            }
            row["next"] = status["next"]
        except RoadmapError as exc:
            row["error"] = str(exc)
    run = read_run(ws, claim)
    if run is not None:
        row["run"] = {
            "iterations": run.iterations,
            "max_iterations": claim.max_iterations,
            "wall_clock": claim.wall_clock,
            "max_tokens": claim.max_tokens,
            "tokens": run.tokens,
            "halted": run.halted,
            "ended": run.ended,
            "paused": run.paused,
            "started_at": iso(run.started_at),
        }
    return row
