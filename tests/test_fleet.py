"""A fleet member's step lease: the first step open to the fleet, one at a time, never two
members on one step."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcfg.core.roadmap import parse_roadmap
from agentcfg.errors import LeaseError, StepError
from agentcfg.fleet import lease_step
from agentcfg.leases import Store
from tests.test_leases import make_repo

NOW = 1_800_000_000.0
ROADMAP = parse_roadmap(
    "## Phase 1\n"
    "- [x] **1.1** done already\n"
    "- [ ] **1.2** first open\n"
    "- [ ] **1.3** blocked <!-- blocked-by: design -->\n"
    "- [ ] **1.4** second open\n"
    "- [/] **1.5** started\n"
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(make_repo(tmp_path / "repo"))


def take(store: Store, holder: str, wanted: str = "auto", now: float = NOW) -> str:
    return lease_step(store, ROADMAP, "demo", holder, wanted, host="claude", now=now, ttl=60).step


def test_members_get_the_steps_open_to_the_fleet_in_order_a_started_one_first(
    store: Store,
) -> None:
    assert [take(store, f"s-{n}") for n in range(3)] == ["1.5", "1.2", "1.4"]
    with pytest.raises(LeaseError, match="no open step that another member does not hold"):
        take(store, "s-3")


def test_a_member_holds_one_step_at_a_time(store: Store) -> None:
    assert take(store, "s-a") == "1.5"
    assert take(store, "s-a", now=NOW + 30) == "1.5"  # renewed, not a second step
    assert take(store, "s-b", now=NOW + 80) == "1.2"  # s-a's lease still runs to NOW + 90


def test_an_expired_lease_goes_to_the_next_member(store: Store) -> None:
    assert take(store, "s-a") == "1.5"
    assert take(store, "s-b", now=NOW + 61) == "1.5"


def test_a_named_step_is_leased_unless_another_member_holds_it(store: Store) -> None:
    assert take(store, "s-a", "1.4") == "1.4"
    with pytest.raises(LeaseError, match=r"step 1\.4 is leased by s-a \(claude on .*\) until "):
        take(store, "s-b", "1.4")
    with pytest.raises(StepError, match=r"step 1\.1 is not open to lease \(done\)"):
        take(store, "s-b", "1.1")
    with pytest.raises(StepError, match=r"step 1\.3 is not open to lease \(blocked\)"):
        take(store, "s-b", "1.3")
