"""`agentcfg run` driving the real Claude Code, Codex and Gemini CLI binaries, headless, against
scripted models: a plain run completes; a usage limit long enough that the host gives up ends
in one `paused-usage-limit` and a resume; a run the host cuts short is resumed to `complete`;
Ctrl-C at the driver leaves no host process and a ledger that reads back whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentcfg.claims import session_key
from agentcfg.core import report
from tests.e2e import more_hosts, openai_model
from tests.e2e.fake_model import Script, serve
from tests.e2e.harness import AGENTCFG, SLUG, TIMEOUT, agentcfg, binary, interrupt, project
from tests.e2e.limits import Limit
from tests.e2e.test_codex import CONFIG
from tests.helpers import ledger

LONG_ROADMAP = """---
execution: {mode: autonomous}
---
## Phase 1 — Many small steps
""" + "".join(f"- [ ] **1.{n}** Step {n} <!-- verify: echo step-{n} -->\n" for n in range(1, 6))


LONG_COMMAND = "python3 -c 'import time; time.sleep(300)'"


LINGER = 5.0  # seconds a lingering agent thinks: many times the driver's look at the ledger


class RunScript(Script):
    """The agent under `agentcfg run`: the driver claimed the roadmap already, so it only closes
    the step each continuation names, and ends its turn when it is shown none. `hesitate`: it
    answers the first so many continuations of each step with words only; `slow`: it runs a
    long shell command instead (for Ctrl-C); `crash`: closing that step kills the host;
    `linger`: the first time it is given that step it thinks for a while first (as a real
    agent does), time for a driver that moves each step to a new session to end this one."""

    def __init__(
        self,
        hesitate: int = 0,
        slow: bool = False,
        crash: str | None = None,
        linger: str | None = None,
    ) -> None:
        super().__init__(SLUG, AGENTCFG)
        self.hesitate, self.slow, self.crash, self.linger = hesitate, slow, crash, linger
        self.seen: dict[str, int] = {}

    def reply(self, text: str, after_tool: bool) -> tuple[str, str]:
        kind, value = super().reply(text, after_tool)
        if kind == "tool" and "sessions claim" in value:
            return "text", "Ready."
        if kind == "tool" and self.slow:
            return "tool", LONG_COMMAND
        if kind == "tool":
            step = value.rsplit(" ", 1)[-1]
            self.seen[step] = self.seen.get(step, 0) + 1
            if self.seen[step] <= self.hesitate:
                return "text", f"Looking at step {step} first."
            if step == self.crash and self.seen[step] == 1:  # the host dies under the agent
                return "tool", f"{value} && kill -KILL $PPID"
            if step == self.linger and self.seen[step] == 1:
                time.sleep(LINGER)
        return kind, value


@dataclass
class Driven:
    root: Path
    home: Path
    script: RunScript
    proc: subprocess.CompletedProcess[str]

    def ledger(self) -> list[dict[str, Any]]:
        return ledger(self.root, claims=True)

    def events(self) -> list[str]:
        return [e["event"] for e in self.ledger()]

    def ending(self) -> dict[str, Any]:
        return json.loads(self.proc.stdout)  # type: ignore[no-any-return]

    def failure(self) -> str:
        return (
            f"exit {self.proc.returncode}\n{self.proc.stdout[-3000:]}\n{self.proc.stderr[-4000:]}"
        )


def claude_setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    root, home, env = project(tmp_path)
    agentcfg(root, env, "hooks", "install", "--host", "claude")
    env = {
        **env,
        "PATH": f"{binary('claude-2.1.328', 'claude').parent}:{env['PATH']}",
        "ANTHROPIC_BASE_URL": "{url}",
        "ANTHROPIC_API_KEY": "sk-test-local",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    return root, home, env


def codex_setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    root, home, env = project(tmp_path)
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CONFIG)
    env = {**env, "CODEX_HOME": str(codex_home)}
    agentcfg(root, env, "hooks", "install", "--host", "codex", "--trust")
    env = {
        **env,
        "PATH": f"{binary('codex-0.169.0', 'codex').parent}:{env['PATH']}",
        "FAKE_API_KEY": "test-local",
    }
    return root, home, env


def gemini_setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    root, home, env = project(tmp_path)
    settings = home / ".gemini"
    settings.mkdir()
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (settings / "settings.json").write_text(json.dumps(auth))
    (settings / "trustedFolders.json").write_text(json.dumps({str(root): "TRUST_FOLDER"}))
    agentcfg(root, env, "hooks", "install", "--host", "gemini")
    env = {
        **env,
        "PATH": f"{binary('gemini-0.61.0', 'gemini').parent}:{env['PATH']}",
        "GEMINI_API_KEY": "test-local",
        "GOOGLE_GEMINI_BASE_URL": "{url}",
    }
    return root, home, env


SETUPS = {"claude": claude_setup, "codex": codex_setup, "gemini": gemini_setup}
# what each host needs after `--` to run headless against the scripted model
EXTRA = {
    "claude": ["--allowedTools", "Bash"],
    "codex": ["--skip-git-repo-check", "-c", 'model_providers.fake.base_url="{url}/v1"'],
    "gemini": ["--approval-mode", "yolo", "-m", "gemini-2.5-pro"],
}


@contextmanager
def model(host: str, script: RunScript, limit: Limit | None = None) -> Iterator[str]:
    server = serve(script, host, limit)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def command(host: str, url: str, *options: str) -> list[str]:
    extra = [word.replace("{url}", url) for word in EXTRA[host]]
    return [AGENTCFG, "run", SLUG, "--host", host, "--json", *options, "--", *extra]


def with_url(env: dict[str, str], url: str) -> dict[str, str]:
    return {k: v.replace("{url}", url) for k, v in env.items()}


def drive(
    host: str,
    tmp_path: Path,
    *options: str,
    script: RunScript | None = None,
    limit: Limit | None = None,
    roadmap: str | None = None,
    env_extra: dict[str, str] | None = None,
) -> Driven:
    root, home, env = SETUPS[host](tmp_path)
    if roadmap is not None:
        (root / "roadmaps" / f"{SLUG}.md").write_text(roadmap)
        agentcfg(root, env, "roadmap", "trust", SLUG)
    script = script or RunScript()
    with model(host, script, limit) as url:
        proc = subprocess.run(
            command(host, url, *options),
            cwd=root,
            env={**with_url(env, url), **(env_extra or {})},
            capture_output=True,
            text=True,
            timeout=TIMEOUT * 2,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    return Driven(root, home, script, proc)


def assert_complete(run: Driven, steps: int = 2) -> None:
    assert run.proc.returncode == 0, run.failure()
    ending = run.ending()
    assert ending["ending"] == "complete", ending
    assert ending["steps_closed"] == steps
    roadmap = (run.root / "roadmaps" / f"{SLUG}.md").read_text()
    assert roadmap.count("- [x]") == steps and "- [ ]" not in roadmap
    events = run.events()
    assert events[-2:] == ["complete", "reproof"], events  # the driver's own re-proof last
    assert events.count("run-start") == 1, events
    # one engagement line per engagement of the run on the terminal, then the ending
    assert run.proc.stderr.count("· step 1.") == events.count("engage"), run.proc.stderr
    assert "agentcfg run: complete — roadmap `e2e` (exit 0)" in run.proc.stderr


@pytest.mark.parametrize("host", ["claude", "codex", "gemini"])
def test_a_plain_run_ends_complete(tmp_path: Path, host: str) -> None:
    run = drive(host, tmp_path)
    assert_complete(run)
    assert run.ending()["starts"] == 1 and run.ending()["restarts"] == 0
    started = next(e for e in run.ledger() if e["event"] == "run-start")
    assert started["host"] == host
    session = run.ending()["session"]
    if host == "codex":  # no session id of ours: the token in the first prompt bound the claim
        assert started["session"] is None and started["pending"]
        assert "agentcfg-claim-" not in json.dumps(run.ledger())  # the token is never written
        bound = [e for e in run.ledger() if e["event"] == "claimed" and e.get("pending")]
        assert [e["pending"] for e in bound] == [started["pending"]]
        assert bound[0]["run"] == session_key(session)
    else:
        assert started["session"] == session and started["run"] == session_key(session)


def assert_paused_once(run: Driven) -> dict[str, Any]:
    """One pause at a usage limit, then a resume of the same session, then `complete`; the resume."""
    events = run.events()
    assert events.count("paused-usage-limit") == 1, events
    assert (
        events.index("paused-usage-limit") < events.index("run-resume") < events.index("complete")
    )
    resumed: dict[str, Any] = next(e for e in run.ledger() if e["event"] == "run-resume")
    assert (resumed["reason"], resumed["same_session"]) == ("usage-limit", True)
    assert run.ending()["restarts"] == 1
    assert "paused at a usage limit" in run.proc.stderr
    return resumed


def test_a_usage_limit_pauses_then_resumes_to_complete(tmp_path: Path) -> None:
    # one refusal announcing a reset 120 s away: too far for Claude Code to wait for in-process
    limit = Limit(requests=1, reset_in=120)
    run = drive("claude", tmp_path, "--max-wait", "2s", limit=limit)
    assert len(limit.refused) == 1
    assert_complete(run)
    assert_paused_once(run)


def test_a_run_the_host_cuts_short_resumes_to_complete(tmp_path: Path) -> None:
    run = drive(
        "claude",
        tmp_path,
        script=RunScript(hesitate=2),
        roadmap=LONG_ROADMAP,
        env_extra={"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "2"},
    )
    assert_complete(run, steps=5)
    # each step's third continuation in a row met the cap of 2: Claude Code ended the prompt
    resumes = [e for e in run.ledger() if e["event"] == "run-resume"]
    assert len(resumes) == 5 == run.events().count("cut-short"), run.events()
    assert {(e["reason"], e["same_session"]) for e in resumes} == {("cut-short", True)}
    assert run.ending()["restarts"] == 5
    assert run.proc.stderr.count("(the host ended with work open)") == 5


def host_processes(root: Path) -> list[str]:
    """The processes still working in the project folder (the host and anything it started)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and Path(os.readlink(proc / "cwd")).is_relative_to(root):
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


