"""The steps open to a fleet member: open, unblocked, held by no one, a started one first."""

from __future__ import annotations

from agentcfg.core.roadmap import parse_roadmap
from agentcfg.fleet.model import candidates

ROADMAP = parse_roadmap(
    "## Phase 1\n"
    "- [x] **1.1** done\n"
    "- [ ] **1.2** open\n"
    "- [ ] **1.3** waits <!-- blocked-by: design -->\n"
    "- [/] **1.4** started\n"
    "- [ ] **1.5** open too\n"
)


def ids(taken: set[str]) -> list[str]:
    return [step.id for step in candidates(ROADMAP, taken)]


def test_open_unblocked_steps_in_roadmap_order_a_started_one_first() -> None:
    assert ids(set()) == ["1.4", "1.2", "1.5"]


def test_a_step_another_member_holds_is_no_candidate() -> None:
    assert ids({"1.4", "1.2"}) == ["1.5"]
    assert ids({"1.2", "1.4", "1.5"}) == []
