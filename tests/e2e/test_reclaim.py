"""An agent that claims its roadmap again to reset its budget, or ticks what it did not do,
through the real Claude Code under `agentcfg run`: a stalled agent re-claiming every other turn
halts within ten engagements; in a fleet, each member's agent claiming the roadmap first (as our
skill teaches) still works only its own leased step, every step integrated by the member that
leased it; members that tick every box in their worktrees still leave every step really done."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.e2e.fake_model import NEXT
from tests.e2e.harness import AGENTCFG, SLUG, TIMEOUT
from tests.e2e.test_fleet import STEPS, FleetScript, assert_fleet_done, fleet_project, start
from tests.e2e.test_run import Driven, RunScript, claude_setup, command, model, with_url


class Reclaimer(RunScript):
    """Never does the work: every other continuation it claims the roadmap again, in between it
    only says it is looking."""

    def __init__(self) -> None:
        super().__init__()
        self.turns = 0

    def reply(self, text: str, after_tool: bool) -> tuple[str, str]:
        if after_tool or not NEXT.findall(text):
            return super().reply(text, after_tool)
        self.turns += 1
        if self.turns % 2:
            return "tool", f"{AGENTCFG} sessions claim {SLUG}"
        return "text", "Looking at it first."


def test_a_stalled_agent_that_claims_again_halts_within_ten_engagements(tmp_path: Path) -> None:
    root, home, env = claude_setup(tmp_path)
    script = Reclaimer()
    with model("claude", script) as url:
        proc = subprocess.run(
            command("claude", url), cwd=root, env=with_url(env, url), capture_output=True,
            text=True, timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    run = Driven(root, home, script, proc)
    assert proc.returncode == 12, run.failure()
    assert run.ending()["ending"] == "halt-stall"
    events = run.events()
    assert events.count("engage") <= 10, events
    assert "claim-kept" in events  # the re-claim kept the run: its counts went on


class Member(FleetScript):
    """A member's agent whose closing command (`{done}`, its step's work and `roadmap done`) is
    wrapped in what it does besides."""

    def __init__(self, closing: str) -> None:
        super().__init__()
        self.closing = closing

    def reply(self, text: str, after_tool: bool) -> tuple[str, str]:
        kind, value = super().reply(text, after_tool)
        if kind == "tool" and " roadmap done " in value:
            return "tool", self.closing.replace("{done}", value)
        return kind, value


def fleet(tmp_path: Path, closing: str) -> tuple[list[dict[str, Any]], str]:
    """`run --agents 3` of members that close their steps so; the ledger and the output."""
    root, env = fleet_project(tmp_path)
    with model("claude", Member(closing)) as url:
        proc = start(root, env, url, "5m")
        output, _ = proc.communicate(timeout=TIMEOUT * 3)
    assert proc.returncode == 0, output
    return assert_fleet_done(root, output), output  # every step's file made: each really done


def test_fleet_members_that_claim_again_each_work_their_own_step(tmp_path: Path) -> None:
    # the agent claims the roadmap before its work, as the skill teaches
    events, output = fleet(tmp_path, f"{AGENTCFG} sessions claim {SLUG} ; {{done}}")
    leased = {e["step"]: e["member"] for e in events if e["event"] == "leased"}
    integrated = {e["step"]: e["member"] for e in events if e["event"] == "integrated"}
    assert integrated == leased and len(integrated) == STEPS, output  # by its leaser, each
    assert f"fleet on `{SLUG}`: complete; {STEPS} steps integrated, 0 reopened" in output


def test_fleet_members_that_tick_every_box_still_do_every_step(tmp_path: Path) -> None:
    # the agent closes its leased step by its proof, then ticks every other box by hand
    events, output = fleet(tmp_path, f"{{done}} && sed -i 's/- \\[ \\]/- [x]/' roadmaps/{SLUG}.md")
    integrated = [e for e in events if e["event"] == "integrated"]
    assert sorted(e["step"] for e in integrated) == [f"1.{n}" for n in range(1, STEPS + 1)]
    assert any(e.get("unticked") for e in integrated), output  # the forged ticks reopened
