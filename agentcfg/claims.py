"""Claims: which session works which roadmap, with its own budget, and where its run lives."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agentcfg import state
from agentcfg.contract import seal
from agentcfg.contract import store as contract
from agentcfg.core import events
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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Claim | None:
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
        return cls(
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


def run_file_shown(key: str, slug: str) -> str:
    """A run state's path as the person reads it."""
    return f"{STATE}/{RUNS}/{key}-{slug}.json"


def read_claim(ws: Workspace, key: str) -> Claim | None:
    data = state.read_json(claim_path(ws, key))
    found = Claim.from_json(data) if data is not None else None
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
    kept: bool = False  # claimed again inside the session: its run goes on as it was


def is_over(run: RunState | None) -> bool:
    """The run ended with its work done (complete, or only blocked steps left), not halted:
    a session may go on to another roadmap from inside only then."""
    return run is not None and run.ended is not None and run.halted is None


def _left_runs(ws: Workspace, key: str) -> list[tuple[str, RunState | None]]:
    """The runs this session keeps without a claim (released from inside), by roadmap."""
    folder = ws.state / RUNS
    try:
        names = sorted(n for n in os.listdir(folder) if n.startswith(f"{key}-"))[:1000]
    except OSError:
        return []
    found = []
    for name in names:
        if name.endswith(".json"):
            data = state.read_json(folder / name)
            run = RunState.from_json(data) if data is not None else None
            found.append((name[len(key) + 1 : -5], run))
    return found


def _inside(ws: Workspace, key: str, slug: str, held: Claim | None, force: bool) -> None:
    """ClaimError for what a session may not do to its own run from inside: start it afresh
    (after releasing it there), move it to another roadmap before it is over, or take a
    roadmap over from another session. Only a person does these, from their own terminal."""
    run = read_run(ws, held) if held is not None else None
    if held is not None and held.slug != slug and not is_over(run):
        raise ClaimError(
            f"this session's run on `{held.slug}` is not over ({shown_run(run)}): claiming "
            f"`{slug}` from inside the session would start a fresh run; only a person does, "
            f"from their own terminal (`agentcfg sessions release --session {held.session_id}`)"
        )
    if held is None:
        for left_slug, left in _left_runs(ws, key):
            if not is_over(left):
                raise ClaimError(
                    f"this session released its run on `{left_slug}` from inside and it is "
                    f"not over ({shown_run(left)}): only a person starts a fresh run, from their "
                    "own terminal (`agentcfg sessions release --session <id>`)"
                )
    if force:
        raise ClaimError(FORCE_INSIDE)


FORCE_INSIDE = (
    "--force takes a roadmap over from another session: a person's decision, never made "
    "from inside an agent's session; run it from your own terminal"
)


def shown_run(run: RunState | None) -> str:
    """A run in a few words: its iterations, and its halt or ending."""
    if run is None:
        return "its state is missing or unreadable"
    said = f"{run.iterations} iterations"
    if run.halted:
        said += f", halted: {run.halted}"
    elif run.ended:
        said += f", {run.ended}"
    return said


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
    inside: bool = False,
) -> ClaimResult:
    """Bind a session to a roadmap and start a fresh run; refuse a peer's live claim.

    `inside`: the claim comes from inside the session (its own shell, or a pending claim made
    there that its turn end adopts). Then a claim on the roadmap it holds keeps the run as it
    is (counts, budget, contract: `kept`), and what would reset or widen the run is refused
    (see `_inside`). A claim that fails on the way changes nothing: peers lose theirs only
    once it is made.
    """
    check_session(session_id)
    slug = ws.canonical(slug)  # the roadmap must exist; an alias claims the file it names
    max_iterations, wall_clock, cut = clamp_budget(max_iterations, wall_clock)
    new = Claim(slug, session_id, now, max_iterations, wall_clock, max_tokens)
    roadmap = _readable(ws, slug)  # parsed before the lock: the lock is held briefly
    with state.locked(claims_dir(ws) / ".lock"):
        contract.refuse_tampered(ws, slug)  # before anything is written
        replaced = read_claim(ws, new.key)
        if inside and replaced is not None and replaced.slug == slug:
            return _keep(ws, replaced, now, token, cut)
        if inside:
            _inside(ws, new.key, slug, replaced, force)
        peers = _live_peers(ws, slug, session_id, now, force, inside)
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
        events.CLAIMED,
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


