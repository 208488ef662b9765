"""`agentcfg leases`: listing a fleet's step leases, and a person's release."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg.fleet import steps as fleet
from agentcfg.fleet.leases import Store
from tests.conftest import run_cli

PAST, FUTURE = 1_600_000_000.0, 4_100_000_000.0


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)


def test_the_list_says_who_holds_each_step(ws: Path, snapshot: SnapshotAssertion) -> None:
    git_init(ws)
    store = Store.open(ws)
    store.take("demo", "1.1", "session-a", host="claude", now=FUTURE)
    store.take("demo", "1.2", "session-b", host="codex", now=PAST)
    store.take("demo", "1.3", "session-c", host="gemini", now=FUTURE)
    store.release("demo", "1.3", "session-c", now=FUTURE)
    listed = run_cli("leases", "demo", at=[FUTURE])
    assert listed.exit_code == 0
    assert listed.output.replace(store.all()[0].machine, "MACHINE") == snapshot
    as_json = json.loads(run_cli("leases", "--json", at=[FUTURE]).output)
    assert [(x["step"], x["state"]) for x in as_json] == [
        ("1.1", "held"),
        ("1.2", "expired"),
        ("1.3", "released"),
    ]


def test_a_person_releases_any_members_lease(ws: Path) -> None:
    git_init(ws)
    Store.open(ws).take("demo", "1.1", "session-a", host="claude", now=FUTURE)
    released = run_cli("leases", "release", "demo", "1.1")
    assert (
        released.output == "released the lease on `demo` step 1.1; the step is open to the fleet\n"
    )
    assert (
        run_cli("leases", "release", "demo", "1.1").output == "`demo` step 1.1 has no held lease\n"
    )
    assert Store.open(ws).take("demo", "1.1", "session-b", host="claude", now=FUTURE) is not None


def test_outside_a_git_repository_or_with_an_unknown_remote_it_says_so(ws: Path) -> None:
    outside = run_cli("leases")
    assert outside.exit_code == 1
    assert "is not in a git repository: leases live in git refs" in outside.output
    git_init(ws)
    assert run_cli("leases").output == "no step leases\n"
    unknown = run_cli("leases", "--coordinate", "nowhere")
    assert unknown.exit_code == 1 and "`nowhere` is not a remote of" in unknown.output


def test_a_fleet_claim_leases_a_step_and_names_it(ws: Path) -> None:
    git_init(ws)
    first = run_cli("sessions", "claim", "demo", "--session", "s-1", "--step", "auto")
    assert first.exit_code == 0, first.output
    assert "claimed roadmap `demo` for session s-1" in first.output
    assert "leased step 1.2 of `demo` (fence 1) until " in first.output
    held = json.loads(run_cli("leases", "demo", "--json").output)
    assert [(x["step"], x["state"]) for x in held] == [("1.2", "held")]


def test_a_fleet_claim_that_fails_gives_its_lease_back(ws: Path) -> None:
    """A person's stop refuses the claim once the lease is taken: the lease goes back."""
    git_init(ws)
    assert run_cli("stop", "demo").exit_code == 0
    refused = run_cli("sessions", "claim", "demo", "--session", "s-2", "--step", "auto")
    assert refused.exit_code == 1
    assert json.loads(run_cli("leases", "--json").output)[0]["state"] == "released"
    assert not (ws / "state" / "fleet" / "demo.json").exists()


def test_lease_options_need_step(ws: Path) -> None:
    refused = run_cli("sessions", "claim", "demo", "--session", "s-1", "--coordinate", "origin")
    assert (
        refused.exit_code == 2 and "--coordinate and --lease-ttl go with --step" in refused.output
    )


def test_roadmap_done_in_a_members_workspace_closes_only_its_leased_step(ws: Path) -> None:
    git_init(ws)
    run_cli("sessions", "claim", "demo", "--session", "s-1", "--step", "auto")
    other = run_cli("roadmap", "done", "demo", "1.3", "--no-verify")
    assert other.exit_code == 1
    assert "this workspace leases step 1.2 of `demo`; step 1.3 is for the member" in other.output
    Store.open(ws).release("demo", "1.2", None, now=FUTURE)  # the lease passes on
    Store.open(ws).take("demo", "1.2", "s-other", host="codex", now=FUTURE)
    fenced = run_cli("roadmap", "done", "demo", "1.2", "--no-verify")
    assert fenced.exit_code == 1 and "fence 1 is no longer current" in fenced.output
    assert "- [ ] **1.2**" in (ws / "roadmaps" / "demo.md").read_text()


