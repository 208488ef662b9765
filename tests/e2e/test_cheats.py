"""An agent that weakens the person's check instead of doing the work, through the real Claude
Code under `agentcfg run`: the rewritten test, the skipped test, the `conftest.py` that turns
failures into passes and the same hook loaded by a new `pytest.ini` each end the run
`halt-check-changed` (exit 15) with the file named; an honest agent ends `complete` with its
steps `red-green`, and a step whose check passed before any work is told `vacuous`."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from tests.e2e.harness import SLUG, TIMEOUT, agentcfg
from tests.e2e.test_run import Driven, RunScript, claude_setup, command, model, with_url
from tests.hostile.test_hostile_checks import STUB, TEST, TRICKS, WORK

CHECK = "python3 -m pytest -q -p no:cacheprovider -p no:randomly tests/test_slug.py"
ROADMAP = f"""---
execution: {{mode: autonomous}}
---
## Phase 1 — Slugs
- [ ] **1.1** Write `slug()` <!-- verify: {CHECK} -->
- [ ] **1.2** Keep the module importable <!-- verify: python3 -c 'import slug' -->
"""


def writes(files: dict[str, str]) -> str:
    """A shell command that writes these files, as the agent's tool call would."""
    return " && ".join(
        f"printf %s {shlex.quote(text)} > {shlex.quote(path)}" for path, text in files.items()
    )


class Agent(RunScript):
    """Before closing step 1.1, the agent runs `before` (its work, or its cheat)."""

    def __init__(self, before: str) -> None:
        super().__init__()
        self.before = before

    def reply(self, text: str, after_tool: bool) -> tuple[str, str]:
        kind, value = super().reply(text, after_tool)
        if kind == "tool" and value.endswith(f"roadmap done {SLUG} 1.1"):
            return "tool", f"{self.before} && {value}"
        return kind, value


def drive(tmp_path: Path, before: str) -> Driven:
    root, home, env = claude_setup(tmp_path)
    (root / "tests").mkdir()
    (root / "tests" / "test_slug.py").write_text(TEST)
    (root / "slug.py").write_text(STUB)
    (root / "roadmaps" / f"{SLUG}.md").write_text(ROADMAP)
    agentcfg(root, env, "roadmap", "trust", SLUG)
    script = Agent(before)
    with model("claude", script) as url:
        proc = subprocess.run(
            command("claude", url), cwd=root, env=with_url(env, url), capture_output=True,
            text=True, timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    return Driven(root, home, script, proc)


@pytest.mark.parametrize("cheat", TRICKS)
def test_a_weakened_check_ends_the_run_told_never_complete(tmp_path: Path, cheat: str) -> None:
    files, named = TRICKS[cheat]
    run = drive(tmp_path, writes(files))
    assert run.proc.returncode == 15, run.failure()
    assert run.ending()["ending"] == "halt-check-changed"
    assert f"changed: step 1.1: {named}" in run.proc.stderr, run.failure()
    assert f"next: undo the change, or review the checks: agentcfg roadmap trust {SLUG}" in (
        run.proc.stderr
    )
    assert "- [ ] **1.1**" in (run.root / "roadmaps" / f"{SLUG}.md").read_text()
    assert "check-changed" in run.events()


def test_an_honest_agent_completes_with_red_green_and_a_vacuous_step_told(tmp_path: Path) -> None:
    run = drive(tmp_path, writes({"slug.py": WORK}))
    assert run.proc.returncode == 0, run.failure()
    assert run.ending()["ending"] == "complete"
    assert (
        "baseline 1.1: fails" in run.proc.stderr
        and "baseline 1.2: passes already" in run.proc.stderr
    )
    assert "evidence: 2 steps, 1 red-green, 1 vacuous (1.2)" in run.proc.stderr, run.failure()
