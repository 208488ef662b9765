"""The text a session gets back after its host compacted its context: which roadmap it holds,
where the run stands, the step to work and how it is closed. Pure."""

from __future__ import annotations

from agentcfg.core.roadmap import Counts, Step, clip


def reinjection(slug: str, counts: Counts, step: Step | None, leased: str | None = None) -> str:
    """What the agent needs to carry on after its earlier turns were summarised away.

    `leased`: the id of the step a fleet member leases; `step` is then that step (None once
    it is closed), never the roadmap's first open one, which may be another member's."""
    from agentcfg.core.texts import close_command, plural

    closed = counts.total - counts.open - counts.blocked
    blocked = f", {counts.blocked} blocked" if counts.blocked else ""
    lines = [
        f"agentcfg: this session holds the autonomous run of roadmap `{slug}` "
        f"(roadmaps/{slug}.md): {plural(counts.open, 'open step')}{blocked}, "
        f"{closed} of {counts.total} closed. Your context was compacted; this is where the run stands."
    ]
    if leased is not None:
        lines.append(
            f"This session is a member of a fleet on the roadmap: it works step {leased}, the "
            "one it leases, and no other; other members work the rest."
        )
        if step is None:
            lines.append(f"The step {leased} you lease is closed: end the turn.")
            return "\n".join(lines)
    if step is None:
        lines.append("No step is open: end the turn, and the run ends as complete.")
        return "\n".join(lines)
    lead = "Resume step" if step.started else "Next step"
    lines.append(f"{lead}: **{step.name}** {clip(step.text)}   (roadmaps/{slug}.md:{step.line})")
    if step.verify:
        lines.append(f"  verify: {step.verify}")
    lines.append(f"Close it with `{close_command(slug, step)}` once it is done, then end the turn.")
    return "\n".join(lines)