def _keep(
    ws: Workspace, held: Claim, now: float, token: str | None, cut: tuple[str, ...]
) -> ClaimResult:
    """The session claimed the roadmap it holds again from inside: nothing changes."""
    run = read_run(ws, held)
    kept = state.event(
        events.CLAIM_KEPT,
        now,
        held.key,
        held.slug,
        iterations=run.iterations if run else None,
        halted=run.halted if run else None,
        **({"pending": pending_name(token)[:-5]} if token else {}),
    )
    state.append_ledger(ws.state, kept)
    return ClaimResult(held, held, (), cut, kept=True)


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
    ws: Workspace,
    slug: str,
    session_id: str | None,
    now: float,
    force: bool,
    inside: bool = False,
) -> list[Claim]:
    """Other sessions' live claims on `slug`; ClaimError when there are some and no `force`
    (from `inside` an agent's session, never a hint to force it)."""
    peers = [
        c
        for c in all_claims(ws)
        if c.slug == slug and c.session_id != session_id and now - c.claimed_at < PEER_WINDOW
    ]
    if peers and not force:
        age = format_duration(now - peers[0].claimed_at)
        hint = (
            "if that is this session, its run goes on as it was; taking it over from "
            "another is a person's decision"
            if inside
            else "pass --force to take it over"
        )
        raise ClaimError(
            f"roadmap `{slug}` is claimed by session {peers[0].session_id} ({age} ago); {hint}"
        )
    return peers


def check_peers(
    ws: Workspace,
    slug: str,
    session_id: str | None,
    now: float,
    force: bool = False,
    inside: bool = False,
) -> None:
    """ClaimError when another session's live claim on `slug` would refuse this one's
    (`session_id` None: any live claim); checked before a claim's work, changing nothing."""
    _live_peers(ws, slug, session_id, now, force, inside)


def release(ws: Workspace, session_id: str, *, now: float, inside: bool = False) -> Claim | None:
    """Remove this session's claim and its run state; the claim that was removed, if any.

    `inside`: the command ran in an agent's session, so the agent ended its run: the claim
    goes and the run's state stays, so that claiming again from inside cannot start the run
    afresh. From a person's terminal the run goes too, with any a release from inside kept.
    """
    check_session(session_id)
    key = session_key(session_id)
    with state.locked(claims_dir(ws) / ".lock"):
        found = read_claim(ws, key)
        state.remove(claim_path(ws, key))
        if not inside:
            for left_slug, _ in _left_runs(ws, key):
                state.remove(run_path(ws, key, left_slug))
    if found is not None:
        released = state.event(events.RELEASED, now, key, found.slug, inside_session=inside)
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
    inside: bool = False  # made in an agent's session: it binds as a claim from inside

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "claimed_at": iso(self.claimed_at),
            "force": self.force,
            "max_iterations": self.max_iterations,
            "wall_clock": self.wall_clock,
            "max_tokens": self.max_tokens,
            "inside": self.inside,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Pending | None:
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
        return cls(
            "",
            slug,
            at,
            data.get("force") is True,
            max_iterations,
            wall_clock,
            max_tokens,
            data.get("inside") is True,
        )


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
    inside: bool = False,
) -> Pending:
    """Record a claim for the session whose next turn end shows the printed token; `inside`:
    made in an agent's session, it binds as `claim(..., inside=True)` does."""
    import secrets  # loads hashlib, which the stop hook's lean path does without

    slug = ws.canonical(slug)  # the roadmap must exist; an alias claims the file it names
    if inside and force:
        raise ClaimError(FORCE_INSIDE)
    _live_peers(ws, slug, None, now, force, inside)
    made = Pending(
        TOKEN_PREFIX + secrets.token_hex(8),
        slug,
        now,
        force,
        max_iterations,
        wall_clock,
        max_tokens,
        inside,
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


def _read_pending(path: Path, now: float) -> Pending | None:
    """A live pending claim; an expired one is removed, an odd one left for the cleaner."""
    data = state.read_json(path)
    found = Pending.from_json(data) if data is not None else None
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
        inside=latest.inside,
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
