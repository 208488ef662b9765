"""A fleet member's step: the one it leases, the first ready in the roadmap's order that no one
holds."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from agentcfg import claims, loading, state
from agentcfg.contract.verify import find_step
from agentcfg.core import events
from agentcfg.core.order import readiness, waits_line
from agentcfg.core.roadmap import Roadmap, Step, scan
from agentcfg.core.times import iso
from agentcfg.errors import AgentcfgError, LeaseError, LeaseHeld, StepError
from agentcfg.fleet.leases import TTL, Lease, Store, machine_name, name_ok, ref_of
from agentcfg.fleet.membership import Membership, forget, read_membership, remember
from agentcfg.fleet.model import candidates
from agentcfg.paths import LOCKS
from agentcfg.workspace import Workspace

AUTO = "auto"
CLAIM_WAIT = 120.0  # claims with --step in one workspace queue: each may take a lease on a remote
# set by `run --agents` for each member's host, so its agent's commands know they work in a fleet
# on that roadmap even when the workspace's membership file is gone
MEMBER_ENV = "AGENTCFG_FLEET"


def member_env(env: Mapping[str, str], slug: str) -> dict[str, str]:
    """The environment a fleet member's host runs in: `env`, naming the fleet's roadmap."""
    return {**env, MEMBER_ENV: slug}


def leave(ws: Workspace, slug: str, now: float) -> None:
    """Give this workspace's lease on the roadmap back and forget the membership."""
    member = read_membership(ws, slug)
    if member is None:
        return
    Store.open(ws.root, member.coordinate).release(slug, member.step, member.holder, now=now)
    forget(ws, slug)


def require_lease(
    ws: Workspace,
    slug: str,
    step_id: str,
    env: Mapping[str, str] | None = None,
    now: float | None = None,
) -> None:
    """The fencing check before a step is closed in a fleet member's workspace: the step must
    be the one it leases, and the lease still its own.

    Without a membership file (the agent can delete it) two things still speak: `env` naming
    this roadmap's fleet (a member's host runs in it) refuses any step, and, given `now`, a
    live lease on the step in this repository's refs keeps it for the member that holds it."""
    member = read_membership(ws, slug)
    if member is None:
        if env is not None and env.get(MEMBER_ENV) == slug:
            raise LeaseError(
                f"this session works in a fleet on `{slug}` and leases no step here "
                f"(state/fleet/{slug}.json is gone): it closes no step"
            )
        if now is not None:
            _unleased(ws, slug, step_id, now)
        return
    if step_id != member.step:
        raise LeaseError(
            f"this workspace leases step {member.step} of `{slug}`; step {step_id} is for "
            "the member that leases it"
        )
    if not Store.open(ws.root, member.coordinate).holds(
        slug, member.step, member.holder, member.fence
    ):
        raise LeaseError(
            f"the lease on step {member.step} of `{slug}` passed to another member after it "
            f"expired (fence {member.fence} is no longer current): the step is theirs now"
        )


def step_of(ws: Workspace, member: Membership, wanted: str) -> str:
    """The step id `wanted` names: with `auto`, the one the member leases."""
    if wanted == AUTO:
        return member.step
    return find_step(loading.load(ws, member.slug), wanted).id


def _unleased(ws: Workspace, slug: str, step_id: str, now: float) -> None:
    """LeaseError when another's live lease in this repository's refs holds the step."""
    try:
        _, lease = Store.open(ws.root).read(slug, step_id)
    except LeaseError:  # no git repository here, or a step no lease can name: none is held
        return
    if lease is not None and lease.live(now):
        raise LeaseError(
            f"step {step_id} of `{slug}` is leased by {lease.holder} ({lease.host} on "
            f"{lease.machine}) until {iso(lease.expires)}: it is that member's to close "
            f"(a person frees it with `agentcfg leases release {slug} {step_id}`)"
        )


def claim_step(
    ws: Workspace,
    slug: str,
    wanted: str,
    claim: Callable[[], None],
    *,
    session_id: str | None,
    force: bool,
    inside: bool = False,
    host: str,
    coordinate: str | None,
    now: float,
    ttl: float = TTL,
) -> Lease:
    """`sessions claim --step`: a step's lease for this workspace's member, then the claim
    `claim` makes, one such claim at a time in the workspace (its membership file is one).

    Another session's live claim on the roadmap refuses it before any lease is touched; a
    claim refused after the lease was taken (a person's stop) gives back the lease it took
    and leaves the workspace's membership as it found it."""
    slug = ws.canonical(slug)
    with state.locked(ws.state / LOCKS / f"claim-step-{slug}.lock", timeout=CLAIM_WAIT):
        claims.check_peers(ws, slug, session_id, now, force, inside)
        before = read_membership(ws, slug)
        lease = join(ws, slug, wanted, host=host, coordinate=coordinate, now=now, ttl=ttl)
        try:
            claim()
        except AgentcfgError:
            if before is None or before.step != lease.step:  # a lease this claim took
                store = Store.open(ws.root, coordinate)
                store.release(slug, lease.step, lease.holder, now=now)
            if before is None:
                forget(ws, slug)
            else:
                remember(ws, before)
            raise
    return lease


