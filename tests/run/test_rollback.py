"""`agentcfg run --rollback-on-halt` as a process of its own, against a fake `claude` that wrecks
the tree and ends early every time: the run halts `halt-restarts`, brings the workspace back to
the checkpoint it took before the step, keeps the wreck under a ref, and its ending says so."""

from __future__ import annotations

import json
from pathlib import Path

from syrupy.assertion import SnapshotAssertion

from tests.run.test_process import Host, ending, host
from tests.test_checkpoints import git

__all__ = ["host"]  # the fixture, shared

WRECKER = """
echo "wrecked" > code.py
echo "left by the agent" > debris.py
exit 0
"""


def repository(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "person@example.com")
    git(root, "config", "user.name", "A Person")
    (root / "code.py").write_text("as the person left it\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")


def test_a_run_that_halts_mid_step_rolls_back_to_its_checkpoint(
    host: Host, snapshot: SnapshotAssertion
) -> None:
    repository(host.root)
    host.script(WRECKER)
    proc = host.run("--rollback-on-halt", "--max-restarts", "1", "--no-baseline")
    assert ending(proc) == ("halt-restarts", 16)
    assert (host.root / "code.py").read_text() == "as the person left it\n"
    assert not (host.root / "debris.py").exists()
    told = json.loads(proc.stdout)["rollback"]
    assert told == {
        "step": "1.2",
        "checkpoint": "refs/agentcfg/checkpoints/demo/1.2/1",
        "attempt": "refs/agentcfg/attempts/demo/1.2/1",
        "reopened": [],
    }
    kept = git(host.root, "show", "refs/agentcfg/attempts/demo/1.2/1:debris.py")
    assert kept == "left by the agent\n"
    assert [e["step"] for e in host.ledger() if e["event"] == "checkpoint"] == ["1.2"]
    lines = proc.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("agentcfg run: halt-"))
    assert "\n".join(line for line in lines[start:] if "tokens" not in line) == snapshot


def test_without_the_option_a_halt_leaves_the_tree_as_it_is(host: Host) -> None:
    repository(host.root)
    host.script(WRECKER)
    proc = host.run("--max-restarts", "1", "--no-baseline")
    assert ending(proc) == ("halt-restarts", 16)
    assert json.loads(proc.stdout)["rollback"] is None
    assert (host.root / "code.py").read_text() == "wrecked\n"
    refs = git(host.root, "for-each-ref", "--format=%(refname)", "refs/agentcfg/").split()
    assert refs == ["refs/agentcfg/checkpoints/demo/1.2/1"]  # taken all the same


def test_a_run_outside_a_repository_says_why_it_did_not_roll_back(host: Host) -> None:
    host.script(WRECKER)
    proc = host.run("--rollback-on-halt", "--max-restarts", "1", "--no-baseline")
    assert ending(proc) == ("halt-restarts", 16)
    said = "  not rolled back: the workspace is not in a git repository with a working tree"
    assert said in proc.stderr.splitlines()
    assert (host.root / "code.py").read_text() == "wrecked\n"