def test_ctrl_c_leaves_no_host_process_and_a_whole_ledger(tmp_path: Path) -> None:
    root, _, env = claude_setup(tmp_path)
    before = (root / "roadmaps" / f"{SLUG}.md").read_text()
    with model("claude", RunScript(slow=True)) as url:
        driver = subprocess.Popen(
            command("claude", url),
            cwd=root,
            env=with_url(env, url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + TIMEOUT
        while not any("time.sleep(300)" in p for p in host_processes(root)):
            assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()
            time.sleep(0.2)
        stdout, stderr = interrupt(driver)  # within the driver's bound, and a stated margin
    assert driver.returncode == 130, stderr
    assert host_processes(root) == []
    assert json.loads(stdout)["ending"] == "interrupted"
    assert "agentcfg run: interrupted — roadmap `e2e` (exit 130)" in stderr
    lines = (root / "state" / "run-continuation.jsonl").read_text().splitlines()
    ledger = [json.loads(line) for line in lines]  # every line whole
    assert ledger[-1]["event"] == "interrupted" and ledger[-1]["by"] == "terminal"
    assert ledger[-1]["run"] == next(e["run"] for e in ledger if e["event"] == "run-start")
    assert (root / "roadmaps" / f"{SLUG}.md").read_text() == before
    report = json.loads(agentcfg(root, env, "report", "--json"))
    assert report["rows"][-1]["outcome"] == "interrupted"
    sessions = json.loads(agentcfg(root, env, "sessions", "list", "--json"))
    assert [s["slug"] for s in sessions] == [SLUG]  # the claim is kept: nothing was lost


class LimitAt(Limit):
    """The provider's usage limit met by one model request in the middle of the run: the
    `at`-th request (counting from 1) is refused, the others answered."""

    def __init__(self, at: int, reset_in: float = 120.0) -> None:
        super().__init__(reset_in=reset_in)
        self.at, self.seen = at, 0

    def refuses(self) -> bool:
        with self.lock:
            self.seen += 1
            if self.seen == self.at:
                self.refused.append(time.time())
                return True
            self.passed += 1
            return False


def test_codex_at_its_usage_limit_is_resumed_in_the_same_session(tmp_path: Path) -> None:
    # the third request is the first continuation the stop hook sent: the session is bound
    limit = LimitAt(3)
    run = drive("codex", tmp_path, "--max-wait", "2s", limit=limit)
    assert len(limit.refused) == 1, run.failure()
    assert_complete(run)
    events = run.events()
    assert events.count("paused-usage-limit") == 1, events
    resumed = next(e for e in run.ledger() if e["event"] == "run-resume")
    assert (resumed["reason"], resumed["same_session"]) == ("usage-limit", True)
    assert resumed["session"] == run.ending()["session"]
    rollouts = list((tmp_path / "codex-home" / "sessions").glob("*/*/*/rollout-*.jsonl"))
    assert len(rollouts) == 1, rollouts  # `codex exec resume` carried the one session on


def test_gemini_killed_mid_run_is_resumed_in_the_same_session(tmp_path: Path) -> None:
    run = drive("gemini", tmp_path, "--max-wait", "1s", script=RunScript(crash="1.1"))
    assert_complete(run)
    resumed = [e for e in run.ledger() if e["event"] == "run-resume"]
    assert [(e["reason"], e["same_session"]) for e in resumed] == [("crash", True)], run.events()
    assert "restart 1 of gemini on `e2e` (the host failed)" in run.proc.stderr
    chats = list((run.home / ".gemini" / "tmp").glob("*/chats/session-*.json*"))
    sessions = {json.loads(c.read_text().splitlines()[0])["sessionId"] for c in chats}
    assert sessions == {run.ending()["session"]}, chats  # `gemini --resume` kept the one session


def test_fresh_per_step_works_each_step_in_a_session_of_its_own(tmp_path: Path) -> None:
    # the first session is told 1.2 once 1.1 is closed, and is ended before it acts on it
    run = drive("claude", tmp_path, "--fresh-per-step", script=RunScript(linger="1.2"))
    assert_complete(run)
    starts = [e for e in run.ledger() if e["event"] in ("run-start", "run-resume")]
    assert [e["reason"] for e in starts] == ["start", "next-step"], run.events()
    sessions = [e["session"] for e in starts]
    assert len(set(sessions)) == 2 and sessions[-1] == run.ending()["session"]
    assert (run.ending()["restarts"], run.ending()["starts"]) == (0, 2)
    # the second session began with the relay note: status, receipt, then the continuation
    second = run.home / ".claude" / "projects"
    transcript = next(second.glob(f"*/{sessions[1]}.jsonl")).read_text()
    assert "this new session carries on the run on roadmap `e2e`" in transcript
    assert "Last receipts" in transcript and "1.1 passed at" in transcript
    assert "Next step: **1.2**" in transcript
    proofs = [(e["step"], e["run"]) for e in run.ledger() if e["event"] == "verified"]
    assert proofs == [("1.1", session_key(sessions[0])), ("1.2", session_key(sessions[1]))]
    # the report tells one run, closed in both sessions, as the driver's ending does
    (row,) = report.build(json.dumps(e) for e in run.ledger()).to_json()["rows"]
    assert (row["outcome"], row["closed"], row["burndown"][-1]) == ("complete", 2, 0)
    assert run.ending()["run"]["run"] == row["run"] == session_key(sessions[0])


def drive_openai(host: str, tmp_path: Path, steps: int, env: dict[str, str], *extra: str) -> Driven:
    """`agentcfg run` on Qwen Code or Copilot CLI against the chat-completions scripted model."""
    root, base = more_hosts.workspace(tmp_path, host, steps)
    return run_openai(host, root, base, env, openai_model.Script(SLUG, AGENTCFG), *extra)


def run_openai(
    host: str,
    root: Path,
    base: dict[str, str],
    env: dict[str, str],
    script: openai_model.Script,
    *extra: str,
) -> Driven:
    """`agentcfg run` in a project `more_hosts.workspace` made, `script` playing the model."""
    server = openai_model.serve(script)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    path = f"{Path(more_hosts.host_binary(host)).parent}:{base['PATH']}"
    try:
        proc = subprocess.run(
            [AGENTCFG, "run", SLUG, "--host", host, "--json", "--", *extra],
            cwd=root,
            env={**base, "PATH": path, **{k: v.replace("{url}", url) for k, v in env.items()}},
            capture_output=True, text=True, timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL,
            check=False,
        )  # fmt: skip
    finally:
        server.shutdown()
    return Driven(root, Path(base["HOME"]), RunScript(), proc)


def test_qwen_code_runs_unattended_to_complete(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-local", "OPENAI_MODEL": "m", "OPENAI_BASE_URL": "{url}",
           "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}  # fmt: skip
    run = drive_openai("qwen", tmp_path, 2, env, "--auth-type", "openai", "--approval-mode", "yolo")
    assert_complete(run)
    started = next(e for e in run.ledger() if e["event"] == "run-start")
    assert started["run"] == session_key(run.ending()["session"])  # --session-id named it


def test_copilot_cut_short_by_its_block_cap_is_resumed_to_complete(tmp_path: Path) -> None:
    env = {"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_API_KEY": "sk-local",
           "COPILOT_PROVIDER_BASE_URL": "{url}", "COPILOT_MODEL": "gpt-4.1",
           "COPILOT_ALLOW_ALL": "true"}  # fmt: skip
    extra = ("--allow-all-tools", "--allow-all-paths", "--no-auto-update")
    run = drive_openai("copilot", tmp_path, 10, env, *extra)
    assert_complete(run, steps=10)
    resumes = [e for e in run.ledger() if e["event"] == "run-resume"]
    assert [(e["reason"], e["same_session"]) for e in resumes] == [("cut-short", True)]


def test_gemini_at_its_usage_limit_is_resumed_in_the_same_session(tmp_path: Path) -> None:
    """One refusal announcing a `retryDelay` of 400 s: above the 300 s Gemini CLI waits out
    in-process, so it exits 1 at once with `TerminalQuotaError … Suggested retry after 400s.`,
    the driver reads the reset from that and resumes the same session once it has passed
    (`--max-wait 2s` caps the wait). The refusal meets the third request, after a model turn
    is saved (the next test refuses the first)."""
    limit = LimitAt(3, reset_in=400)
    run = drive("gemini", tmp_path, "--max-wait", "2s", limit=limit)
    assert len(limit.refused) == 1, run.failure()
    assert_complete(run)
    resumed = assert_paused_once(run)
    assert resumed["session"] == run.ending()["session"]
    paused = next(e for e in run.ledger() if e["event"] == "paused-usage-limit")
    assert paused["reset_at"], paused  # read from `Suggested retry after 400s.`


def test_gemini_refused_at_its_first_request_carries_on_in_a_new_session(tmp_path: Path) -> None:
    """Refused at its very first request, Gemini CLI 0.61.0 saves a session of user messages
    only, and each `--resume` of it exits non-zero: after the second such crash in a row the
    driver starts a new session, claimed afresh, which completes the run."""
    limit = LimitAt(1, reset_in=400)
    run = drive("gemini", tmp_path, "--max-wait", "2s", limit=limit)
    assert len(limit.refused) == 1, run.failure()
    assert_complete(run)
    resumes = [e for e in run.ledger() if e["event"] == "run-resume"]
    assert [(e["reason"], e["same_session"]) for e in resumes] == [
        ("usage-limit", True), ("crash", True), ("crash", False)
    ], run.events()  # fmt: skip
    assert resumes[0]["session"] == resumes[1]["session"] != resumes[2]["session"]
    assert run.ending()["session"] == resumes[2]["session"]
