"""The real Claude Code binary, headless, against a scripted model: the hook that `hooks install`
writes fires, the claim made in the agent's Bash tool binds the session, continuations arrive
as Stop hook feedback, and runs end in `complete` or `halt-stall`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from agentcfg.claims import session_key
from tests.e2e.fake_model import Script, serve

REPO = Path(__file__).resolve().parents[2]
CLAUDE = REPO / ".e2e-cache" / "node_modules" / ".bin" / "claude"
AGENTCFG = str(Path(sys.executable).parent / "agentcfg")
ROADMAP = """---
execution: {mode: autonomous}
---
## Phase 1 — End to end
- [ ] **1.1** Prove the folder is there <!-- verify: test -d roadmaps -->
- [ ] **1.2** Say the second step is fine <!-- verify: echo second-step-ok -->
"""


def run_claude(tmp_path: Path, idle: bool) -> tuple[Path, Script, subprocess.CompletedProcess[str]]:
    assert CLAUDE.exists(), "run `make e2e`, which installs the pinned Claude Code first"
    root, home = tmp_path / "project", tmp_path / "home"
    (root / "roadmaps").mkdir(parents=True)
    home.mkdir()
    (root / "roadmaps" / "e2e.md").write_text(ROADMAP)
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
    }
    installed = subprocess.run(
        [AGENTCFG, "hooks", "install", "--host", "claude"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    script = Script("e2e", AGENTCFG, idle=idle)
    server = serve(script)
    try:
        proc = subprocess.run(
            [str(CLAUDE), "-p", "Work through roadmaps/e2e.md.", "--allowedTools", "Bash"],
            cwd=root,
            env={
                **env,
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}",
                "ANTHROPIC_API_KEY": "sk-test-local",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
            },
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    finally:
        server.shutdown()
    return root, script, proc


def ledger(root: Path) -> list[dict[str, object]]:
    path = root / "state" / "run-continuation.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def session_of(tmp_path: Path) -> str:
    transcripts = list((tmp_path / "home" / ".claude" / "projects").glob("*/*.jsonl"))
    assert len(transcripts) == 1, transcripts
    return transcripts[0].stem


def test_a_run_that_completes(tmp_path: Path) -> None:
    root, script, proc = run_claude(tmp_path, idle=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [e["event"] for e in ledger(root)]
    assert events[-1] == "complete", events
    assert events.count("engage") == 2
    session = session_of(tmp_path)
    claim_run = next(e["run"] for e in ledger(root) if e["event"] == "claimed")
    assert claim_run == session_key(session)  # the Bash tool's claim bound this very session
    feedback = [t for t in script.texts() if "Stop hook feedback" in t]
    assert any("Next step: **1.1**" in t and "verify: test -d roadmaps" in t for t in feedback)
    assert any("Next step: **1.2**" in t and "verify: echo second-step-ok" in t for t in feedback)
    assert "- [x] **1.1**" in (root / "roadmaps" / "e2e.md").read_text()
    assert "- [x] **1.2**" in (root / "roadmaps" / "e2e.md").read_text()


def test_a_run_that_never_progresses_halts_on_stall(tmp_path: Path) -> None:
    root, script, proc = run_claude(tmp_path, idle=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [e["event"] for e in ledger(root)]
    assert events.count("engage") == 3, events
    assert events[-1] == "halt-stall", events
    feedback = [t for t in script.texts() if "Stop hook feedback" in t]
    # The idle agent answers every continuation with the same words, and Claude Code may fire
    # Stop before its transcript grows, so a repeat can look like a second fire of one reply:
    # the duplicate rule then sends the same text again, uncounted, at most twice an engagement.
    assert 3 <= len(feedback) <= 9
    assert {re.search(r"iteration (\d+)/25", t).group(1) for t in feedback} == {"1", "2", "3"}  # type: ignore[union-attr]
