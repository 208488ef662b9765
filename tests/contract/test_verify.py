"""The git facts a receipt records: the commit the workspace is at and whether it differs."""

from __future__ import annotations

from pathlib import Path

from agentcfg.contract.verify import git_facts
from tests.helpers import git


def test_git_facts_tell_the_commit_and_whether_the_tree_differs(tmp_path: Path) -> None:
    assert git_facts(tmp_path) == {"head": None, "dirty": None}  # no repository
    git(tmp_path, "init", "-q")
    assert git_facts(tmp_path) == {"head": None, "dirty": False}  # no commit yet
    (tmp_path / "a.txt").write_text("one\n")
    assert git_facts(tmp_path) == {"head": None, "dirty": True}  # an untracked file counts
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "one")
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    assert git_facts(tmp_path) == {"head": head, "dirty": False}
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("two\n")
    assert git_facts(tmp_path / "sub") == {"head": head, "dirty": True}  # from a folder in it
    assert git_facts(tmp_path / ".git") == {"head": None, "dirty": None}  # not a work tree
