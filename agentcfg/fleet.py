"""A fleet member's step: the one it leases, chosen in roadmap order among those no one holds."""

from __future__ import annotations

from agentcfg.core.roadmap import Roadmap, Step
from agentcfg.core.times import iso
from agentcfg.errors import LeaseError, StepError
from agentcfg.leases import TTL, Lease, Store
from agentcfg.verify import find_step

AUTO = "auto"


def candidates(roadmap: Roadmap, taken: set[str]) -> list[Step]:
    """Open, unblocked steps no one else holds, in roadmap order (a started one first)."""
    steps = [step for step in roadmap.steps if step.is_open and step.id not in taken]
    return sorted(steps, key=lambda step: not step.started)


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
) -> Lease:
    """Lease `wanted` (a step's id or label) or, with `auto`, the first step open to the fleet.

    A member holds one step at a time: one it already holds live on this roadmap is renewed
    and returned. LeaseError when the step is another's, or no step is left to lease.
    """
    leases = store.all(slug)
    mine = [x for x in leases if x.holder == holder and x.live(now)]
    if mine and (wanted == AUTO or find_step(roadmap, wanted).id == mine[0].step):
        renewed = store.take(slug, mine[0].step, holder, host=host, now=now, ttl=ttl)
        if renewed is not None:
            return renewed
    if wanted != AUTO:
        step = find_step(roadmap, wanted)
        if not step.is_open:
            why = "blocked" if step.blocked else step.mark
            raise StepError(f"step {step.name} is not open to lease ({why})")
        lease = store.take(slug, step.id, holder, host=host, now=now, ttl=ttl)
        if lease is None:
            raise LeaseError(_held(store, slug, step))
        return lease
    taken = {x.step for x in leases if x.live(now) and x.holder != holder}
    for step in candidates(roadmap, taken):
        lease = store.take(slug, step.id, holder, host=host, now=now, ttl=ttl)
        if lease is not None:  # else another member won it a moment ago: try the next
            return lease
    raise LeaseError(f"roadmap `{slug}` has no open step that another member does not hold")


def _held(store: Store, slug: str, step: Step) -> str:
    _, lease = store.read(slug, step.id)
    if lease is None or not lease.holder:
        return f"step {step.name} was leased by another member a moment ago"
    return (
        f"step {step.name} is leased by {lease.holder} ({lease.host} on {lease.machine}) "
        f"until {iso(lease.expires)}"
    )
