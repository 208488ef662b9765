"""What a fleet leaves on its branch is whole: each integrated step's receipt travels with the
integration, so a fresh clone's `roadmap audit` (another person's, with another seal key)
proves every step; a member's worktree gets the stop hook whatever the person committed, and
its commits never carry the settings the fleet wrote; a member speaks for its own steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg.contract import audit, carried
from agentcfg.errors import AgentcfgError
from agentcfg.fleet import drive as fleet_run
from agentcfg.fleet.drive import member_loop, plan, prepare_members
from agentcfg.install import hook_command
from agentcfg.run import model as unattended
from agentcfg.run.model import Progress
from agentcfg.workspace import Workspace
from tests.fleet.test_drive import STEPS, agent, fleet_repo, run_fleet
from tests.fleet.test_leases import git

ALL = [f"1.{n}" for n in range(1, STEPS + 1)]


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    return fleet_repo(tmp_path)


@pytest.fixture(scope="module")
def ran(
    tmp_path_factory: pytest.TempPathFactory, person_state: Path
) -> tuple[Path, dict[str, str]]:
    """A fleet of two members that integrated every step, run once for the tests that only
    read what it left on its branch or clone it (each changes its own clone, never this)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_STATE_HOME", str(person_state))  # the person `no_real_home` gives a test
        root, env = fleet_repo(tmp_path_factory.mktemp("ran"))
        the_fleet = plan(root, "demo", "claude", None, None, 60)
        members = prepare_members(the_fleet, 2, env)
        assert run_fleet(the_fleet, members, agent(env, []), env) == [0, 0]
    return root, env


def clone_of(root: Path, tmp_path: Path, name: str = "clone") -> Path:
    clone = tmp_path / name
    git(tmp_path, "clone", "-q", str(root), str(clone))
    return clone


