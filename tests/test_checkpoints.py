"""Checkpoints in a real git repository: taken without touching the index, HEAD or the tree,
untracked files in and ignored ones out; a rollback keeps what it leaves under a ref, brings the
branch and the tree back, opens the undone steps again and keeps every run's contract whole;
the stop hook takes one when the step it engages changes, and fails open."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import checkpoints
from agentcfg.errors import CheckpointError
from agentcfg.workspace import Workspace
from tests.conftest import FIXTURES, SESSION, fire, fixture_payload, hook_env, ledger, run_cli

AT = 1_796_000_000.0  # 2026-11-30T00:53:20Z


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def repo(ws: Path) -> Path:
    """The demo workspace as a git repository with one commit; `ignored.txt` is ignored."""
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "person@example.com")
    git(ws, "config", "user.name", "A Person")
    (ws / ".gitignore").write_text("ignored.txt\n")
    (ws / "code.py").write_text("one\n")
    (ws / "gone.py").write_text("kept until the step deletes it\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "start")
    return ws


def workspace(root: Path) -> Workspace:
    return Workspace(root)


def tree_of(root: Path, ref: str) -> dict[str, str]:
    names = git(root, "ls-tree", "-r", "--name-only", ref).split()
    return {name: git(root, "show", f"{ref}:{name}") for name in names}


def test_a_checkpoint_keeps_the_tree_and_touches_nothing(repo: Path) -> None:
    (repo / "code.py").write_text("one\nstaged\n")
    git(repo, "add", "code.py")
    (repo / "code.py").write_text("one\nstaged\nand not\n")
    (repo / "new.py").write_text("untracked\n")
    (repo / "ignored.txt").write_text("secret\n")
    index = (repo / ".git" / "index").read_bytes()
    head, status = git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")

    taken = checkpoints.take(workspace(repo), "demo", "1.2", "run-key", AT, os.environ)

    assert (repo / ".git" / "index").read_bytes() == index
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == status
    assert (repo / "code.py").read_text() == "one\nstaged\nand not\n"
    assert taken.ref == "refs/agentcfg/checkpoints/demo/1.2/1" and taken.n == 1
    assert git(repo, "rev-parse", f"{taken.ref}^1") == head  # HEAD is its parent
    kept = tree_of(repo, taken.ref)
    assert kept["code.py"] == "one\nstaged\nand not\n"  # the tree as it is, not the index
    assert kept["new.py"] == "untracked\n"
    assert "ignored.txt" not in kept
    assert not list((repo / ".git").glob("agentcfg-*"))  # its own index is gone
    again = checkpoints.take(workspace(repo), "demo", "1.2", None, AT + 1, os.environ)
    assert again.ref == "refs/agentcfg/checkpoints/demo/1.2/2"


def test_a_checkpoint_ignores_an_index_named_in_the_shell(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "other.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(elsewhere)}
    (repo / "new.py").write_text("untracked\n")
    taken = checkpoints.take(workspace(repo), "demo", "1.2", None, AT, env)
    assert "new.py" in tree_of(repo, taken.ref) and not elsewhere.exists()


def test_no_checkpoint_without_a_commit_or_outside_a_repository(ws: Path) -> None:
    with pytest.raises(CheckpointError, match="not in a git repository"):
        checkpoints.take(workspace(ws), "demo", "1.2", None, AT, os.environ)
    git(ws, "init", "-q")
    with pytest.raises(CheckpointError, match="no commit yet"):
        checkpoints.take(workspace(ws), "demo", "1.2", None, AT, os.environ)


def later_work(root: Path) -> None:
    """What an agent's step leaves: a commit, an edit, a new file, a deletion, a tick."""
    (root / "code.py").write_text("one\ncommitted by the step\n")
    git(root, "commit", "-q", "-am", "the step's commit")
    (root / "code.py").write_text("one\ncommitted by the step\nthen more\n")
    (root / "made.py").write_text("made by the step\n")
    (root / "gone.py").unlink()
    (root / "ignored.txt").write_text("the person's, left alone\n")