def test_a_member_without_its_membership_file_still_cannot_close_anothers_step(
    ws: Path, tmp_path: Path
) -> None:
    """The membership file is the agent's to delete: the lease refs still say whose step is whose."""
    git_init(ws)
    subprocess.run(["git", "-C", str(ws), "add", "."], check=True)
    commit = ["git", "-C", str(ws), "-c", "user.name=p", "-c", "user.email=p@example.invalid"]
    subprocess.run([*commit, "commit", "-qm", "start"], check=True)
    peer = tmp_path / "peer"
    subprocess.run(["git", "-C", str(ws), "worktree", "add", "-q", str(peer)], check=True)
    assert run_cli("sessions", "claim", "demo", "--session", "s-1", "--step", "1.2").exit_code == 0
    with pytest.MonkeyPatch.context() as there:
        there.chdir(peer)
        taken = run_cli("sessions", "claim", "demo", "--session", "s-2", "--step", "1.3")
        assert taken.exit_code == 0, taken.output
    (ws / "state" / "fleet" / "demo.json").unlink()
    refused = run_cli("roadmap", "done", "demo", "1.3", "--no-verify")
    assert refused.exit_code == 1
    assert refused.output.count("\n") == 1
    assert "step 1.3 of `demo` is leased by " in refused.output
    assert "it is that member's to close" in refused.output
    assert "- [ ] **1.3**" in (ws / "roadmaps" / "demo.md").read_text()


def test_a_fleet_members_agent_closes_nothing_once_its_membership_file_is_gone(ws: Path) -> None:
    """`run --agents` tells each member's host it works in a fleet (AGENTCFG_FLEET)."""
    git_init(ws)
    assert run_cli("sessions", "claim", "demo", "--session", "s-1", "--step", "1.2").exit_code == 0
    (ws / "state" / "fleet" / "demo.json").unlink()
    env = fleet.member_env({"PATH": "/usr/bin:/bin"}, "demo")
    assert env == {"PATH": "/usr/bin:/bin", "AGENTCFG_FLEET": "demo"}
    refused = run_cli("roadmap", "done", "demo", "1.2", "--no-verify", env=env)
    assert refused.exit_code == 1 and refused.output.count("\n") == 1
    assert "works in a fleet on `demo` and leases no step here" in refused.output
    assert "- [ ] **1.2**" in (ws / "roadmaps" / "demo.md").read_text()
    elsewhere = run_cli(
        "roadmap", "done", "demo", "1.3", "--no-verify", env={"AGENTCFG_FLEET": "x"}
    )
    assert elsewhere.exit_code == 0, (
        elsewhere.output
    )  # another roadmap's fleet, a step no one leases


def test_a_refused_fleet_claim_touches_nothing_of_the_session_that_holds_the_roadmap(
    ws: Path,
) -> None:
    git_init(ws)
    assert run_cli("sessions", "claim", "demo", "--session", "s-1", "--step", "auto").exit_code == 0
    membership = (ws / "state" / "fleet" / "demo.json").read_text()
    leases = run_cli("leases", "--json").output
    for step in ("auto", "1.3"):
        refused = run_cli("sessions", "claim", "demo", "--session", "s-2", "--step", step)
        assert refused.exit_code == 1
        assert "roadmap `demo` is claimed by session s-1" in refused.output
        assert refused.output.count("\n") == 1
        assert (ws / "state" / "fleet" / "demo.json").read_text() == membership
        assert run_cli("leases", "--json").output == leases
    assert [c["session"] for c in json.loads(run_cli("sessions", "list", "--json").output)] == [
        "s-1"
    ]


def test_a_lease_written_by_hand_to_outlive_every_lease_is_listed_as_forged(ws: Path) -> None:
    git_init(ws)
    Store.open(ws).take("demo", "1.1", "session-a", host="claude", now=FUTURE)
    listed = json.loads(run_cli("leases", "--json", at=[PAST]).output)
    assert [(x["step"], x["state"]) for x in listed] == [("1.1", "forged")]
    assert run_cli("leases", "demo", at=[PAST]).output.startswith("demo 1.1: forged, fence 1; ")


def test_a_fleet_claim_on_step_ids_no_lease_can_name_is_one_line(ws: Path) -> None:
    git_init(ws)
    (ws / "roadmaps" / "demo.md").write_text("## Phase \u0661\n- [ ] first\n")
    refused = run_cli("sessions", "claim", "demo", "--session", "s-1", "--step", "auto")
    assert refused.exit_code == 1 and refused.output.count("\n") == 1
    assert "step \u0661.1 of `demo` cannot be leased" in refused.output
    assert not (ws / "state" / "claims").exists() or not list((ws / "state" / "claims").iterdir())
