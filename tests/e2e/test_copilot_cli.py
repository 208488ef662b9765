"""The real Copilot CLI, headless, against a scripted model: the agentStop hook `hooks install`
writes fires in a trusted folder, the block comes back as JSON on stdout, the claim in the
agent's shell binds through COPILOT_AGENT_SESSION_ID, and Copilot's cap of 8 blocks a prompt
cuts a longer run short until the next prompt, which the ledger records.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from agentcfg.claims import session_key
from tests.e2e.more_hosts import AGENTCFG, events, host_binary, ledger, ticked, workspace
from tests.e2e.openai_model import USAGE, Script, serve


def copilot(
    root: Path, env: dict[str, str], script: Script, *prompt: str
) -> subprocess.CompletedProcess[str]:
    """One headless prompt. Project hooks fire only in a trusted folder: `--trust-folder` for a
    new session; `--continue` refuses that flag, so the continued one trusts through
    COPILOT_ALLOW_ALL."""
    server = serve(script)
    trust = ["--trust-folder"] if "--continue" not in prompt else []
    try:
        return subprocess.run(
            [host_binary("copilot"), *prompt, "--allow-all-tools", "--allow-all-paths",
             "--no-auto-update", *trust],
            cwd=root,
            env={**env, "COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_API_KEY": "sk-local",
                 "COPILOT_PROVIDER_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
                 "COPILOT_MODEL": "gpt-4.1", **({} if trust else {"COPILOT_ALLOW_ALL": "true"})},
            capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    finally:
        server.shutdown()


def session_of(env: dict[str, str]) -> tuple[str, Path]:
    (folder,) = (Path(env["HOME"]) / ".copilot" / "session-state").glob("*/events.jsonl")
    folder = folder.parent
    return folder.name, folder / "events.jsonl"


def test_a_long_run_is_cut_short_at_eight_then_completes_on_the_next_prompt(tmp_path: Path) -> None:
    root, env = workspace(tmp_path, "copilot", steps=10)
    script = Script("e2e", AGENTCFG)
    first = copilot(root, env, script, "-p", "Work through roadmaps/e2e.md.")
    assert first.returncode == 0, first.stderr[-2000:]
    # Copilot honours 8 blocks a prompt: it still runs the hook a ninth time, and ignores it
    first_events = events(root)
    assert first_events.count("engage") == 9 and ticked(root) == 8, first_events
    session, transcript = session_of(env)
    assert {e["run"] for e in ledger(root)} == {session_key(session)}  # the shell's claim bound it
    second = copilot(root, env, script, "--continue", "-p", "Go on.")
    assert second.returncode == 0, second.stderr[-2000:]
    seen = events(root)
    assert seen[0] == "claimed" and seen[-1] == "complete", seen
    assert seen.count("cut-short") == 1 and ticked(root) == 10, seen
    entries = ledger(root)
    cut = next(i for i, e in enumerate(entries) if e["event"] == "cut-short")
    first_turn = entries[1]["turn"]
    assert {e["turn"] for e in entries[1:cut] if e["event"] == "engage"} == {first_turn}
    assert entries[cut]["turn"] != first_turn  # told as the next prompt's turn ended
    continuations = script.continuations()
    assert [c.split("**")[1] for c in continuations] == [f"1.{n}" for n in range(1, 11)]
    # the host recorded the usage the scripted model reported, request by request
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    usage = [r["data"]["usage"] for r in records if r["type"] == "session.usage_record"]
    assert len(usage) == script.answers
    assert {(u["inputTokens"], u["outputTokens"]) for u in usage} == {
        (USAGE["prompt_tokens"], USAGE["completion_tokens"])
    }
    report = subprocess.run([AGENTCFG, "report", "--json"], cwd=root, env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert json.loads(report.stdout)["cut_short_by_host"] == 1


def test_a_run_that_never_progresses_halts_on_stall(tmp_path: Path) -> None:
    root, env = workspace(tmp_path, "copilot", steps=2)
    script = Script("e2e", AGENTCFG, idle=True)
    proc = copilot(root, env, script, "-p", "Work through roadmaps/e2e.md.")
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = events(root)
    assert seen[-1] == "halt-stall" and seen.count("engage") == 3, seen
    assert ticked(root) == 0