def test_a_rollback_brings_branch_and_tree_back_and_keeps_the_attempt(repo: Path) -> None:
    (repo / "draft.py").write_text("untracked before the step\n")
    head = git(repo, "rev-parse", "HEAD").strip()
    taken = checkpoints.take(workspace(repo), "demo", "1.2", None, AT, os.environ)
    later_work(repo)
    later = git(repo, "rev-parse", "HEAD").strip()

    done = checkpoints.rollback(workspace(repo), "demo", "1.2", AT + 60, os.environ, "person")

    assert done.checkpoint.ref == taken.ref
    assert done.attempt == "refs/agentcfg/attempts/demo/1.2/1"
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert (repo / "code.py").read_text() == "one\n"
    assert (repo / "gone.py").exists() and not (repo / "made.py").exists()
    assert (repo / "draft.py").read_text() == "untracked before the step\n"
    assert (repo / "ignored.txt").read_text() == "the person's, left alone\n"
    assert git(repo, "status", "--porcelain") == "?? draft.py\n"  # the index is the branch's
    kept = tree_of(repo, done.attempt)  # nothing lost: the attempt's tree and its HEAD
    assert kept["code.py"] == "one\ncommitted by the step\nthen more\n"
    assert kept["made.py"] == "made by the step\n" and "gone.py" not in kept
    assert git(repo, "rev-parse", f"{done.attempt}^1").strip() == later
    [event] = [e for e in ledger(repo) if e["event"] == "rolled-back"]
    assert (event["checkpoint"], event["attempt"], event["by"]) == (
        taken.ref,
        done.attempt,
        "person",
    )


def test_a_rollback_takes_the_newest_checkpoint_of_the_step(repo: Path) -> None:
    checkpoints.take(workspace(repo), "demo", "1.2", None, AT, os.environ)
    (repo / "code.py").write_text("second try\n")
    checkpoints.take(workspace(repo), "demo", "1.2", None, AT + 1, os.environ)
    (repo / "code.py").write_text("broken\n")
    done = checkpoints.rollback(workspace(repo), "demo", "1.2", AT + 2, os.environ, "person")
    assert done.checkpoint.n == 2 and (repo / "code.py").read_text() == "second try\n"


def test_a_rollback_to_a_step_without_a_checkpoint_names_those_that_have_one(repo: Path) -> None:
    checkpoints.take(workspace(repo), "demo", "1.2", None, AT, os.environ)
    with pytest.raises(CheckpointError) as found:
        checkpoints.rollback(workspace(repo), "demo", "2.1", AT, os.environ, "person")
    assert str(found.value) == (
        "roadmap `demo` has no checkpoint before step 2.1 (steps with one: 1.2)"
    )


def test_a_rollback_never_moves_a_branch_the_checkpoint_was_not_taken_on(repo: Path) -> None:
    taken = checkpoints.take(workspace(repo), "demo", "1.2", None, AT, os.environ)
    git(repo, "checkout", "-q", "-b", "elsewhere")
    (repo / "code.py").write_text("on another branch\n")
    with pytest.raises(CheckpointError) as found:
        checkpoints.rollback(workspace(repo), "demo", "1.2", AT + 1, os.environ, "person")
    assert str(found.value) == (
        f"checkpoint {taken.ref} was taken on branch `main`, and the worktree is on branch "
        "`elsewhere`: check out branch `main` first"
    )
    assert (repo / "code.py").read_text() == "on another branch\n"
    assert not git(repo, "for-each-ref", "refs/agentcfg/attempts/")
    git(repo, "checkout", "-q", "--detach")
    with pytest.raises(CheckpointError, match="the worktree is on a detached HEAD"):
        checkpoints.rollback(workspace(repo), "demo", "1.2", AT + 1, os.environ, "person")


# -- the steps it undid, the contract and the receipts ---------------------------------------


@pytest.fixture
def claimed(repo: Path) -> Path:
    shutil.copy(FIXTURES / "transcript.jsonl", repo / "transcript.jsonl")
    (repo / ".gitignore").write_text("ignored.txt\ntranscript.jsonl\n")
    git(repo, "commit", "-q", "-am", "ignore the transcript")
    assert run_cli("roadmap", "trust", "demo", "--yes").exit_code == 0
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    return repo


