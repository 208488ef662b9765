"""Sequences of fires, box flips, new human turns (pauses and go-ons among them), clock jumps,
vanishing roadmaps and re-claims, explored by hypothesis.

Runs the real decision (state files, locks, ledger) in-process with a controlled clock.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from agentcfg import claims
from agentcfg.config import Config
from agentcfg.core.roadmap import parse_roadmap, scan
from agentcfg.hosts.base import StopEvent
from agentcfg.stop.context import HookContext
from agentcfg.stop.hook import decide
from agentcfg.workspace import Workspace
from tests.helpers import ledger

MAX_ITERATIONS = 4
MAX_TOKENS = 250
ROADMAP = """---
execution: {mode: autonomous}
---
## Phase 1
- [ ] **1.1** one <!-- verify: true -->
- [ ] **1.2** two
- [ ] **1.3** three <!-- blocked-by: x -->
## Phase 2
- [ ] **2.1** four
"""
BOX = re.compile(r"- \[([ x])\]")


class Fires(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="agentcfg-stateful-"))
        (self.folder / "roadmaps").mkdir()
        self.roadmap = self.folder / "roadmaps" / "r.md"
        self.roadmap.write_text(ROADMAP)
        self.ws = Workspace(self.folder)
        self.config = Config(
            max_iterations=MAX_ITERATIONS, wall_clock=7200.0, max_tokens=MAX_TOKENS, reply_wait=0.0
        )
        self.now = 1_000_000.0
        self.turn = 1
        self.prompt = "Work the roadmap."
        self.transcript = self.folder / "transcript.jsonl"
        self.written = 0  # tokens the model reported in the transcript
        self.write({"type": "user", "message": {"content": "go"}})
        self.claim()

    def teardown(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def claim(self) -> None:
        if not self.roadmap.exists():
            self.roadmap.write_text(ROADMAP)
        claims.claim(self.ws, "s", "r", now=self.now, force=True)
        self.blocks = 0
        self.halted = False
        self.paused = False  # a re-claim ends a pause (a "stop" still standing pauses again)
        self.outcomes: list[str] = []  # the outcomes written in this run, in order
        self.recorded = 0  # tokens the ledger recorded for this run

    def write(self, record: dict[str, object]) -> None:
        import json

        with self.transcript.open("a") as handle:
            handle.write(json.dumps(record) + "\n")

    @rule(
        reply=st.integers(0, 3),
        message=st.sampled_from(
            ["Working.", "Shall I proceed?", "Which one, A or B?", "Now I'll run the tests."]
        ),
    )
    def fire(self, reply: int, message: str) -> None:
        event = StopEvent(
            "s",
            f"t{self.turn}",
            str(self.transcript),
            str(self.folder),
            f"{message} #{reply}",
            False,
            False,
            0,
            "claude",
            prompt=self.prompt,
        )
        if self.prompt == "stop":  # a fire that sees "stop" pauses the run until "go on"
            self.paused = True
        present = self.roadmap.exists()
        counts = scan(parse_roadmap(self.roadmap.read_text())).counts if present else None
        before = len(self.ledger())
        # the machine's transcript never grows while a fire reads it: no fire waits for a reply
        verdict = decide(HookContext(event, self.ws, self.config, {}, self.now))
        added = self.ledger()[before:]
        new = [e["event"] for e in added]
        self.recorded += sum(e["tokens"]["total"] for e in added if e.get("tokens"))
        if "engage" in new:
            assert self.recorded < MAX_TOKENS, "engaged with the token budget spent"
        continued = verdict.blocks and verdict.source == "run-continuation"
        if "engage" in new or continued:
            assert not self.halted, "a halted run blocked again"
            assert not self.paused, "a run the person paused went on"
        if continued:
            self.blocks += 1
        if "complete" in new:
            assert counts is not None and counts.open == 0 and counts.blocked == 0
        for outcome in (e for e in new if e in ("complete", "blocked") or e.startswith("halt-")):
            assert self.outcomes[-1:] != [outcome], f"{outcome} written twice in a row"
            assert not self.halted, "a second halt in one run"
            self.outcomes.append(outcome)
            self.halted = outcome.startswith("halt-")
            if outcome.startswith("halt-"):
                assert verdict.message.startswith("agentcfg: roadmap `r` stopped"), "not told"
        if "engage" in new:
            self.outcomes.append("engage")
        if "halt-roadmap-absent" in new:
            assert not present
        if "paused" in new:
            assert self.paused

    @rule(index=st.integers(0, 3))
    def flip_box(self, index: int) -> None:
        if not self.roadmap.exists():
            return
        text = self.roadmap.read_text()
        boxes = list(BOX.finditer(text))
        box = boxes[index]
        mark = "x" if box.group(1) == " " else " "
        self.roadmap.write_text(text[: box.start(1)] + mark + text[box.end(1) :])

    @rule(prompt=st.sampled_from(["Next please.", "stop", "go on", "What is 1.2?"]))
    def human_turn(self, prompt: str) -> None:
        self.turn += 1
        self.prompt = prompt
        self.write({"type": "user", "message": {"content": prompt}})
        self.paused = self.paused and prompt != "go on"

    @rule()
    def roadmap_vanishes(self) -> None:
        if self.roadmap.exists():
            self.roadmap.unlink()

    @rule(cost=st.integers(0, 100))
    def model_call(self, cost: int) -> None:
        usage = {"input_tokens": cost // 2, "output_tokens": cost - cost // 2}
        self.write({"type": "assistant", "message": {"id": f"m{self.written}-{cost}",
                                                     "content": [], "usage": usage}})  # fmt: skip
        self.written += cost

    @rule(seconds=st.floats(0, 3 * 3600))
    def clock_jump(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def reclaim(self) -> None:
        self.claim()

    @invariant()
    def bounded(self) -> None:
        assert self.blocks <= 3 * MAX_ITERATIONS
        assert self.recorded <= self.written, "a model call was recorded twice"

    def ledger(self) -> list[dict[str, object]]:
        return ledger(self.folder, claims=True)


# 300 sequences of up to 50 steps, in three cases that explore apart, so test workers share them
SEQUENCES = settings(max_examples=100, stateful_step_count=50, deadline=None)


class TestFiresBriefly(Fires.TestCase):
    """A few sequences for every run of the suite; the three cases below go deep."""

    settings = settings(max_examples=12, stateful_step_count=30, deadline=None)


@pytest.mark.slow
class TestFiresA(Fires.TestCase):
    settings = SEQUENCES


@pytest.mark.slow
class TestFiresB(Fires.TestCase):
    settings = SEQUENCES


@pytest.mark.slow
class TestFiresC(Fires.TestCase):
    settings = SEQUENCES
