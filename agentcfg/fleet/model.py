"""A fleet's pure decisions, from values only: which steps a member may lease next."""

from __future__ import annotations

from agentcfg.core.roadmap import readiness

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentcfg.core.roadmap import Roadmap, Step


def candidates(roadmap: Roadmap, taken: set[str] | frozenset[str]) -> list[Step]:
    """The ready steps (core/order.py) no one else holds, in roadmap order (a started one
    first): a step waiting for another, by the roadmap's order or its `needs:`, is no one's."""
    steps = [step for step in readiness(roadmap).ready if step.id not in taken]
    return sorted(steps, key=lambda step: not step.started)