def test_the_hook_takes_one_checkpoint_when_the_step_it_engages_changes(claimed: Path) -> None:
    payload = fixture_payload(1, claimed)
    assert fire(claimed, payload, process=True).returncode == 2
    refs = git(claimed, "for-each-ref", "--format=%(refname)", "refs/agentcfg/")
    assert refs.split() == ["refs/agentcfg/checkpoints/demo/1.2/1"]
    assert fire(claimed, fixture_payload(2, claimed), process=True).returncode == 2
    assert git(claimed, "for-each-ref", "--format=%(refname)", "refs/agentcfg/") == refs
    assert run_cli("roadmap", "done", "demo", "1.2").exit_code == 0
    assert fire(claimed, fixture_payload(3, claimed), process=True).returncode == 2
    refs = git(claimed, "for-each-ref", "--format=%(refname)", "refs/agentcfg/")
    assert refs.split() == [
        "refs/agentcfg/checkpoints/demo/1.2/1",
        "refs/agentcfg/checkpoints/demo/1.3/1",
    ]
    taken = [e for e in ledger(claimed) if e["event"] == "checkpoint"]
    assert [(e["step"], e["ref"]) for e in taken] == [
        ("1.2", "refs/agentcfg/checkpoints/demo/1.2/1"),
        ("1.3", "refs/agentcfg/checkpoints/demo/1.3/1"),
    ]
    assert {e["run"] for e in taken} == {
        e["run"] for e in ledger(claimed) if e["event"] == "engage"
    }


def test_a_checkpoint_that_fails_never_changes_the_verdict(claimed: Path, tmp_path: Path) -> None:
    """No git on PATH: the fire still engages, and the ledger says why no checkpoint."""
    empty = tmp_path / "no-git"
    empty.mkdir()
    env = hook_env(claimed, PATH=str(empty))
    result = fire(claimed, fixture_payload(1, claimed), env=env, process=True)
    assert result.returncode == 2 and "Next step: **1.2**" in result.stderr
    [failed] = [e for e in ledger(claimed) if e["event"] == "checkpoint-failed"]
    assert failed["step"] == "1.2" and failed["reason"].startswith("cannot run git")


def test_outside_a_repository_the_hook_takes_none_and_says_nothing(ws: Path) -> None:
    shutil.copy(FIXTURES / "transcript.jsonl", ws / "transcript.jsonl")
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    assert fire(ws, fixture_payload(1, ws), process=True).returncode == 2
    assert not [e for e in ledger(ws) if e["event"].startswith("checkpoint")]


def test_a_rollback_opens_the_undone_steps_and_the_run_goes_on_unhalted(claimed: Path) -> None:
    assert fire(claimed, fixture_payload(1, claimed)).returncode == 2  # checkpoint before 1.2
    assert run_cli("roadmap", "done", "demo", "1.2").exit_code == 0
    (claimed / "code.py").write_text("the agent's work on 1.3\n")
    assert run_cli("roadmap", "done", "demo", "1.3").exit_code == 0

    result = run_cli("rollback", "demo", "1.2", "--yes", "--json")

    told = json.loads(result.output)
    assert told["reopened"] == ["1.2", "1.3"]
    roadmap = (claimed / "roadmaps" / "demo.md").read_text()
    assert "- [ ] **1.2**" in roadmap and "- [ ] **1.3**" in roadmap
    assert (claimed / "code.py").read_text() == "one\n"
    # the run's contract starts from the roadmap as restored: its receipts close nothing, and
    # the next fire names 1.2 again, no halt for a changed contract
    fired = fire(claimed, fixture_payload(2, claimed))
    assert fired.returncode == 2 and "Next step: **1.2**" in fired.stderr, fired.stderr
    audit = run_cli("roadmap", "audit", "demo", "--json")
    rows = {r["step"]: r["status"] for r in json.loads(audit.output)["steps"]}
    assert rows["1.2"] == "open" and rows["1.3"] == "open"
    assert not [e for e in ledger(claimed) if e["event"].startswith("halt")]


def test_a_rollback_opens_the_steps_closed_since_in_a_roadmap_git_ignores(claimed: Path) -> None:
    (claimed / ".gitignore").write_text("ignored.txt\ntranscript.jsonl\nroadmaps/\n")
    git(claimed, "rm", "-q", "--cached", "-r", "roadmaps")
    git(claimed, "commit", "-q", "-am", "the roadmaps are the person's alone")
    assert fire(claimed, fixture_payload(1, claimed)).returncode == 2  # checkpoint before 1.2
    assert run_cli("roadmap", "done", "demo", "1.2").exit_code == 0
    told = json.loads(run_cli("rollback", "demo", "1.2", "--yes", "--json").output)
    assert told["reopened"] == ["1.2"]
    roadmap = (claimed / "roadmaps" / "demo.md").read_text()
    assert "- [x] **1.1**" in roadmap and "- [ ] **1.2**" in roadmap