def another_person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A reviewer on another machine: a state folder of their own, so a seal key of their own
    (the seals are checked with the process's own person)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "reviewer-state"))
    return {"HOME": str(tmp_path / "reviewer"), "PATH": "/usr/bin:/bin"}


def test_a_fresh_clone_audited_by_another_person_proves_every_integrated_step(
    ran: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, env = ran
    # no final re-proof yet: the receipts the integrations committed are enough
    clone = clone_of(root, tmp_path)
    # the person who ran the fleet checks the seals with their own key
    mine = audit.audit(Workspace(clone), "demo", env)
    assert mine.ok and mine.history == 0
    # one receipt per integration, in the order the steps were integrated
    integrated = [e["step"] for e in _ledger(root) if e["event"] == "integrated"]
    sealed, others = carried.read(Workspace(clone), "demo")
    assert [r["step"] for r in sealed] == integrated and sorted(integrated) == ALL
    assert others == []
    found = audit.audit(Workspace(clone), "demo", another_person(tmp_path, monkeypatch))
    assert found.ok, found.to_json()
    assert [r.status for r in found.rows] == ["proven"] * STEPS
    assert found.history == STEPS  # read as the branch's history holds them: another's seals
    assert all(r.receipt and r.receipt["exit_code"] == 0 for r in found.rows)


def test_without_the_carried_receipts_the_clone_proves_nothing(
    ran: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the test above shows comes from the receipts the branch carries: without them the
    same clone's audit fails, every ticked step unproven."""
    root, _ = ran
    clone = clone_of(root, tmp_path)
    git(clone, "rm", "-q", "--", carried.shown("demo"))
    git(clone, "-c", "user.name=r", "-c", "user.email=r@example.invalid", "commit", "-qm", "x")
    found = audit.audit(Workspace(clone), "demo", another_person(tmp_path, monkeypatch))
    assert not found.ok and [r.status for r in found.rows] == ["unproven"] * STEPS


def test_a_carried_receipt_changed_in_a_clone_is_refused_by_name(
    ran: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = ran
    clone = clone_of(root, tmp_path)
    path = clone / carried.shown("demo")
    data = json.loads(path.read_text())
    data["receipts"].append({**data["receipts"][0], "at": "2030-01-01T00:00:00.000Z"})
    path.write_text(json.dumps(data))  # not committed: neither sealed nor the branch's word
    found = audit.audit(Workspace(clone), "demo", another_person(tmp_path, monkeypatch))
    assert not found.ok
    assert found.tampered == (f"{STEPS + 1} of the receipts in {carried.shown('demo')} "
                              "(not as committed)",)  # fmt: skip


def test_a_member_cannot_bring_its_own_carried_receipts_or_final_record(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The fleet's records on its branch are written by integrations and the final re-proof
    only: what a member's branch brings of them is left out of the merge."""
    root, env = repo
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    (member,) = prepare_members(the_fleet, 1, env)
    honest = agent(env, [])
    forged = {"version": 1, "slug": "demo", "receipts": [{"step": "1.6", "text": "x"}]}

    def forger(ws: Workspace, lease: object) -> tuple[str, int]:
        result = honest(ws, lease)
        for name in (carried.shown("demo"), "state/finals/demo.json"):
            (ws.root / name).parent.mkdir(parents=True, exist_ok=True)
            (ws.root / name).write_text(json.dumps(forged))
            git(ws.root, "add", "--force", name)
        return result

    assert member_loop(the_fleet, member, 1, forger, env, timeout=30) == 0
    assert "state/finals/demo.json" not in git(root, "ls-files", "state")
    sealed, others = carried.read(Workspace(root), "demo")
    assert [r["step"] for r in sealed] == ALL and others == []


def test_a_member_gets_the_hook_and_its_commits_leave_the_fleets_settings_out(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    (member,) = prepare_members(the_fleet, 1, env)
    settings = member.root / ".claude" / "settings.json"
    assert hook_command("claude") in settings.read_text()  # the person committed none
    said: list[str] = []
    assert member_loop(the_fleet, member, 1, agent(env, []), env, timeout=30, say=said.append) == 0
    assert ".claude" not in git(root, "ls-files")  # never committed on the fleet's branch
    assert said == [
        *(f"step {step} integrated into `main`; the fleet goes on" for step in ALL),
        f"member done on `demo`: 6 steps integrated ({', '.join(ALL)}); "
        "no step is left open on the fleet's branch",
    ]


def test_a_committed_hook_of_another_machine_is_replaced_in_the_worktree_only(
    repo: tuple[Path, dict[str, str]],
) -> None:
    """The person committed `hooks install`'s file: its hook names a program of their own
    machine, which does not run here. The member's worktree gets ours; the branch keeps theirs."""
    root, env = repo
    theirs = {"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "/home/someone/.venv/bin/agentcfg hook stop --host claude"}
    ]}]}}  # fmt: skip
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps(theirs))
    git(root, "add", ".claude")
    git(root, "-c", "user.name=p", "-c", "user.email=p@example.invalid", "commit", "-qm", "hook")
    the_fleet = plan(root, "demo", "claude", None, None, 60)
    (member,) = prepare_members(the_fleet, 1, env)
    assert hook_command("claude") in (member.root / ".claude" / "settings.json").read_text()
    assert member_loop(the_fleet, member, 1, agent(env, []), env, timeout=30) == 0
    assert json.loads((root / ".claude" / "settings.json").read_text()) == theirs


def test_what_would_stop_every_member_is_one_line_before_any_starts(
    repo: tuple[Path, dict[str, str]],
) -> None:
    root, env = repo
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text("{not json")
    git(root, "add", ".claude")
    git(root, "-c", "user.name=p", "-c", "user.email=p@example.invalid", "commit", "-qm", "odd")
    said: list[str] = []
    with pytest.raises(AgentcfgError) as raised:
        fleet_run.run_fleet(
            Workspace(root), "demo", "claude", 2, None, None, 60, [], say=said.append, env=env
        )
    message = str(raised.value)
    assert message.startswith("every member would stop: cannot install the stop hook in a ")
    assert "\n" not in message and said == []
    assert len(git(root, "worktree", "list").splitlines()) == 1  # the members' worktrees: gone
    assert git(root, "branch", "--list", "agentcfg/*") == ""


def _ledger(root: Path) -> list[dict[str, object]]:
    path = root / "state" / "run-continuation.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_what_a_member_says_at_its_ends(snapshot: SnapshotAssertion) -> None:
    the_fleet = fleet_run.Fleet(Path("/w"), "demo", "main", "claude")
    texts = [
        unattended.ending_text(
            "complete",
            0,
            "demo",
            1,
            {"engagements": 2, "tokens": {"total": 1200}, "wall_seconds": 42.0},
            Progress(1),
            "re-proof 1 step in 0.1 s",
            step="1.3",
        ),
        unattended.ending_text("halt-stall", 12, "demo", 0, None, Progress(2, 1), step="1.3"),
        fleet_run._member_end(
            the_fleet, ["1.3", "1.5"], "no step is left open on the fleet's branch"
        ),
        fleet_run._member_end(the_fleet, [], "step 1.2 ended halt-stall"),
    ]
    assert "\n".join(texts) == snapshot


def test_a_hook_the_host_would_not_run_in_the_worktree_is_told_with_its_fix(
    repo: tuple[Path, dict[str, str]],
) -> None:
    """Codex runs a project's hooks only in a project the person trusted in their own config:
    the fleet never writes that trust for them, it says what would stop the member."""
    root, env = repo
    the_fleet = plan(root, "demo", "codex", None, None, 60)
    with pytest.raises(AgentcfgError) as raised:
        prepare_members(the_fleet, 1, {**env, "CODEX_HOME": str(root.parent / "codex-home")})
    message = str(raised.value)
    assert message.startswith("the stop hook written to ") and "would not run: " in message
    assert message.endswith(
        "install it once for your user instead: agentcfg hooks install --host codex --scope user"
    )
