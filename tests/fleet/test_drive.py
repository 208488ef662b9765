"""A fleet of members on one roadmap, each in its worktree: every step done once on the fleet's
branch and proven there, no step held by two members at once, a dead member's step taken over."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentcfg import loading
from agentcfg.contract import trust
from agentcfg.contract.verify import done, take_baseline
from agentcfg.core import report
from agentcfg.core.roadmap import parse_roadmap
from agentcfg.errors import AgentcfgError
from agentcfg.fleet import drive as fleet_run
from agentcfg.fleet import steps as fleet
from agentcfg.fleet.drive import Fleet, member_loop, plan, prepare_members
from agentcfg.fleet.leases import Lease, Store
from agentcfg.run import driver
from agentcfg.run.model import Progress
from agentcfg.workspace import Workspace
from tests.fleet.test_leases import git
from tests.helpers import ledger

STEPS = 6
# independent steps, any of them open to any member (the order of steps: see the end)
ROADMAP = (
    "---\nexecution:\n  mode: autonomous\n  fleet: {order: free}\n---\n## Phase 1\n"
    + "".join(
        f"- [ ] **1.{n}** Make s{n} <!-- verify: test -f s{n}.txt -->\n"
        for n in range(1, STEPS + 1)
    )
)


def fleet_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A committed roadmap of six steps, each making a file, its verify lines trusted."""
    root = tmp_path / "project"
    (root / "roadmaps").mkdir(parents=True)
    (root / "roadmaps" / "demo.md").write_text(ROADMAP)
    (root / ".gitignore").write_text("state/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "-c", "user.email=f@example.invalid", "-c", "user.name=f", "commit", "-qm", "start")
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    ws = Workspace(root)
    trust.record(ws, "demo", loading.load(ws, "demo").steps, env, 0.0)
    return root, env


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    return fleet_repo(tmp_path)


def agent(env: dict[str, str], worked: list[tuple[str, str]]) -> Any:
    """A member's host as a test plays it: make the step's file, close the step by its proof."""

    def work(member: Workspace, lease: Lease) -> tuple[str, int]:
        worked.append((str(member.root), lease.step))
        (member.root / f"s{lease.step.split('.')[1]}.txt").write_text(lease.step)
        fleet.require_lease(member, "demo", lease.step)
        assert done(member, "demo", lease.step, env).marked
        return "complete", 0

    return work


def run_fleet(
    the_fleet: Fleet, members: list[Workspace], work: Any, env: dict[str, str]
) -> list[int]:
    """Each member's exit code, the members run side by side in threads; a member that raised
    fails the test with what it raised."""
    codes: list[int] = [-1] * len(members)
    raised: list[BaseException] = []

    def one(n: int) -> None:
        try:
            codes[n - 1] = member_loop(
                the_fleet,
                members[n - 1],
                n,
                work,
                env,
                timeout=30,
                sleep=lambda s: threading.Event().wait(0.2),
            )
        except BaseException as exc:
            raised.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(1, len(members) + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    if raised:
        raise raised[0]
    return codes


def test_three_members_do_every_step_once_and_the_fleet_branch_proves_each(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    members = prepare_members(the_fleet, 3, env)
    worked: list[tuple[str, str]] = []
    assert run_fleet(the_fleet, members, agent(env, worked), env) == [0, 0, 0]
    assert sorted(step for _, step in worked) == [f"1.{n}" for n in range(1, STEPS + 1)]
    text = (root / "roadmaps" / "demo.md").read_text()
    assert text.count("- [x]") == STEPS
    for n in range(1, STEPS + 1):
        assert (root / f"s{n}.txt").exists()
    events = ledger(Workspace(root), claims=True)
    assert sorted(e["step"] for e in events if e["event"] == "integrated") == sorted(
        step for _, step in worked
    )
    held: dict[str, str] = {}  # no step leased by two members at once: each lease ends
    for e in events:  # (integrated) before the next `leased` of that step
        if e["event"] == "leased":
            assert e["step"] not in held
            held[e["step"]] = e["holder"]
        elif e["event"] == "integrated":
            held.pop(e["step"])
    assert {str(member.root) for member in members} >= {name for name, _ in worked}
    assert git(root, "status", "--porcelain") == ""


def test_a_step_closed_between_a_members_sync_and_its_lease_is_given_back(
    repo: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Member 2 looks at the roadmap before member 1 closes step 1.1 and gives its lease back,
    and leases 1.1 after: a second look at the fleet's branch finds it closed, and member 2
    gives it back and goes on with the rest, working no step twice."""
    root, env = repo
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    members = prepare_members(the_fleet, 2, env)
    first: list[tuple[str, str]] = []
    closes_one = agent(env, first)

    def one_step(member: Workspace, lease: Lease) -> tuple[str, int]:
        return closes_one(member, lease) if not first else ("halt-stall", 12)

    assert member_loop(the_fleet, members[0], 1, one_step, env, timeout=30) == 12
    assert [step for _, step in first] == ["1.1"]
    real_sync, synced = fleet_run.sync, []

    def stale_first(plan_: Fleet, member: Workspace, n: int, tip: str | None = None) -> str:
        if synced:  # the first look is the one taken before member 1 closed 1.1
            return real_sync(plan_, member, n, tip)
        synced.append(n)
        return ""  # no tip: the look saw the branch as it was before

    monkeypatch.setattr(fleet_run, "sync", stale_first)
    worked: list[tuple[str, str]] = []
    assert member_loop(the_fleet, members[1], 2, agent(env, worked), env, timeout=30) == 0
    assert [step for _, step in worked] == [f"1.{n}" for n in range(2, STEPS + 1)]
    assert (root / "roadmaps" / "demo.md").read_text().count("- [x]") == STEPS


def test_a_dead_members_step_is_taken_over_once_its_lease_runs_out(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    the_fleet = plan(root, "demo", "claude", None, None, 3)
    members = prepare_members(the_fleet, 3, env)
    # member 3 leases the first step and dies without a word
    fleet.join(
        members[2],
        "demo",
        "auto",
        host="claude",
        coordinate=None,
        now=time.time(),
        ttl=3,
        ledger=Workspace(root),
    )
    worked: list[tuple[str, str]] = []
    assert run_fleet(the_fleet, members[:2], agent(env, worked), env) == [0, 0]
    assert sorted(step for _, step in worked) == [f"1.{n}" for n in range(1, STEPS + 1)]
    events = ledger(Workspace(root), claims=True)
    assert [e["step"] for e in events if e["event"] == "lease-expired"] == ["1.1"]
    assert (root / "roadmaps" / "demo.md").read_text().count("- [x]") == STEPS


@pytest.mark.parametrize(
    "setup, message",
    [
        (
            lambda root: (root / "roadmaps" / "demo.md").write_text(ROADMAP + "x\n"),
            "uncommitted changes",
        ),
        (lambda root: git(root, "checkout", "-q", "--detach"), "no branch checked out"),
    ],
)
def test_a_fleet_that_cannot_start_says_so_and_leaves_nothing(
    repo: tuple[Path, dict[str, str]], setup: Any, message: str
) -> None:
    root, _ = repo
    setup(root)
    with pytest.raises(AgentcfgError, match=message):
        plan(root, "demo", "claude", None, None, 60)
    assert git(root, "worktree", "list").count("\n") == 0
    assert git(root, "for-each-ref", "refs/agentcfg") == ""


def test_an_unknown_remote_or_no_repository_is_refused(tmp_path: Path) -> None:
    (tmp_path / "roadmaps").mkdir()
    with pytest.raises(AgentcfgError, match="not in a git repository"):
        plan(tmp_path, "demo", "claude", None, None, 60)
    git(tmp_path, "init", "-q")
    with pytest.raises(AgentcfgError, match="`origin` is not a remote"):
        plan(tmp_path, "demo", "claude", None, "origin", 60)


def test_a_step_that_fails_on_the_fleets_branch_is_reopened_then_left_to_a_person(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    (root / ".git" / "info" / "exclude").write_text("s3.txt\n")  # made, never committed
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    members = prepare_members(the_fleet, 2, env)
    worked: list[tuple[str, str]] = []
    assert run_fleet(the_fleet, members, agent(env, worked), env) == [13, 13]
    events = ledger(Workspace(root), claims=True)
    reopened = [e for e in events if e["event"] == "reopened"]
    assert [(e["step"], e["reason"]) for e in reopened] == [("1.3", "reverify-failed")] * 2
    assert git(root, "rev-parse", "--verify", reopened[0]["branch"])  # kept for a person
    text = (root / "roadmaps" / "demo.md").read_text()
    assert "- [ ] **1.3**" in text and text.count("- [x]") == STEPS - 1


def test_a_member_whose_lease_passed_on_does_not_integrate(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    (one,) = prepare_members(the_fleet, 1, env)
    worked: list[tuple[str, str]] = []
    honest = agent(env, worked)

    def work(member: Workspace, lease: Lease) -> tuple[str, int]:
        result = honest(member, lease)
        if len(worked) == 1:  # meanwhile its lease ran out and another member took the step
            store = Store.open(root)
            store.release("demo", lease.step, None, now=time.time())
            store.take("demo", lease.step, "someone-else", host="codex", now=time.time(), ttl=1)
        return result

    assert member_loop(the_fleet, one, 1, work, env, timeout=30, sleep=time.sleep) == 0
    events = ledger(Workspace(root), claims=True)
    assert [e["step"] for e in events if e["event"] == "lease-lost"] == ["1.1"]
    integrated = [e["step"] for e in events if e["event"] == "integrated"]
    assert integrated.count("1.1") == 1 and len(integrated) == STEPS  # done again, fenced once


def test_two_machines_share_leases_and_the_branch_through_a_remote(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = repo
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(root), str(remote))
    machines = []
    for name in ("machine-a", "machine-b"):
        clone = tmp_path / name
        git(tmp_path, "clone", "-q", str(remote), str(clone))
        ws = Workspace(clone)
        trust.record(ws, "demo", loading.load(ws, "demo").steps, env, 0.0)
        the_fleet = plan(clone, "demo", "claude", None, "origin", 60)
        machines.append((the_fleet, prepare_members(the_fleet, 1, env)[0]))
    worked: list[tuple[str, str]] = []
    work = agent(env, worked)
    codes: list[int] = []

    def one(the_fleet: Fleet, member: Workspace) -> None:
        codes.append(member_loop(the_fleet, member, 1, work, env, timeout=30,
                                 sleep=lambda s: threading.Event().wait(0.2)))  # fmt: skip

    threads = [threading.Thread(target=one, args=machine) for machine in machines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert codes == [0, 0]
    assert sorted(step for _, step in worked) == [f"1.{n}" for n in range(1, STEPS + 1)]
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "check"))
    text = (tmp_path / "check" / "roadmaps" / "demo.md").read_text()
    assert text.count("- [x]") == STEPS
    assert all((tmp_path / "check" / f"s{n}.txt").exists() for n in range(1, STEPS + 1))
    assert {Path(name).parts[len(tmp_path.parts)] for name, _ in worked} == {
        "machine-a",
        "machine-b",
    }  # both machines worked, on different steps
    leases = git(tmp_path, "ls-remote", str(remote), "refs/agentcfg/leases/*")
    assert leases.count("refs/agentcfg/leases/demo/") == STEPS


def forger(env: dict[str, str], worked: list[tuple[str, str]]) -> Any:
    """A member that ticks every box in its worktree, yet makes and proves only its own step."""

    def work(member: Workspace, lease: Lease) -> tuple[str, int]:
        worked.append((str(member.root), lease.step))
        road = member.root / "roadmaps" / "demo.md"
        (member.root / f"s{lease.step.split('.')[1]}.txt").write_text(lease.step)
        assert done(member, "demo", lease.step, env).marked
        road.write_text(road.read_text().replace("- [ ]", "- [x]"))  # every other box, unproven
        return "complete", 0

    return work


def test_boxes_a_member_ticks_besides_its_own_step_are_reopened_on_integration(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = repo
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    members = prepare_members(the_fleet, 2, env)
    worked: list[tuple[str, str]] = []
    assert run_fleet(the_fleet, members, forger(env, worked), env) == [0, 0]
    # the union merge would have kept the forged ticks: every step was worked all the same
    assert sorted(step for _, step in worked) == [f"1.{n}" for n in range(1, STEPS + 1)]
    integrated = [e for e in ledger(Workspace(root), claims=True) if e["event"] == "integrated"]
    assert integrated[0]["unticked"] == [f"1.{n}" for n in range(1, STEPS + 1)
                                         if f"1.{n}" != integrated[0]["step"]]  # fmt: skip
    found = fleet_run.final_reproof(the_fleet, env)
    assert found.ok and found.passed == tuple(f"1.{n}" for n in range(1, STEPS + 1))
    assert git(root, "status", "--porcelain") == ""
    # a fresh clone of the fleet's branch audits clean on the final record it holds
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    assert (clone / "state" / "finals" / "demo.json").exists()
    from agentcfg.contract import audit

    assert audit.audit(Workspace(clone), "demo", env).ok
    assert not audit.audit(Workspace(clone), "demo", env).contracts


def test_members_close_steps_with_the_evidence_of_the_fleets_baseline(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    taken, untrusted = take_baseline(Workspace(root), "demo", env)
    assert untrusted == []
    assert [r.exit_code for r in taken] == [1] * STEPS  # no step's file is there yet
    the_fleet = plan(root, "demo", "claude", None, None, 60.0)
    members = prepare_members(the_fleet, 2, env)
    assert run_fleet(the_fleet, members, agent(env, []), env) == [0, 0]
    graded = [e.get("evidence") for e in ledger(members[0], claims=True) + ledger(members[1], claims=True)
              if e["event"] == "verified"]  # fmt: skip
    assert graded and set(graded) == {"red-green"}


def test_a_member_still_running_once_no_step_is_open_is_ended() -> None:
    """Every step is integrated, but one member's host hangs on a step another member took
    over and integrated: once the fleet's roadmap has no open step, a member still running
    after the grace is ended (as a Ctrl-C ends it), and the fleet ends."""
    import signal
    import subprocess
    import sys

    from agentcfg.fleet.drive import wait_members

    quick = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    hung = subprocess.Popen(
        [sys.executable, "-c", "import signal, time\n"
         "signal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(300)"],
        start_new_session=True,
    )  # fmt: skip
    looks: list[float] = []

    def done() -> bool:
        looks.append(time.monotonic())
        return len(looks) > 1  # the last step is integrated at the second look

    started = time.monotonic()
    try:
        codes = wait_members([quick, hung], done=done, grace=0.5, poll=0.1, end_wait=1.0)
    finally:
        hung.kill()
    assert codes[0] == 0 and codes[1] == -signal.SIGKILL  # deaf to SIGINT: killed
    assert time.monotonic() - started < 10


def test_each_member_process_works_in_its_own_worktree_whatever_agentcfg_root_says(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """A person's AGENTCFG_ROOT names the fleet's checkout: each member process, and the host,
    hooks and agent commands it starts, must still find its own worktree (else every member's
    claim lands in the one checkout, and one member works the whole roadmap)."""
    root, env = repo
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    members = prepare_members(the_fleet, 2, env)
    seen = tmp_path / "seen"
    seen.mkdir()
    code = "import os, sys; open(sys.argv[1], 'w').write(os.environ['AGENTCFG_ROOT'])"
    procs = fleet_run.start_members(
        the_fleet,
        members,
        lambda n: [sys.executable, "-c", code, str(seen / str(n))],
        {**env, "AGENTCFG_ROOT": str(root)},
    )
    assert fleet_run.wait_members(procs) == [0, 0]
    assert [(seen / str(n)).read_text() for n in (1, 2)] == [str(m.root) for m in members]


def test_a_step_id_no_lease_can_name_ends_a_member_instead_of_waiting_forever(
    repo: tuple[Path, dict[str, str]],
) -> None:
    """Taken on the fleet's branch after the fleet started: the member says so and ends."""
    root, env = repo
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    (one,) = prepare_members(the_fleet, 1, env)
    (root / "roadmaps" / "demo.md").write_text(
        "---\nexecution:\n  mode: autonomous\n---\n## Phase \uff11\n- [ ] **\uff11.\uff11** fullwidth\n"
    )
    git(root, "-c", "user.email=f@example.invalid", "-c", "user.name=f", "commit", "-qam", "ids")
    waits: list[float] = []
    with pytest.raises(AgentcfgError, match=r"step \uff11\.\uff11 of `demo` cannot be leased"):
        member_loop(the_fleet, one, 1, agent(env, []), env, timeout=30, sleep=waits.append)
    assert waits == []


def ordered(root: Path, env: dict[str, str], text: str) -> None:
    """The fleet's roadmap replaced by `text`, committed and trusted."""
    (root / "roadmaps" / "demo.md").write_text(text)
    git(root, "-c", "user.email=f@example.invalid", "-c", "user.name=f", "commit", "-qam", "order")
    ws = Workspace(root)
    trust.record(ws, "demo", loading.load(ws, "demo").steps, env, 0.0)


def one_waiting(root: Path, env: dict[str, str]) -> tuple[Fleet, Workspace]:
    """A fleet of one member on the steps in order, step 1.1 leased for ten minutes by another
    member: nothing is ready for this one."""
    ordered(root, env, ROADMAP.replace("  fleet: {order: free}\n", ""))
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    (one,) = prepare_members(the_fleet, 1, env)
    Store.open(root).take("demo", "1.1", "someone-else", host="codex", now=time.time(), ttl=600)
    return the_fleet, one


def test_a_member_with_no_step_ready_waits_says_on_what_and_goes_on_once_one_is(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    the_fleet, one = one_waiting(root, env)
    store = Store.open(root)
    said: list[str] = []
    looks: list[float] = []

    def sleep(seconds: float) -> None:  # the other member gives its step back at the third look
        looks.append(seconds)
        if len(looks) == 3:
            store.release("demo", "1.1", None, now=time.time())

    worked: list[tuple[str, str]] = []
    code = member_loop(
        the_fleet, one, 1, agent(env, worked), env, timeout=30, sleep=sleep, say=said.append
    )
    assert code == 0 and [step for _, step in worked] == [f"1.{n}" for n in range(1, STEPS + 1)]
    assert [line for line in said if " waiting: " in line] == [  # told once, however often
        "member 1 waiting: 1.1 in progress; 1.2 waits for 1.1 (in progress); 1.3 waits for 1.2; "
        "1.4 waits for 1.3; and 2 more"
    ]  # besides its own steps' lines
    waits = [e for e in ledger(Workspace(root)) if e["event"] == "waiting"]
    assert len(waits) == 1 and waits[0]["member"] == 1
    assert waits[0]["in_progress"] == ["1.1"]
    assert waits[0]["waits"] == {f"1.{n}": [f"1.{n - 1}"] for n in range(2, STEPS + 1)}


def test_a_members_ledger_counts_come_from_the_fleets_branch_not_its_checkout(
    repo: tuple[Path, dict[str, str]],
) -> None:
    """Another member's integration writes the checkout's roadmap anew, a part at a time: a
    member that logs meanwhile counts the roadmap as the tip of the fleet's branch holds it."""
    root, env = repo
    the_fleet, one = one_waiting(root, env)
    store = Store.open(root)
    checkout = root / "roadmaps" / "demo.md"
    whole = checkout.read_bytes()
    checkout.write_bytes(whole[: len(whole) // 2])  # as a checkout halfway through leaves it

    def sleep(seconds: float) -> None:  # the integration ends, the other member gives 1.1 back
        checkout.write_bytes(whole)
        store.release("demo", "1.1", None, now=time.time())

    assert member_loop(the_fleet, one, 1, agent(env, []), env, timeout=30, sleep=sleep) == 0
    waits = [e for e in ledger(Workspace(root)) if e["event"] == "waiting"]
    assert [(e["open"], e["blocked"]) for e in waits] == [(STEPS, 0)]
    integrated = [e["open"] for e in ledger(Workspace(root)) if e["event"] == "integrated"]
    assert integrated == list(range(STEPS - 1, -1, -1))


def waiting_member(
    root: Path, env: dict[str, str], on_wait: Any, worked: list[tuple[str, str]]
) -> list[int]:
    """Member 1 of `one_waiting`'s fleet: it waits, and `on_wait` runs when it says so. Its
    wait ends on a change only: it would last an hour."""
    the_fleet, one = one_waiting(root, env)
    codes: list[int] = []

    def say(line: str) -> None:
        if " waiting: " in line:
            on_wait()

    member = threading.Thread(target=lambda: codes.append(member_loop(
        the_fleet, one, 1, agent(env, worked), env, timeout=30, say=say, poll=3600.0
    )))  # fmt: skip
    member.start()
    member.join(timeout=240)
    return codes


def test_a_waiting_member_wakes_when_the_lease_it_waits_on_is_given_back(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    worked: list[tuple[str, str]] = []
    codes = waiting_member(
        root, env, lambda: Store.open(root).release("demo", "1.1", None, now=time.time()), worked
    )
    assert codes == [0]
    assert [step for _, step in worked] == [f"1.{n}" for n in range(1, STEPS + 1)]


def test_a_waiting_member_wakes_when_the_fleets_branch_moves(
    repo: tuple[Path, dict[str, str]],
) -> None:
    """The other member's step integrated while its lease is still held: the step after it
    is ready, and the waiting member leases it."""
    root, env = repo

    def integrated() -> None:
        roadmap = root / "roadmaps" / "demo.md"
        roadmap.write_text(roadmap.read_text().replace("- [ ] **1.1**", "- [x] **1.1**"))
        (root / "s1.txt").write_text("1.1")
        git(root, "add", "--all")
        git(root, "-c", "user.email=f@example.invalid", "-c", "user.name=f", "commit", "-qm", "1.1")

    worked: list[tuple[str, str]] = []
    assert waiting_member(root, env, integrated, worked) == [0]
    assert [step for _, step in worked] == [f"1.{n}" for n in range(2, STEPS + 1)]


def test_a_wait_ends_when_a_lease_on_the_remote_moves(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, _ = repo
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(root), str(remote))
    git(root, "remote", "add", "origin", remote.as_uri())
    store = Store.open(root, "origin")
    watched = store.watched("refs/agentcfg/leases/demo", "refs/heads/main")
    assert watched[0] == remote / "refs" / "agentcfg" / "leases" / "demo"
    before = fleet_run.look(watched)
    assert not fleet_run.wait_for_change(watched, before, 0.0)  # nothing moved: no change
    assert store.take("demo", "1.1", "someone", host="codex", now=time.time()) is not None
    assert fleet_run.wait_for_change(watched, before, 3600.0)


def test_a_member_ends_for_a_person_when_the_steps_left_wait_for_each_other(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    ordered(root, env, (
        "---\nexecution:\n  mode: autonomous\n---\n## Phase 1\n"
        "- [ ] **1.1** a <!-- needs: 1.2 --> <!-- verify: true -->\n"
        "- [ ] **1.2** b <!-- needs: 1.1 --> <!-- verify: true -->\n"
    ))  # fmt: skip
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    (one,) = prepare_members(the_fleet, 1, env)
    said: list[str] = []
    worked: list[tuple[str, str]] = []
    code = member_loop(
        the_fleet, one, 1, agent(env, worked), env, timeout=30, sleep=time.sleep, say=said.append
    )
    assert (code, worked) == (fleet_run.LEFT_TO_A_PERSON, [])
    assert said == [
        "member 1: no step of `demo` can start and none is in progress: "
        "1.1 waits for 1.2; 1.2 waits for 1.1"
    ]


@pytest.mark.parametrize(
    ("order", "told"),
    [
        ("", "leaves nothing to run side by side (each step waits for the one before it)"),
        ("  fleet: {order: phases}\n", "leaves nothing to run side by side (each phase"),
        ("  fleet: {order: free}\n", None),
    ],
)
def test_run_agents_says_before_it_starts_when_the_steps_go_one_at_a_time(
    order: str, told: str | None
) -> None:
    text = ROADMAP.replace("  fleet: {order: free}\n", order)
    if "phases" in order:  # one step to a phase
        text = text.replace("- [ ] **1.2**", "## Phase 2\n- [ ] **1.2**").split("- [ ] **1.3**")[0]
    found = fleet_run.one_at_a_time(parse_roadmap(text))
    assert (found or "").startswith(told or "") and (found is None) == (told is None)


def test_a_member_records_what_each_run_of_its_host_cost_in_the_fleets_ledger(
    repo: tuple[Path, dict[str, str]],
) -> None:
    """The member's own ledger goes with its worktree: each run of its host on a leased step is
    told in the fleet's ledger (`member-run`), and the report reads each member's part there."""
    root, _ = repo
    env = dict(os.environ)  # the person who starts the fleet, whose trust its members carry
    main = Workspace(root)
    trust.record(main, "demo", loading.load(main, "demo").steps, env, 0.0)
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    (member,) = prepare_members(the_fleet, 1, env)
    row = {"engagements": 2, "tokens": {"total": 500}, "timeline": {"waits": [{}]},
           "wall_seconds": 30.5}  # fmt: skip

    def drive(tree: Workspace, step: str) -> driver.Result:
        (tree.root / f"s{step.split('.')[1]}.txt").write_text(step)
        assert done(tree, "demo", step, env).marked
        return driver.Result("complete", 0, "demo", "claude", f"s-{step}", Progress(), 1, row)

    assert fleet_run.run_member(member, root, "demo", "claude", 1, None, None, 60, drive) == 0
    runs = [e for e in ledger(main) if e["event"] == "member-run"]
    assert [e["step"] for e in runs] == [f"1.{n}" for n in range(1, STEPS + 1)]
    assert {
        (e["member"], e["ending"], e["engagements"], e["waits"], e["seconds"]) for e in runs
    } == {(1, "complete", 2, 1, 30.5)}
    lines = (main.state / "run-continuation.jsonl").read_text().splitlines()
    (told,) = report.build(lines).to_json()["fleet"]["fleets"]
    assert told["member_seconds"] == 30.5 * STEPS
    assert told["members"]["1"] == {
        "steps": STEPS, "leased": STEPS, "reopened": 0, "takeovers": 0, "waits": STEPS,
        "runs": STEPS, "engagements": 2 * STEPS, "tokens": 500 * STEPS, "tokens_unknown": 0,
        "seconds": 30.5 * STEPS,
    }  # fmt: skip