# -- the commands ------------------------------------------------------------------------------


def test_checkpoints_lists_step_time_and_files_changed(
    repo: Path, snapshot: SnapshotAssertion
) -> None:
    assert run_cli("checkpoints", "demo").output == snapshot(name="none")
    checkpoints.take(workspace(repo), "demo", "1.2", None, AT, os.environ)
    (repo / "code.py").write_text("changed\n")
    checkpoints.take(workspace(repo), "demo", "1.3", None, AT + 600, os.environ)
    (repo / "new.py").write_text("untracked\n")
    result = run_cli("checkpoints", "demo")
    assert result.exit_code == 0
    assert result.output == snapshot(name="two")
    rows = json.loads(run_cli("checkpoints", "demo", "--json").output)
    assert [(r["step"], r["n"], r["changed"]) for r in rows] == [("1.2", 1, 2), ("1.3", 1, 1)]


def test_rollback_says_what_it_did_and_where_the_work_is_kept(
    repo: Path, snapshot: SnapshotAssertion
) -> None:
    checkpoints.take(workspace(repo), "demo", "1.2", None, AT, os.environ)
    later_work(repo)
    result = run_cli("rollback", "demo", "1.2", "--yes")
    assert result.exit_code == 0
    assert result.output == snapshot


def test_rollback_off_a_terminal_without_yes_refuses_in_one_line(
    repo: Path, snapshot: SnapshotAssertion
) -> None:
    checkpoints.take(workspace(repo), "demo", "1.2", None, AT, os.environ)
    (repo / "code.py").write_text("the agent's\n")
    proc = subprocess.run(
        [sys.executable, "-m", "agentcfg", "rollback", "demo", "1.2"],
        cwd=repo, env=hook_env(repo), capture_output=True, text=True, stdin=subprocess.DEVNULL,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr == snapshot
    assert (repo / "code.py").read_text() == "the agent's\n"


def test_rollback_refuses_inside_an_agents_session(repo: Path, snapshot: SnapshotAssertion) -> None:
    checkpoints.take(workspace(repo), "demo", "1.2", None, AT, os.environ)
    (repo / "code.py").write_text("the agent's\n")
    result = run_cli("rollback", "demo", "1.2", "--yes", env={"CLAUDECODE": "1"})
    assert result.exit_code == 1
    assert result.output == snapshot
    assert (repo / "code.py").read_text() == "the agent's\n"
    assert not git(repo, "for-each-ref", "refs/agentcfg/attempts/")


def on_terminal(root: Path, answer: str, *args: str) -> tuple[int, str]:
    """An agentcfg command whose stdin is a terminal, answered `answer`; its exit and output."""
    import pty

    leader, follower = pty.openpty()
    try:
        os.write(leader, answer.encode())
        proc = subprocess.run(
            [sys.executable, "-m", "agentcfg", *args], cwd=root, env=hook_env(root),
            stdin=follower, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(leader)
        os.close(follower)
    return proc.returncode, proc.stdout + proc.stderr


def test_rollback_on_a_terminal_asks_first(repo: Path, snapshot: SnapshotAssertion) -> None:
    checkpoints.take(workspace(repo), "demo", "1.2", None, AT, os.environ)
    (repo / "code.py").write_text("the agent's\n")
    code, output = on_terminal(repo, "n\n", "rollback", "demo", "1.2")
    assert code == 1
    assert output == snapshot(name="declined")
    assert (repo / "code.py").read_text() == "the agent's\n"
    code, output = on_terminal(repo, "y\n", "rollback", "demo", "1.2")
    assert code == 0, output
    assert output == snapshot(name="accepted")
    assert (repo / "code.py").read_text() == "one\n"


def test_rollback_on_a_terminal_names_the_sessions_that_claim_the_roadmap(
    repo: Path, snapshot: SnapshotAssertion
) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", "s-at-work").exit_code == 0
    checkpoints.take(workspace(repo), "demo", "1.2", None, AT, os.environ)
    code, output = on_terminal(repo, "n\n", "rollback", "demo", "1.2")
    assert code == 1
    assert output == snapshot
    assert run_cli("stop", "demo").exit_code == 0  # a person stopped it: nothing more to say
    code, output = on_terminal(repo, "n\n", "rollback", "demo", "1.2")
    assert "claimed by session" not in output
