"""A fleet's pure decisions, from values only: which steps a member may lease next."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentcfg.core.roadmap import Roadmap, Step


def candidates(roadmap: Roadmap, taken: set[str]) -> list[Step]:
    """Open, unblocked steps no one else holds, in roadmap order (a started one first)."""
    steps = [step for step in roadmap.steps if step.is_open and step.id not in taken]
    return sorted(steps, key=lambda step: not step.started)
