"""The real Claude Code binary (the newest pinned release and the older one), headless, against a
scripted model: the hook that `hooks install` writes fires, the claim made in the agent's Bash tool
binds the session (Claude Code gives that tool CLAUDE_CODE_SESSION_ID), continuations arrive as
Stop hook feedback, and runs end in `complete` or `halt-stall`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentcfg.claims import session_key
from tests.e2e.harness import Run, agentcfg, assert_complete, assert_stall, binary, drive, project

VERSIONS = ("2.1.328", "2.1.197")


def run_claude(tmp_path: Path, version: str, idle: bool) -> Run:
    claude = binary(f"claude-{version}", "claude")
    root, home, env = project(tmp_path)
    agentcfg(root, env, "hooks", "install", "--host", "claude")
    env = {
        **env,
        "ANTHROPIC_BASE_URL": "{url}",
        "ANTHROPIC_API_KEY": "sk-test-local",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    command = [str(claude), "-p", "Work through roadmaps/e2e.md.", "--allowedTools", "Bash"]
    run = drive("claude", root, home, env, command, idle)
    assert run.proc.returncode == 0, run.failure()
    return run


def session(run: Run) -> str:
    transcripts = list((run.home / ".claude" / "projects").glob("*/*.jsonl"))
    assert len(transcripts) == 1, transcripts
    return session_key(transcripts[0].stem)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_run_that_completes(tmp_path: Path, version: str) -> None:
    run = run_claude(tmp_path, version, idle=False)
    assert_complete(run, session(run))
    assert all(t.startswith("Stop hook feedback") for t in run.script.continuations())


@pytest.mark.parametrize("version", VERSIONS)
def test_a_run_that_never_progresses_halts_on_stall(tmp_path: Path, version: str) -> None:
    run = run_claude(tmp_path, version, idle=True)
    assert_stall(run, session(run))
    feedback = run.script.continuations()
    # The idle agent answers every continuation with the same words, and Claude Code may fire
    # Stop before its transcript grows, so a repeat can look like a second fire of one reply:
    # the duplicate rule then sends the same text again, uncounted, at most twice an engagement.
    assert 3 <= len(feedback) <= 9
    assert {re.search(r"iteration (\d+)/25", t).group(1) for t in feedback} == {"1", "2", "3"}  # type: ignore[union-attr]
