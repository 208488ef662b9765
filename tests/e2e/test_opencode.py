"""The real OpenCode, headless under `opencode serve` with `opencode run --attach`, against a
scripted model: the plugin `hooks install` writes answers each idle of the session, continues it
with the hook's text, gives the agent's shell OPENCODE_SESSION_ID for the claim, and lets the
session rest when the run ends.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentcfg.claims import session_key
from tests.e2e.harness import CACHE, TIMEOUT, interrupt
from tests.e2e.limits import Limit
from tests.e2e.more_hosts import AGENTCFG, events, host_binary, ledger, ticked, workspace
from tests.e2e.openai_model import USAGE, Script, serve
from tests.e2e.test_run import LONG_COMMAND, host_processes

# OpenCode installs its plugin package into every config folder it loads at start (64 MB from
# the registry); a pinned copy made once by `make e2e` spares each run that download.
PLUGIN_DEPS = CACHE / "opencode-plugin-1.18.33"
QUIET = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}  # fmt: skip


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read() or b"null")


def post(url: str, body: object) -> Any:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=240) as response:
        return json.loads(response.read() or b"null")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def configure(root: Path, env: dict[str, str], model: str) -> dict[str, str]:
    """OpenCode in the project answered by the scripted model at `model` (its base URL), its
    plugin package in place; the environment to run it in."""
    (root / "opencode.json").write_text(json.dumps({
        "provider": {"fake": {
            "npm": "@ai-sdk/openai-compatible", "name": "fake",
            "options": {"baseURL": f"{model}/v1", "apiKey": "sk-local"},
            "models": {"m": {"name": "m", "tool_call": True}},
        }},
        "model": "fake/m", "small_model": "fake/m", "permission": {"bash": "allow"},
    }))  # fmt: skip
    for folder in (root / ".opencode", Path(env["HOME"]) / ".config" / "opencode"):
        shutil.copytree(PLUGIN_DEPS, folder, dirs_exist_ok=True)
    return {**env, **QUIET}


@contextmanager
def served(root: Path, env: dict[str, str], script: Script) -> Iterator[tuple[str, dict[str, str]]]:
    """`opencode serve` in the project, answered by the scripted model: its URL and env."""
    model = serve(script)
    env = configure(root, env, f"http://127.0.0.1:{model.server_address[1]}")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [host_binary("opencode"), "serve", "--port", str(port), "--hostname", "127.0.0.1"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                get(url + "/session/status")
                break
            except OSError:
                time.sleep(0.3)
        yield url, env
    finally:
        server.terminate()
        server.wait(30)
        model.shutdown()


def settle(url: str) -> None:
    """Wait until every session stays idle, with no continuation due."""
    quiet, deadline = 0, time.monotonic() + 240
    while quiet < 8 and time.monotonic() < deadline:
        quiet = quiet + 1 if get(url + "/session/status") == {} else 0
        time.sleep(0.5)


def opencode(root: Path, env: dict[str, str], script: Script) -> list[dict[str, Any]]:
    """One prompt through a served OpenCode, waited on until the session stays idle; the
    session's messages."""
    with served(root, env, script) as (url, env):
        run = subprocess.run(
            [host_binary("opencode"), "run", "--attach", url, "--dir", str(root), "--format", "json",
             "Work through roadmaps/e2e.md."],
            cwd=root, env=env, capture_output=True, text=True, timeout=180,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        settle(url)
        (session,) = get(url + "/session")
        messages: list[dict[str, Any]] = get(f"{url}/session/{session['id']}/message")
        return messages


def test_a_run_that_completes(tmp_path: Path) -> None:
    root, env = workspace(tmp_path, "opencode", steps=3)
    script = Script("e2e", AGENTCFG)
    messages = opencode(root, env, script)
    seen = events(root)
    assert seen[0] == "claimed" and seen[-1] == "complete", seen
    assert seen.count("engage") == 3 and ticked(root) == 3
    session = messages[0]["info"]["sessionID"]
    assert {e["run"] for e in ledger(root)} == {session_key(session)}  # the shell's claim bound it
    assert {e["turn"] for e in ledger(root) if e["event"] == "engage"} == {
        messages[0]["info"]["id"]
    }
    assert [c.split("**")[1] for c in script.continuations()] == ["1.1", "1.2", "1.3"]
    replies = [m["info"] for m in messages if m["info"]["role"] == "assistant"]
    assert len(replies) == script.answers  # every answer of the agent's turn, and no more
    assert {(r["tokens"]["input"], r["tokens"]["output"]) for r in replies} == {
        (USAGE["prompt_tokens"], USAGE["completion_tokens"])
    }


def test_a_run_that_never_progresses_halts_on_stall(tmp_path: Path) -> None:
    root, env = workspace(tmp_path, "opencode", steps=2)
    messages = opencode(root, env, Script("e2e", AGENTCFG, idle=True))
    seen = events(root)
    assert seen[-1] == "halt-stall" and seen.count("engage") == 3, seen
    assert ticked(root) == 0
    last = messages[-1]
    assert last["info"]["role"] == "assistant"  # the session rests after the halt


def test_the_same_words_in_two_replies_are_two_replies(tmp_path: Path) -> None:
    """Steps closed with --no-verify, each followed by "That step is done.": the gate refuses
    the first once, and the second reply of the same words, a new message, is continued as
    its own reply, not taken for the one refused (OpenCode has no transcript to tell them
    apart: the plugin sends the reply's message id). Boxes ticked without a proof never make
    the run complete: it keeps naming them until the stall rung halts it, told."""
    root, env = workspace(tmp_path, "opencode", steps=3)
    script = Script("e2e", AGENTCFG, no_verify=True)
    opencode(root, env, script)
    seen = events(root)
    # the refusal's own fire defers to it; every later reply is continued, to a told ending
    assert seen[:6] == [
        "claimed", "engage", "refused", "deferred-quality-gate", "engage", "engage"
    ], seen  # fmt: skip
    assert seen[-1] == "halt-stall" and "complete" not in seen, seen
    replies = [e["reply"] for e in ledger(root) if e["event"] == "engage"]
    assert len(set(replies)) == len(replies) >= 3


# --- `agentcfg run --host opencode`: the driver serves OpenCode itself ---


def drive(
    tmp_path: Path,
    steps: int,
    *options: str,
    script: Script | None = None,
    limit: Limit | None = None,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """`agentcfg run e2e --host opencode --json` on a project of `steps` steps; the project and
    the driver's process."""
    root, env = workspace(tmp_path, "opencode", steps)
    model = serve(script or Script("e2e", AGENTCFG), limit)
    try:
        env = configure(root, env, f"http://127.0.0.1:{model.server_address[1]}")
        env["PATH"] = f"{Path(host_binary('opencode')).parent}:{env['PATH']}"
        proc = subprocess.run(
            [AGENTCFG, "run", "e2e", "--host", "opencode", "--json", *options],
            cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT * 2,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    finally:
        model.shutdown()
    return root, proc


def test_agentcfg_run_serves_opencode_to_complete(tmp_path: Path) -> None:
    root, proc = drive(tmp_path, steps=2)
    assert proc.returncode == 0, proc.stderr[-4000:]
    ending = json.loads(proc.stdout)
    assert (ending["ending"], ending["steps_closed"], ending["starts"]) == ("complete", 2, 1)
    session = ending["session"]
    assert session.startswith("ses_")  # the run's server made the session the claim names
    started = next(e for e in ledger(root) if e["event"] == "run-start")
    assert (started["host"], started["session"], started["pending"]) == ("opencode", session, None)
    assert {e["run"] for e in ledger(root)} == {session_key(session)}
    seen = events(root)
    # the driver's first prompt names step 1.1; the plugin's continuation, step 1.2
    # the last `roadmap done` re-proves before the hook's complete, the driver after it
    assert seen == ["claimed", "run-start", "engage", "reproof", "complete", "reproof"], seen
    assert ticked(root) == 2
    assert proc.stderr.count("· step 1.") == 1, proc.stderr  # one line per engagement
    assert "agentcfg run: complete — roadmap `e2e` (exit 0)" in proc.stderr
    assert host_processes(root) == []  # the server went with the run


# --- after a compaction the plugin gives the session its step back ---


def text_of(message: dict[str, Any]) -> str:
    return "\n".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")


def test_a_compaction_gives_the_session_its_step_back(tmp_path: Path) -> None:
    """A claimed session with one prompt, compacted through the server's summarize: the plugin
    runs `hook session-start` on `session.compacted` and adds its text to the session with
    no reply, before the idle that follows is continued; the model sees it next."""
    root, env = workspace(tmp_path, "opencode", steps=2)
    script = Script("e2e", AGENTCFG)
    with served(root, env, script) as (url, env):
        query = urllib.parse.urlencode({"directory": str(root)})
        session = post(f"{url}/session?{query}", {})["id"]
        claimed = subprocess.run(
            [AGENTCFG, "sessions", "claim", "e2e", "--session", session],
            cwd=root, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert claimed.returncode == 0, claimed.stderr
        prompt = {"noReply": True, "parts": [{"type": "text", "text": "Plan: roadmaps/e2e.md."}]}
        post(f"{url}/session/{session}/message?{query}", prompt)
        post(f"{url}/session/{session}/summarize?{query}", {"providerID": "fake", "modelID": "m"})
        settle(url)
        messages: list[dict[str, Any]] = get(f"{url}/session/{session}/message")
    users = [(m["info"]["id"], text_of(m)) for m in messages if m["info"]["role"] == "user"]
    back = [(i, t) for i, t in users if t.startswith("agentcfg: this session holds")]
    assert len(back) == 1, users
    text = back[0][1]
    assert "roadmap `e2e`" in text and "Next step: **1.1**" in text, text
    assert "verify: test -d roadmaps" in text, text
    summary = next(i for i, m in enumerate(messages) if m["info"].get("summary") is True)
    order = [m["info"]["id"] for m in messages]
    assert summary < order.index(back[0][0]), order  # added after the compaction's summary
    # the continuation came after it, and the model saw the step in the compacted session
    continued = [i for i, t in users if t.startswith("run-continuation:")]
    assert continued and order.index(continued[0]) > order.index(back[0][0]), users
    asked = [json.dumps(b["messages"]) for b in script.requests if b.get("tools")]
    assert any("agentcfg: this session holds" in a for a in asked)
    assert events(root)[-1] == "complete" and ticked(root) == 2


def test_agentcfg_run_pauses_opencode_at_a_usage_limit_then_completes(tmp_path: Path) -> None:
    """The provider refuses every request for 25 s, announcing a reset 2 s away: OpenCode's
    server retries after each `retry-after` (9 refusals in about 8 s seen), gives up, and the
    session rests on the error (the plugin does not continue a reply that ended on one). The
    driver reads the limit from the session's messages, pauses once (the reset it tells, 1 s
    after the last refusal, is already past, so it backs off, capped at 30 s) and resumes the
    same session after the refusals have ended."""
    limit = Limit(seconds=25, reset_in=2)
    root, proc = drive(tmp_path, 2, "--max-wait", "30s", limit=limit)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert limit.refused, "the provider never refused"
    ending = json.loads(proc.stdout)
    assert (ending["ending"], ending["steps_closed"], ending["restarts"]) == ("complete", 2, 1)
    seen = [e["event"] for e in ledger(root)]
    assert seen.count("paused-usage-limit") == 1, seen
    assert seen.index("paused-usage-limit") < seen.index("run-resume") < seen.index("complete")
    resumed = next(e for e in ledger(root) if e["event"] == "run-resume")
    assert (resumed["reason"], resumed["same_session"]) == ("usage-limit", True)
    assert resumed["session"] == ending["session"]
    assert "paused at a usage limit" in proc.stderr
    assert host_processes(root) == []


class Slow(Script):
    """The agent runs a long shell command instead of closing its step."""

    def reply(self, body: dict[str, Any]) -> tuple[str, str]:
        kind, value = super().reply(body)
        return (kind, LONG_COMMAND) if "roadmap done" in value else (kind, value)


def test_ctrl_c_at_agentcfg_run_leaves_no_opencode_process(tmp_path: Path) -> None:
    root, env = workspace(tmp_path, "opencode", steps=2)
    model = serve(Slow("e2e", AGENTCFG))
    try:
        env = configure(root, env, f"http://127.0.0.1:{model.server_address[1]}")
        env["PATH"] = f"{Path(host_binary('opencode')).parent}:{env['PATH']}"
        driver = subprocess.Popen(
            [AGENTCFG, "run", "e2e", "--host", "opencode", "--json"],
            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + TIMEOUT
        while not any("time.sleep(300)" in p for p in host_processes(root)):
            assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()
            time.sleep(0.2)
        assert any(" serve " in p for p in host_processes(root))  # the run's server, and
        assert any(" run --attach " in p for p in host_processes(root))  # its attached start
        stdout, stderr = interrupt(driver, server=True)  # the driver's bound, a stated margin
    finally:
        model.shutdown()
    assert driver.returncode == 130, stderr
    assert host_processes(root) == []
    assert json.loads(stdout)["ending"] == "interrupted"
    last = ledger(root)[-1]
    assert (last["event"], last["by"]) == ("interrupted", "terminal")
    assert ticked(root) == 0


class Deliberate(Script):
    """The agent takes a few seconds over closing step 1.2, as a real model would: the scripted
    one answers at once, before the driver has seen the session move on to that step."""

    def reply(self, body: dict[str, Any]) -> tuple[str, str]:
        kind, value = super().reply(body)
        if value.endswith(" roadmap done e2e 1.2"):
            time.sleep(3)
        return kind, value


def test_fresh_per_step_gives_each_step_an_opencode_session_of_its_own(tmp_path: Path) -> None:
    """Once step 1.1 is closed and the plugin engages the session on 1.2, the driver aborts
    that session's work on the server and makes a new session for the rest, seeded with the
    relay note."""
    root, proc = drive(tmp_path, 2, "--fresh-per-step", script=Deliberate("e2e", AGENTCFG))
    assert proc.returncode == 0, proc.stderr[-4000:]
    ending = json.loads(proc.stdout)
    assert (ending["ending"], ending["steps_closed"], ending["starts"]) == ("complete", 2, 2)
    starts = [e for e in ledger(root) if e["event"] in ("run-start", "run-resume")]
    assert [e["reason"] for e in starts] == ["start", "next-step"], events(root)
    first, second = (e["session"] for e in starts)
    assert first != second == ending["session"] and second.startswith("ses_")
    proofs = [(e["step"], e["run"]) for e in ledger(root) if e["event"] == "verified"]
    assert proofs == [("1.1", session_key(first)), ("1.2", session_key(second))]
    assert host_processes(root) == []
