"""The hook's own steps around its chain of concerns, and what they hand on.

The context a fire reads (stop/context.py) only reads. What a fire changes besides what its
concerns decide happens here, as named steps in a fixed order: a pending claim this session
shows is adopted, then a fleet member's lease is renewed once due. Each step returns what it
found as a `Handed` record, and so does each concern of the chain: the concerns after it read
what the ones before found from that one record, never from each other's files.

A step that fails is recorded in the ledger and the fire goes on without it (a fire never
fails for a step). Adding a step is a function here and a line in BEFORE.
"""

from __future__ import annotations

from agentcfg import claims, controls
from agentcfg.core import events
from agentcfg.errors import AgentcfgError
from agentcfg.fleet import membership
from agentcfg.stop.dispatch import ConcernTimeout
from agentcfg.stop.handed import NOTHING, Handed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentcfg.stop.context import HookContext

    Step = Callable[[HookContext, Handed], Handed]


def adopt_pending(ctx: HookContext, handed: Handed) -> Handed:
    """Bind the latest pending claim whose token this session's transcript shows: the session
    ran `agentcfg claim` without knowing its own id. A claim a peer holds, or a roadmap a person
    stopped, does not bind, and the reason is handed on for run-continuation to tell."""
    from agentcfg.stop.preflight import any_pending
    from agentcfg.transcript import read_tail

    if not ctx.event.session_id or not any_pending(str(ctx.ws.root)):
        return handed
    shown = read_tail(ctx.event.transcript_path)
    try:
        made = claims.adopt(ctx.ws, ctx.event.session_id, shown, ctx.now, controls.claim)
    except AgentcfgError as exc:  # a peer claimed the roadmap, or a person stopped it
        return handed._replace(lost=str(exc))
    return handed if made is None else handed._replace(adopted=made.slug)


def renew_lease(ctx: HookContext, handed: Handed) -> Handed:
    """Renew a fleet member's step lease once half its time is gone (git is asked only then),
    on a fire that works the claimed autonomous roadmap. A lease that passed to another member
    is handed on; one on no step of the roadmap is recorded as ignored."""
    if not _works_the_run(ctx):
        return handed
    found = ctx.recorded_member
    if found is None:
        return handed
    if ctx.member is None:  # a lease on no step of this roadmap never narrows its open work
        ctx.log(events.MEMBERSHIP_IGNORED, step=found.step, member_slug=found.slug)
        return handed
    if ctx.now < found.renewal_due:
        return handed
    try:
        renewed = membership.renew(ctx.ws, found, ctx.now)
    except AgentcfgError as exc:  # git could not be asked: the lease runs as it was
        ctx.log(events.ERROR, reason=f"lease renewal: {exc}")
        return handed
    return handed if renewed is not None else handed._replace(lease_lost=found.step)


def _works_the_run(ctx: HookContext) -> bool:
    """The fire is one run-continuation judges: a live claim, not stopped, on an autonomous
    roadmap, in a session the hook is on for."""
    event, config = ctx.event, ctx.config
    return not (
        config.no_run_continuation
        or config.replay
        or config.mode == "off"
        or event.is_subagent
        or event.interrupted
        or ctx.claim is None
        or ctx.stop is not None
        or not ctx.autonomous
    )


BEFORE: tuple[Step, ...] = (adopt_pending, renew_lease)  # before the chain, in this order


def run_steps(ctx: HookContext, steps: Sequence[Step], handed: Handed = NOTHING) -> Handed:
    """Run `steps` in order, each handed what the ones before found; a step that fails is
    recorded and skipped (one out of the fire's time ends them all)."""
    for step in steps:
        try:
            handed = step(ctx, handed)
        except ConcernTimeout:
            raise
        except Exception as exc:
            name = getattr(step, "__name__", "step")
            ctx.log(events.ERROR, reason=f"hook step {name}: {type(exc).__name__}: {exc}"[:500])
    return handed
