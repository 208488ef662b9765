"""Integrating fleet members' branches: ticks on adjacent lines merge, the step is proven again
on the merged tree, and anything else leaves the fleet's branch as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentcfg import loading
from agentcfg.contract import trust
from agentcfg.errors import IntegrationError, UntrustedError
from agentcfg.fleet.integrate import integrate
from agentcfg.workspace import Workspace
from tests.helpers import git

ROADMAP = """---
execution:
  mode: autonomous
---
## Phase 1
- [ ] **1.1** Make a <!-- verify: test -f a.txt -->
- [ ] **1.2** Make b <!-- verify: test -f b.txt -->
- [ ] **1.3** Make c <!-- verify: test -f c.txt && test ! -f broken.txt -->
"""


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    main = tmp_path / "main"
    (main / "roadmaps").mkdir(parents=True)
    (main / "roadmaps" / "demo.md").write_text(ROADMAP)
    git(main, "init", "-q", "-b", "main")
    git(main, "config", "user.email", "fleet@example.invalid")
    git(main, "config", "user.name", "fleet")
    git(main, "add", ".")
    git(main, "commit", "-q", "-m", "roadmap")
    env = {"HOME": str(tmp_path / "home")}
    ws = Workspace(main)
    trust.record(ws, "demo", loading.load(ws, "demo").steps, env, 0.0)
    return main, env


def agent(main: Path, n: int, step: str, files: dict[str, str]) -> str:
    """A member's branch in its own worktree: the files it made and its step's box ticked."""
    branch = f"agentcfg/demo/{n}"
    tree = main.parent / f"agent-{n}"
    git(main, "worktree", "add", "-q", "-b", branch, str(tree))
    for name, text in files.items():
        (tree / name).write_text(text)
    roadmap = tree / "roadmaps" / "demo.md"
    roadmap.write_text(roadmap.read_text().replace(f"[ ] **{step}**", f"[x] **{step}**"))
    git(tree, "add", ".")
    git(tree, "commit", "-q", "-m", f"step {step}")
    return branch


def test_three_members_ticking_adjacent_boxes_integrate_without_conflict(
    fleet: tuple[Path, dict[str, str]],
) -> None:
    main, env = fleet
    branches = [
        agent(main, n, f"1.{n}", {f"{name}.txt": name})
        for n, name in ((1, "a"), (2, "b"), (3, "c"))
    ]
    results = [
        integrate(main, branch, "demo", f"1.{n}", env, timeout=30)
        for n, branch in enumerate(branches, 1)
    ]
    assert [r.outcome for r in results] == ["integrated"] * 3
    text = (main / "roadmaps" / "demo.md").read_text()
    assert text.count("- [x]") == 3 and "- [ ]" not in text
    assert git(main, "rev-parse", "HEAD") == results[-1].commit
    assert git(main, "status", "--porcelain") == ""


def test_a_step_that_fails_on_the_merged_tree_is_not_integrated(
    fleet: tuple[Path, dict[str, str]],
) -> None:
    main, env = fleet
    first = agent(main, 1, "1.1", {"a.txt": "a", "broken.txt": "x"})
    third = agent(main, 3, "1.3", {"c.txt": "c"})
    assert integrate(main, first, "demo", "1.1", env, timeout=30).outcome == "integrated"
    before = git(main, "rev-parse", "HEAD")
    result = integrate(main, third, "demo", "1.3", env, timeout=30)
    assert (result.outcome, result.detail) == ("reverify-failed", "exit 1")
    assert git(main, "rev-parse", "HEAD") == before
    assert git(main, "status", "--porcelain") == ""
    assert "- [ ] **1.3**" in (main / "roadmaps" / "demo.md").read_text()
    assert git(main, "rev-parse", "--verify", third)  # kept for a person


def test_a_tick_besides_the_step_is_reopened_under_a_locale_of_another_encoding(
    fleet: tuple[Path, dict[str, str]],
) -> None:
    """The roadmap as the fleet's branch held it is read as the UTF-8 it is, whatever the
    locale's encoding: under an ASCII locale, steps named in other letters are told apart as
    anywhere else (the other box the member ticked is reopened), and nothing fails."""
    main, env = fleet
    roadmap = main / "roadmaps" / "demo.md"
    named = ROADMAP.replace("Make a", "Make ä").replace("Make b", "Make ß")
    roadmap.write_text(named, encoding="utf-8")
    git(main, "commit", "-qam", "steps named in other letters")
    ws = Workspace(main)
    trust.record(ws, "demo", loading.load(ws, "demo").steps, env, 0.0)
    branch = agent(main, 1, "1.1", {"a.txt": "a"})
    mine = main.parent / "agent-1" / "roadmaps" / "demo.md"
    ticked = mine.read_text(encoding="utf-8").replace("[ ] **1.2**", "[x] **1.2**")
    mine.write_text(ticked, encoding="utf-8")
    git(mine.parent.parent, "commit", "-qam", "1.2 ticked besides")
    script = (
        "import json, sys\nfrom pathlib import Path\nfrom agentcfg.fleet.integrate import integrate\n"
        "main, branch, env = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])\n"
        "done = integrate(main, branch, 'demo', '1.1', env, timeout=30)\n"
        "print(json.dumps([done.outcome, done.unticked]))"
    )
    ascii_locale = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    ran = subprocess.run(
        [sys.executable, "-c", script, str(main), branch, json.dumps(env)],
        env=ascii_locale, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == ["integrated", ["1.2"]]
    text = roadmap.read_text(encoding="utf-8")
    assert "- [x] **1.1** Make ä" in text and "- [ ] **1.2** Make ß" in text


def test_a_conflict_in_the_members_own_changes_leaves_the_branch_as_it_was(
    fleet: tuple[Path, dict[str, str]],
) -> None:
    main, env = fleet
    first = agent(main, 1, "1.1", {"a.txt": "a", "notes.txt": "one\n"})
    second = agent(main, 2, "1.2", {"b.txt": "b", "notes.txt": "two\n"})
    assert integrate(main, first, "demo", "1.1", env, timeout=30).outcome == "integrated"
    before = git(main, "rev-parse", "HEAD")
    result = integrate(main, second, "demo", "1.2", env, timeout=30)
    assert (result.outcome, result.detail) == ("conflict", "notes.txt")
    assert git(main, "rev-parse", "HEAD") == before
    assert git(main, "status", "--porcelain") == ""


def test_an_untrusted_verify_line_from_a_members_branch_does_not_run(
    fleet: tuple[Path, dict[str, str]],
) -> None:
    main, env = fleet
    branch = agent(main, 2, "1.2", {"b.txt": "b"})
    tree = main.parent / "agent-2"
    roadmap = tree / "roadmaps" / "demo.md"
    roadmap.write_text(roadmap.read_text().replace("test -f b.txt", "touch pwned; true"))
    git(tree, "commit", "-qam", "a new verify line")
    with pytest.raises(UntrustedError, match="no person has trusted"):
        integrate(main, branch, "demo", "1.2", env, timeout=30)
    assert not (main / "pwned").exists()
    assert git(main, "status", "--porcelain") == ""  # the merge was undone


def test_a_dirty_fleet_branch_is_refused(fleet: tuple[Path, dict[str, str]]) -> None:
    main, env = fleet
    branch = agent(main, 1, "1.1", {"a.txt": "a"})
    (main / "roadmaps" / "demo.md").write_text(ROADMAP + "\nedited\n")
    with pytest.raises(IntegrationError, match="uncommitted changes"):
        integrate(main, branch, "demo", "1.1", env, timeout=30)