def join(
    ws: Workspace,
    slug: str,
    wanted: str,
    *,
    host: str,
    coordinate: str | None,
    now: float,
    ttl: float = TTL,
    exclude: frozenset[str] = frozenset(),
    ledger: Workspace | None = None,
    member: int | None = None,
) -> Lease:
    """Lease a step of the roadmap for this workspace's member (a new member when it has none
    yet), remember it in state/, and record `leased` (after `lease-expired` for a takeover) in
    the ledger of `ledger` (default: this workspace). Steps in `exclude` are not leased."""
    slug = ws.canonical(slug)
    roadmap = loading.load(ws, slug)
    store = Store.open(ws.root, coordinate)
    known = read_membership(ws, slug)
    holder = known.holder if known else f"{machine_name()}/{uuid.uuid4()}"
    lease, lapsed = lease_step(
        store, roadmap, slug, holder, wanted, host=host, now=now, ttl=ttl, exclude=exclude
    )
    remember(ws, _membership(lease, ttl, coordinate))
    counts = scan(roadmap).counts
    shared: dict[str, object] = {
        "open": counts.open, "blocked": counts.blocked, "step": lease.step, "host": host,
    }  # fmt: skip
    if member is not None:
        shared["member"] = member
    if lapsed is not None:
        record = state.event(
            events.LEASE_EXPIRED, now, None, slug, holder=lapsed.holder, fence=lapsed.fence,
            expired_at=iso(lapsed.expires), **shared,
        )  # fmt: skip
        state.append_ledger((ledger or ws).state, record)
    record = state.event(events.LEASED, now, None, slug, holder=holder, fence=lease.fence, **shared)
    state.append_ledger((ledger or ws).state, record)
    return lease


def check_leasable(roadmap: Roadmap, slug: str) -> None:
    """LeaseError, in one line, for the first step whose id no lease ref can hold: a fleet
    refuses such a roadmap before it starts rather than find it out step by step."""
    for step in roadmap.steps:
        if not name_ok(step.id):
            raise LeaseError(
                f"step {step.name} of `{slug}` cannot be leased: a fleet's step ids are ASCII "
                "letters, digits, '.', '_' and '-' (number the step, e.g. **1.1**)"
            )


def held(ws: Workspace, slug: str, coordinate: str | None, now: float) -> frozenset[str]:
    """The steps of the roadmap a member holds a live lease on."""
    store = Store.open(ws.root, coordinate)
    return frozenset(lease.step for lease in store.all(slug) if lease.live(now))


def lease_step(
    store: Store,
    roadmap: Roadmap,
    slug: str,
    holder: str,
    wanted: str,
    *,
    host: str,
    now: float,
    ttl: float = TTL,
    exclude: frozenset[str] = frozenset(),
) -> tuple[Lease, Lease | None]:
    """Lease `wanted` (a step's id or label) or, with `auto`, the first step ready for the fleet;
    with it, the expired lease of another holder it took over, if any.

    A member holds one step at a time: one it already holds live on this roadmap is renewed
    and returned. LeaseError when the step is another's, or no step is left to lease.
    """
    records = store.records(slug)  # each take swaps over the commit listed here
    leases = {x.step: x for _, x in records.values() if x is not None}
    mine = [x for x in leases.values() if x.holder == holder and x.live(now)]

    def seen(step: str) -> tuple[str | None, Lease | None]:
        return records.get(ref_of(slug, step), (None, None))

    if mine and (wanted == AUTO or find_step(roadmap, wanted).id == mine[0].step):
        renewed = store.take(
            slug, mine[0].step, holder, host=host, now=now, ttl=ttl, seen=seen(mine[0].step)
        )
        if renewed is not None:
            return renewed, None
    if wanted != AUTO:
        step = find_step(roadmap, wanted)
        if not step.is_open:
            why = "blocked" if step.blocked else step.mark
            raise StepError(f"step {step.name} is not open to lease ({why})")
        chosen = [step]
    else:
        check_leasable(roadmap, slug)
        taken = {x.step for x in leases.values() if x.live(now) and x.holder != holder}
        chosen = candidates(roadmap, taken | exclude)
    for step in chosen:
        lease = store.take(slug, step.id, holder, host=host, now=now, ttl=ttl, seen=seen(step.id))
        if lease is not None:
            before = leases.get(step.id)
            lapsed = before is not None and before.holder not in ("", holder)
            return lease, before if lapsed else None
        # else another member holds it, or won it a moment ago: try the next
    if wanted != AUTO:
        raise LeaseHeld(_held(store, slug, chosen[0]))
    waiting = readiness(roadmap).waiting
    if waiting and not chosen:
        busy = frozenset(x.step for x in leases.values() if x.live(now))
        raise LeaseHeld(
            f"roadmap `{slug}` has no step ready that another member does not hold: "
            f"{waits_line(waiting, busy)}"
        )
    raise LeaseHeld(f"roadmap `{slug}` has no open step that another member does not hold")


def _membership(lease: Lease, ttl: float, coordinate: str | None) -> Membership:
    return Membership(
        lease.slug, lease.holder, lease.step, lease.fence, ttl, lease.expires, coordinate
    )


def _held(store: Store, slug: str, step: Step) -> str:
    _, lease = store.read(slug, step.id)
    if lease is None or not lease.holder:
        return f"step {step.name} was leased by another member a moment ago"
    return (
        f"step {step.name} is leased by {lease.holder} ({lease.host} on {lease.machine}) "
        f"until {iso(lease.expires)}"
    )
