"""The real Qwen Code, headless, against a scripted model: the Claude-style Stop hook `hooks
install` writes fires, exit 2 hands the continuation to the model, the claim in the agent's shell
binds through QWEN_CODE_SESSION_ID, and the block cap install raised lets one prompt run past
Qwen's default of 8 continuations.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from agentcfg.claims import session_key
from tests.e2e.more_hosts import AGENTCFG, events, host_binary, ledger, ticked, workspace
from tests.e2e.openai_model import Script, serve


def qwen(root: Path, env: dict[str, str], script: Script) -> subprocess.CompletedProcess[str]:
    server = serve(script)
    try:
        return subprocess.run(
            [host_binary("qwen"), "Work through roadmaps/e2e.md.", "--auth-type", "openai",
             "--approval-mode", "yolo"],
            cwd=root,
            env={**env, "OPENAI_API_KEY": "sk-local", "OPENAI_MODEL": "m",
                 "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
                 "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"},
            capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    finally:
        server.shutdown()


def test_a_run_longer_than_the_default_cap_completes_in_one_prompt(tmp_path: Path) -> None:
    root, env = workspace(tmp_path, "qwen", steps=10)
    script = Script("e2e", AGENTCFG)
    proc = qwen(root, env, script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = events(root)
    assert seen[0] == "claimed" and seen[-1] == "complete", seen
    assert seen.count("engage") == 10 and ticked(root) == 10
    (chat,) = (Path(env["HOME"]) / ".qwen" / "projects").glob("*/chats/*.jsonl")
    assert {e["run"] for e in ledger(root)} == {session_key(chat.stem)}  # the shell's claim
    turns = {e["turn"] for e in ledger(root) if e["event"] == "engage"}
    assert len(turns) == 1 and turns.pop().endswith("########0")  # one prompt throughout
    assert [c.split("**")[1] for c in script.continuations()] == [f"1.{n}" for n in range(1, 11)]


def test_a_run_that_never_progresses_halts_on_stall(tmp_path: Path) -> None:
    root, env = workspace(tmp_path, "qwen", steps=2)
    proc = qwen(root, env, Script("e2e", AGENTCFG, idle=True))
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = events(root)
    assert seen[-1] == "halt-stall" and seen.count("engage") == 3, seen
    assert ticked(root) == 0
