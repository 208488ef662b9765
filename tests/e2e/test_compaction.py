"""A compaction re-injects the claimed step, on the real hosts, headless: Claude Code compacts a
session that holds the e2e roadmap on `claude -c -p /compact`; Codex compacts on its own in the
middle of a `codex exec` turn once the scripted model reports more tokens than its
`model_auto_compact_token_limit`. Each then fires SessionStart with source `compact`, and the
hook `hooks install` registered for it hands the claimed step and its verify line back into
the compacted session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcfg.claims import session_key
from agentcfg.hosts.codex import hook_hash
from tests.e2e.fake_model import USAGE
from tests.e2e.harness import REPO, Run, agentcfg, binary, drive, project
from tests.e2e.test_codex import codex_project, exec_codex


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


# --- Codex: a compaction in the middle of a turn ---

AUTO_COMPACT = "model_auto_compact_token_limit = 100\n"  # below what every scripted reply reports
RECORDER = "{{ cat; echo; }} >> {path}"  # a SessionStart hook keeping each payload, one a line
PAYLOAD = REPO / "tests" / "fixtures" / "codex-0.169.0" / "session-start-compact.json"


def record_starts(root: Path, codex_home: Path, path: Path) -> None:
    """Beside ours, a SessionStart group with no matcher (every source), trusted the way `hooks
    install --trust` trusts ours, that appends each payload Codex sends to `path`."""
    hooks_file = root / ".codex" / "hooks.json"
    document = json.loads(hooks_file.read_text())
    command = RECORDER.format(path=path)
    groups = document["hooks"]["SessionStart"]
    groups.append({"hooks": [{"type": "command", "command": command, "timeout": 30}]})
    hooks_file.write_text(json.dumps(document))
    key = f"{hooks_file}:session_start:{len(groups) - 1}:0"
    trusted = hook_hash(command, 30, "session_start")
    with (codex_home / "config.toml").open("a") as config:
        config.write(f'\n[hooks.state."{key}"]\ntrusted_hash = "{trusted}"\n')


def compacting_codex(tmp_path: Path, idle: bool) -> tuple[Run, list[dict[str, Any]], list[str]]:
    """One `codex exec` over the e2e roadmap that compacts after every reply ending in a tool
    call: (the run, its rollout's lines, the sources of each SessionStart Codex fired)."""
    root, home, codex_home, env = codex_project(tmp_path)
    config = codex_home / "config.toml"
    config.write_text(AUTO_COMPACT + config.read_text())
    agentcfg(root, env, "hooks", "install", "--host", "codex", "--trust")
    starts = tmp_path / "starts.jsonl"
    record_starts(root, codex_home, starts)
    run = exec_codex(root, home, env, idle)
    (rollout,) = (codex_home / "sessions").glob("*/*/*/rollout-*.jsonl")
    lines = [json.loads(line) for line in rollout.read_text().splitlines()]
    session = lines[0]["payload"]["id"]
    payloads = [json.loads(line) for line in starts.read_text().splitlines()]
    assert {(p["hook_event_name"], p["session_id"]) for p in payloads} == {
        ("SessionStart", session)
    }
    assert sorted(payloads[-1]) == sorted(json.loads(PAYLOAD.read_text()))  # the captured shape
    assert run.claimed_run() == session_key(session)
    # Codex asked for each summary in a request of its own, offering no tools
    assert all(
        s.startswith("You are performing a CONTEXT CHECKPOINT COMPACTION.")
        for s in run.script.summaries
    )
    # Codex counts the summaries' tokens in the session's totals, and so does the report
    report = json.loads(agentcfg(root, {"HOME": str(home)}, "report", "--json"))
    spent = USAGE["input"] + USAGE["cache_read"] + USAGE["output"]
    assert report["tokens"]["total"] == sum(run.script.reported) + spent * len(run.script.summaries)
    return run, lines, [p["source"] for p in payloads]


def told(lines: list[dict[str, Any]]) -> list[list[str]]:
    """The developer messages the rollout records after each of its compactions, in order, one
    list per compaction (those before the first one are Codex's own instructions)."""
    starts = [i for i, line in enumerate(lines) if line["type"] == "compacted"]
    developer = [
        (i, line["payload"]["content"][0]["text"]) for i, line in enumerate(lines)
        if line["type"] == "response_item" and line["payload"].get("role") == "developer"
    ]  # fmt: skip
    ends = [*starts[1:], len(lines)]
    return [
        [text for i, text in developer if start < i < end]
        for start, end in zip(starts, ends, strict=True)
    ]


def test_a_codex_compaction_re_injects_the_claimed_step(tmp_path: Path) -> None:
    # the agent claims the roadmap in its shell tool, then only talks: the claim's reply is past
    # the limit and ends in a tool call, so Codex compacts before it sends the tool's output
    run, lines, sources = compacting_codex(tmp_path, idle=True)
    assert len(run.script.summaries) == 1 and sources == ["startup", "compact"]
    (boundary,) = [i for i, line in enumerate(lines) if line["type"] == "compacted"]
    assert "sessions claim e2e" in json.dumps(lines[:boundary])  # compacted after the claim
    # our hook's context is in the compacted session, and only there, as a developer message
    assert "Your context was compacted" not in json.dumps(lines[:boundary])
    [(context,)] = told(lines)
    assert "Your context was compacted" in context
    assert "Next step: **1.1** Prove the folder is there" in context
    assert "verify: test -d roadmaps" in context
    assert "agentcfg roadmap done e2e 1.1" in context
    # the claim's tool output is summarised away: the model's next request ends on the step
    assert run.script.prompts[1] == context, run.script.prompts
    # and the run goes on as before: three continuations, then the stall halts it
    assert run.events() == ["trusted", "engage", "engage", "engage", "halt-stall"]


def test_a_codex_run_that_compacts_after_every_step_completes(tmp_path: Path) -> None:
    # the agent closes whatever step it is told of: every close is a tool call past the limit,
    # so each compaction's context is all it has to go on
    run, lines, sources = compacting_codex(tmp_path, idle=False)
    assert len(run.script.summaries) == 3 and sources == ["startup"] + ["compact"] * 3
    [(first,), (second,), (last,)] = told(lines)  # one context after each compaction
    assert all("Your context was compacted" in text for text in (first, second, last))
    assert "0 of 2 closed" in first and "Next step: **1.1**" in first
    assert "1 of 2 closed" in second and "Next step: **1.2**" in second
    assert "verify: echo second-step-ok" in second and "roadmap done e2e 1.2" in second
    assert "2 of 2 closed" in last and "No step is open" in last
    # the hook's words drove the run: it ends complete with no continuation needed
    steps = ["verified", "marked-done"] * 2
    assert run.events() == ["trusted", *steps, "reproof", "complete"]  # the last done re-proves
    assert run.script.continuations() == []
    assert "- [x] **1.1**" in run.roadmap() and "- [x] **1.2**" in run.roadmap()
