"""The real Claude Code, headless: a session that holds the e2e roadmap is compacted (`claude -c -p
/compact`), Claude Code fires SessionStart with source `compact`, and the hook `hooks install`
registered for it hands the claimed step and its verify line back into the compacted session."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.harness import agentcfg, binary, drive, project


def test_a_compaction_re_injects_the_claimed_step(tmp_path: Path) -> None:
    claude = str(binary("claude-2.1.328", "claude"))
    root, home, env = project(tmp_path)
    agentcfg(root, env, "hooks", "install", "--host", "claude")
    env = {
        **env, "ANTHROPIC_BASE_URL": "{url}", "ANTHROPIC_API_KEY": "sk-test-local",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
    }  # fmt: skip
    # an agent that claims the roadmap and then only talks: the run holds both steps open
    first = drive("claude", root, home, env, [claude, "-p", "Work through roadmaps/e2e.md.",
                                              "--allowedTools", "Bash"], idle=True)  # fmt: skip
    assert first.proc.returncode == 0, first.failure()
    (transcript,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    before = transcript.read_text().count("Your context was compacted")
    compact = drive("claude", root, home, env, [claude, "-c", "-p", "/compact"], idle=True)
    assert compact.proc.returncode == 0, compact.failure()
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    boundary = max(i for i, line in enumerate(lines) if line.get("subtype") == "compact_boundary")
    after = json.dumps(lines[boundary:])
    assert before == 0 and after.count("Your context was compacted") >= 1
    assert "Next step: **1.1** Prove the folder is there" in after
    assert "verify: test -d roadmaps" in after
    assert "agentcfg roadmap done e2e 1.1" in after
