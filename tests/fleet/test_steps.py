"""A fleet member's step lease: the first step open to the fleet, one at a time, never two
members on one step."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentcfg.core.roadmap import parse_roadmap
from agentcfg.errors import LeaseError, StepError
from agentcfg.fleet.leases import Store
from agentcfg.fleet.membership import read_membership, renew
from agentcfg.fleet.steps import candidates, join, lease_step, require_lease
from agentcfg.workspace import Workspace
from tests.conftest import hook_env
from tests.fleet.test_leases import git, make_repo

NOW = 1_800_000_000.0
CLONES = 3  # of one shared remote, where sessions race to claim with --step
ROADMAP = parse_roadmap(
    "---\nexecution: {mode: autonomous, fleet: {order: free}}\n---\n## Phase 1\n"
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
    lease, _ = lease_step(store, ROADMAP, "demo", holder, wanted, host="claude", now=now, ttl=60)
    return lease.step


def test_members_get_the_steps_open_to_the_fleet_in_order_a_started_one_first(
    store: Store,
) -> None:
    assert [take(store, f"s-{n}") for n in range(3)] == ["1.5", "1.2", "1.4"]
    with pytest.raises(LeaseError, match="no open step that another member does not hold"):
        take(store, "s-3")


def test_in_the_roadmaps_order_members_get_only_the_ready_steps(store: Store) -> None:
    ordered = parse_roadmap(
        "## Phase 1\n- [x] **1.1** done\n- [ ] **1.2** a\n- [ ] **1.3** [P] beside a\n"
        "- [ ] **1.4** after both\n- [ ] **1.5** any time <!-- needs: 1.1 -->\n"
    )

    def taken(holder: str) -> str:
        lease, _ = lease_step(store, ordered, "demo", holder, "auto", host="claude", now=NOW)
        return lease.step

    assert [taken(f"s-{n}") for n in range(3)] == ["1.2", "1.3", "1.5"]
    told = r"ready .*: 1\.4 waits for 1\.2 \(in progress\), 1\.3 \(in progress\)$"
    with pytest.raises(LeaseError, match=told):
        taken("s-3")
    assert [step.id for step in candidates(ordered, {"1.2"})] == ["1.3", "1.5"]


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


def members(ws: Path, n: int) -> list[Workspace]:
    """`n` worktrees of the workspace's repository, each a fleet member's workspace."""
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", ".")
    git(ws, "-c", "user.email=f@example.invalid", "-c", "user.name=f", "commit", "-qm", "start")
    trees = []
    for k in range(n):
        tree = ws.parent / f"member-{k}"
        git(ws, "worktree", "add", "-q", "-b", f"agentcfg/demo/{k}", str(tree))
        trees.append(Workspace(tree))
    return trees


def test_joining_leases_a_step_remembers_it_and_records_it(ws: Path) -> None:
    one, two = members(ws, 2)
    assert join(one, "demo", "auto", host="claude", coordinate=None, now=NOW, ttl=60).step == "1.2"
    with pytest.raises(LeaseError, match=r"no step ready .*: 1\.3 waits for 1\.2 \(in progress\)"):
        join(two, "demo", "auto", host="codex", coordinate=None, now=NOW, ttl=60)
    assert join(two, "demo", "1.3", host="codex", coordinate=None, now=NOW, ttl=60).step == "1.3"
    member = read_membership(one, "demo")
    assert member is not None and (member.step, member.fence, member.expires) == (
        "1.2",
        1,
        NOW + 60,
    )
    # the second member takes the first one's step over once it has expired
    assert (
        join(two, "demo", "1.2", host="codex", coordinate=None, now=NOW + 61, ttl=60).step == "1.2"
    )
    events = [
        json.loads(x) for x in (two.state / "run-continuation.jsonl").read_text().splitlines()
    ]
    assert [(e["event"], e["step"], e["fence"]) for e in events] == [
        ("leased", "1.3", 1),
        ("lease-expired", "1.2", 1),
        ("leased", "1.2", 2),
    ]
    assert events[1]["holder"] == member.holder != events[2]["holder"]


def test_a_member_closes_only_its_own_step_while_the_lease_is_its_own(ws: Path) -> None:
    one, two = members(ws, 2)
    join(one, "demo", "1.2", host="claude", coordinate=None, now=NOW, ttl=60)
    require_lease(one, "demo", "1.2")
    require_lease(Workspace(ws), "demo", "1.3")  # outside a fleet nothing is checked
    with pytest.raises(LeaseError, match=r"this workspace leases step 1\.2 of `demo`; step 1\.3"):
        require_lease(one, "demo", "1.3")
    join(two, "demo", "1.2", host="codex", coordinate=None, now=NOW + 61, ttl=60)
    with pytest.raises(LeaseError, match=r"passed to another member .*fence 1 is no longer"):
        require_lease(one, "demo", "1.2")


def test_a_turn_end_renews_the_lease_once_half_its_time_is_gone(ws: Path) -> None:
    (one,) = members(ws, 1)
    join(one, "demo", "auto", host="claude", coordinate=None, now=NOW, ttl=60)
    member = read_membership(one, "demo")
    assert member is not None and member.renewal_due == NOW + 30
    renewed = renew(one, member, NOW + 31)
    assert renewed is not None and renewed.expires == NOW + 91
    assert read_membership(one, "demo") == renewed
    Store.open(one.root).release("demo", "1.2", None, now=NOW + 80)  # a person frees it
    assert renew(one, renewed, NOW + 80) is None


@pytest.mark.slow  # fifteen processes at once, each with its git: a scale test
def test_concurrent_fleet_claims_on_clones_leave_each_lease_to_a_member_that_knows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five sessions claim `--step auto` at once in each of three clones of a shared remote:
    one per clone wins; the refused ones give back nothing of the winner's, and every lease
    held on the remote is a winner's, named in its clone's membership."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))  # the key hook_env's claims use
    seed = make_repo(tmp_path / "seed")
    (seed / "roadmaps").mkdir()
    steps = "".join(f"- [ ] **1.{n}** step {n}\n" for n in range(1, 4 * CLONES + 1))
    (seed / "roadmaps" / "demo.md").write_text(  # independent steps, any open to any member
        "---\nexecution:\n  mode: autonomous\n  fleet: {order: free}\n---\n## Phase 1\n" + steps
    )
    (seed / ".gitignore").write_text("state/\n")
    git(seed, "add", ".")
    git(seed, "commit", "-qm", "roadmap")
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    clones = [tmp_path / f"clone-{k}" for k in range(CLONES)]
    for clone in clones:
        git(tmp_path, "clone", "-q", str(remote), str(clone))
    claim = [sys.executable, "-m", "agentcfg", "sessions", "claim", "demo", "--step", "auto"]
    procs = {
        (k, j): subprocess.Popen(
            [*claim, "--session", f"s-{k}-{j}", "--coordinate", "origin"],
            cwd=clone,
            env=hook_env(clone),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for k, clone in enumerate(clones)
        for j in range(5)
    }
    codes = {key: proc.wait(timeout=120) for key, proc in procs.items()}
    members = []
    for k, clone in enumerate(clones):
        assert sorted(codes[k, j] for j in range(5)) == [0, 1, 1, 1, 1]
        member = read_membership(Workspace(clone), "demo")
        assert member is not None
        members.append((member.holder, member.step, member.fence))
    held = [x for x in Store.open(clones[0], "origin").all("demo") if x.live(time.time())]
    assert sorted((x.holder, x.step, x.fence) for x in held) == sorted(members)
