"""What every real-host run shares: a project with a two-step roadmap, a home folder of its own,
the hook installed by `agentcfg hooks install`, a scripted model, and the ledger read back.

The host runs with no session variable set by the test: the claim the scripted model makes
through the host's own shell tool has to find its session by itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.fake_model import Script, serve
from tests.e2e.limits import Limit

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".e2e-cache"
AGENTCFG = str(Path(sys.executable).parent / "agentcfg")
SLUG = "e2e"
ROADMAP = """---
execution: {mode: autonomous}
---
## Phase 1 — End to end
- [ ] **1.1** Prove the folder is there <!-- verify: test -d roadmaps -->
- [ ] **1.2** Say the second step is fine <!-- verify: echo second-step-ok -->
"""
TIMEOUT = 240  # seconds a host may take for one headless run


def binary(package: str, name: str) -> Path:
    """A pinned host binary that `make e2e` installed into the cache."""
    path = CACHE / package / "node_modules" / ".bin" / name
    assert path.exists(), f"run `make e2e`, which installs {package} first"
    return path


@dataclass
class Run:
    root: Path
    home: Path
    script: Script
    proc: subprocess.CompletedProcess[str]

    def ledger(self) -> list[dict[str, Any]]:
        path = self.root / "state" / "run-continuation.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        return [json.loads(line) for line in lines]

    def events(self) -> list[str]:
        return [e["event"] for e in self.ledger() if e["event"] != "claimed"]

    def claimed_run(self) -> str:
        claimed = [e for e in self.ledger() if e["event"] == "claimed"]
        assert len(claimed) == 1, self.ledger()
        return str(claimed[0]["run"])

    def roadmap(self) -> str:
        return (self.root / "roadmaps" / f"{SLUG}.md").read_text()

    def failure(self) -> str:
        return (
            f"exit {self.proc.returncode}\n{self.proc.stdout[-3000:]}\n{self.proc.stderr[-3000:]}"
        )


def project(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """(project root, home folder, base environment) with no session variables in it."""
    root, home = tmp_path / "project", tmp_path / "home"
    (root / "roadmaps").mkdir(parents=True)
    home.mkdir()
    (root / "roadmaps" / f"{SLUG}.md").write_text(ROADMAP)
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    agentcfg(root, env, "roadmap", "trust", SLUG)  # as the person does before a run
    return root, home, env


def agentcfg(root: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [AGENTCFG, *args], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def drive(
    host: str,
    root: Path,
    home: Path,
    env: dict[str, str],
    command: list[str],
    idle: bool,
    limit: Limit | None = None,
) -> Run:
    """Run one headless host session against the scripted model; `{url}` in `env` values and
    in `command` becomes the model's address. With a `limit` the model first refuses with its
    provider's usage limit (see tests/e2e/limits.py)."""
    script = Script(SLUG, AGENTCFG, idle=idle)
    server = serve(script, host, limit)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        proc = subprocess.run(
            [word.replace("{url}", url) for word in command],
            cwd=root,
            env={k: v.replace("{url}", url) for k, v in env.items()},
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    finally:
        server.shutdown()
    return Run(root, home, script, proc)


def assert_complete(run: Run, session_key: str) -> None:
    """Both steps closed through `roadmap done`, one engagement each, then `complete`."""
    events = run.events()
    assert events[-1] == "complete", events
    assert events.count("engage") == 2, events
    assert run.claimed_run() == session_key  # the shell tool's claim bound this very session
    continuations = run.script.continuations()
    assert any("Next step: **1.1**" in t and "verify: test -d roadmaps" in t for t in continuations)
    assert any(
        "Next step: **1.2**" in t and "verify: echo second-step-ok" in t for t in continuations
    )
    assert "- [x] **1.1**" in run.roadmap() and "- [x] **1.2**" in run.roadmap()
    assert_tokens(run)


def assert_stall(run: Run, session_key: str) -> None:
    """An agent that never progresses is continued three times, then the run halts."""
    events = run.events()
    assert events.count("engage") == 3, events
    assert events[-1] == "halt-stall", events
    assert run.claimed_run() == session_key
    assert "- [ ] **1.1**" in run.roadmap()
    # A host that fires twice for one reply gets the last continuation again (the duplicate
    # rule), and may send it after the halt: the reply to it comes after the last recorded fire.
    assert_tokens(run, exact=False)


def assert_tokens(run: Run, exact: bool = True) -> None:
    """The run's tokens in `report --json` are the sum of the usage the model reported for the
    agent's turn, every reply counted once (side requests are not in the session's transcript);
    not `exact`: no reply counted twice."""
    report = json.loads(agentcfg(run.root, {"HOME": str(run.home)}, "report", "--json"))
    reported = sum(run.script.reported)
    total = report["tokens"]["total"]
    assert [row["tokens"]["total"] for row in report["rows"]] == [total]
    if exact:
        assert total == reported, run.ledger()
    else:
        assert 0 < total <= reported and reported - total <= max(run.script.reported)


def interrupt(driver: subprocess.Popen[str], server: bool = False) -> tuple[str, str]:
    """Ctrl-C at a running `agentcfg run` (the driver only, as a supervisor would), and what
    it printed once it ended. The driver bounds its own shutdown: the host's process group has
    two graces (SIGINT, then SIGTERM) before SIGKILL, and its output TAIL_WAIT more; with a
    `server` (OpenCode's) the abort of its sessions and the server's own two graces besides.
    The margin on top, MARGIN, is for a loaded machine (`make e2e` runs its hosts side by side):
    the host's own shutdown starting late, and the driver's final report. Past the bound a
    second Ctrl-C is sent, which ends everything at once, and the test fails on it."""
    from agentcfg.hosts.opencode_server import ABORT_WAIT
    from agentcfg.run.driver import TAIL_WAIT
    from agentcfg.run.runners import GRACE

    bound = 2 * GRACE + TAIL_WAIT + (ABORT_WAIT + 2 * GRACE if server else 0.0) + MARGIN
    driver.send_signal(signal.SIGINT)
    try:
        return driver.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        driver.send_signal(signal.SIGINT)
        _, stderr = driver.communicate(timeout=MARGIN)
        raise AssertionError(
            f"the first Ctrl-C did not end the run within {bound:.0f} s; a second did\n"
            + stderr[-3000:]
        ) from None


MARGIN = 30.0  # seconds a loaded machine may add to a bound the driver keeps itself
