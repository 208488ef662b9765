"""No silent stop: whenever the hook lets a claimed autonomous run's turn end, the ledger says
why. Random sequences of replies, step closes (proven and `--no-verify`), duplicate fires,
human turns and clock jumps, fed to the real decision in process as payloads of the hosts
that have no transcript to tell replies apart (OpenCode, Cursor) and of one that has (Codex).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcfg import claims, loading
from agentcfg.config import Config
from agentcfg.contract import store
from agentcfg.contract.model import command_hash, text_hash
from agentcfg.core.times import iso_ms
from agentcfg.hosts.registry import adapter
from agentcfg.stop.context import HookContext
from agentcfg.stop.dispatch import Verdict
from agentcfg.stop.hook import decide
from agentcfg.workspace import Workspace
from tests.helpers import ledger

ROADMAP = """---
execution: {mode: autonomous}
---
## Phase 1
- [ ] **1.1** one <!-- verify: true -->
- [ ] **1.2** two <!-- verify: true -->
- [ ] **1.3** three <!-- verify: true -->
- [ ] **1.4** four
"""
OPEN = re.compile(r"- \[ \] \*\*(?P<id>[0-9.]+)\*\*")
# what the ledger may give as the reason a run's turn ended
REASONS = ("complete", "blocked", "paused", "stopped", "handback-", "halt-", "error")
# what run-continuation records when it holds the turn, or lets the gate hold it
HOLDS = ("engage", "deferred-quality-gate")
TEXTS = ["That step is done.", "Shall I go on with 1.3?", "Done for now."]


@dataclass
class Session:
    """One agent session of `host`: the person's prompts, the agent's replies, the hook's fires."""

    host: str
    root: Path
    now: float = 1_000_000.0
    prompt: int = 0
    reply: int = 0
    text: str = ""
    ours_last: bool = False  # the last message to the agent is our continuation
    blocks_in_turn: int = 0
    transcript: Path = field(init=False)

    def __post_init__(self) -> None:
        self.transcript = self.root / "transcript.jsonl"
        self.transcript.write_text("")

    def write(self, record: dict[str, Any]) -> None:
        with self.transcript.open("a") as handle:
            handle.write(json.dumps(record) + "\n")

    def human(self) -> None:
        self.prompt += 1
        self.ours_last, self.blocks_in_turn = False, 0
        self.write({"type": "event_msg", "payload": {"type": "task_started"}})

    def say(self, text: str) -> None:
        self.reply += 1
        self.text = text
        self.write({"type": "response_item", "payload": {"type": "message", "text": text}})

    def payload(self) -> dict[str, Any]:
        session, cwd = "ses_1", str(self.root)
        if self.host == "opencode":  # as the plugin builds it from the session's messages
            return {
                "hook_event_name": "session.idle", "session_id": session, "cwd": cwd,
                "prompt_id": f"msg_prompt_{self.prompt}", "reply_id": f"msg_reply_{self.reply}",
                "last_assistant_message": self.text, "stop_hook_active": self.ours_last,
                "interrupted": False,
            }  # fmt: skip
        if self.host == "cursor":  # a follow-up counts in loop_count; no transcript
            return {
                "conversation_id": session, "generation_id": f"gen-{self.reply}",
                "hook_event_name": "stop", "status": "completed", "workspace_roots": [cwd],
                "loop_count": self.blocks_in_turn, "transcript_path": None,
            }  # fmt: skip
        return {  # Codex: its own turn id, and a transcript that grows with each reply
            "session_id": session, "turn_id": f"turn-{self.prompt}", "cwd": cwd,
            "transcript_path": str(self.transcript), "hook_event_name": "Stop",
            "stop_hook_active": self.ours_last, "last_assistant_message": self.text,
        }  # fmt: skip

    def fire(self, ws: Workspace, config: Config) -> Verdict:
        event = adapter(self.host).to_event(self.payload())
        verdict = decide(HookContext(event, ws, config, {}, self.now))
        if verdict.blocks:  # the host hands the text to the agent, which replies anew
            self.ours_last = True
            self.blocks_in_turn += 1
        return verdict


# the agent closes the next step (True: its verify line passed), says so, and its turn ends
WORK = st.tuples(st.just("work"), st.tuples(st.booleans(), st.sampled_from(TEXTS)))
ACTIONS = st.one_of(
    WORK,
    WORK,  # most turns end on work
    st.tuples(st.just("reply"), st.sampled_from(TEXTS)),  # words only, then the turn ends
    st.tuples(st.just("again"), st.none()),  # the host fires twice for one reply
    st.tuples(st.just("human"), st.none()),
    st.tuples(st.just("wait"), st.floats(0, 600)),
)


def said_why(events: list[str]) -> bool:
    """The run's latest decision in the ledger is a reason to rest, not a hold (the gate's own
    refusals hold only the fire that made them)."""
    decided = [e for e in events if e.startswith(REASONS) or e in HOLDS]
    return bool(decided) and decided[-1].startswith(REASONS)


def prove(ws: Workspace, step_id: str, now: float) -> None:
    """The receipt `roadmap done` leaves when the step's verify line passed at `now`."""
    roadmap = loading.load(ws, "r")
    step = next(s for s in roadmap.steps if s.id == step_id)
    fields = {"step": step.id, "text": text_hash(step.text), "command": command_hash(step.verify),
              "line": step.verify, "exit_code": 0, "at": iso_ms(now)}  # fmt: skip
    store.add_receipt(ws, "r", fields, roadmap)


def play(host: str, actions: list[tuple[str, Any]]) -> list[str]:
    """The ledger's events once every action is played; each unexplained rest fails inside."""
    folder = Path(tempfile.mkdtemp(prefix="agentcfg-silent-"))
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(folder / "xdg")  # the receipts' seal key, never the home's
    try:
        (folder / "roadmaps").mkdir()
        roadmap = folder / "roadmaps" / "r.md"
        roadmap.write_text(ROADMAP)
        ws, config = Workspace(folder), Config(max_iterations=6)
        session = Session(host, folder)
        session.human()
        claims.claim(ws, "ses_1", "r", now=session.now)
        session.say("Claimed the roadmap.")
        held: set[int] = set()  # replies a fire already answered with a block: that answer holds
        for kind, value in actions:
            if kind == "work":
                proven, text = value
                found = OPEN.search(roadmap.read_text())
                if found is not None:
                    if proven:
                        prove(ws, found["id"], session.now)
                    body = roadmap.read_text()
                    roadmap.write_text(body.replace(found[0], found[0].replace("[ ]", "[x]"), 1))
                session.say(text)
            elif kind == "reply":
                session.say(value)
            elif kind == "human":
                session.human()
                session.say("On it.")
            elif kind == "wait":
                session.now += value
                continue
            reply = session.reply
            verdict = session.fire(ws, config)
            if verdict.blocks:
                held.add(reply)
            elif reply not in held:
                events = [e["event"] for e in ledger(folder, claims=True)]
                assert said_why(events), f"{host}: the turn ended unexplained: {events}"
        return [e["event"] for e in ledger(folder, claims=True)]
    finally:
        if saved is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = saved
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    host=st.sampled_from(["opencode", "cursor", "codex"]), actions=st.lists(ACTIONS, max_size=30)
)
def test_a_claimed_run_never_rests_without_a_reason(
    host: str, actions: list[tuple[str, Any]]
) -> None:
    assert play(host, actions)[0] == "claimed"  # each rest of the run was checked as played


def test_two_replies_of_the_same_words_after_a_refusal_are_told_apart() -> None:
    """OpenCode: a step closed with --no-verify is refused once; the next step, closed the same
    way with the same words in a new reply, is continued, not taken for the refused reply."""
    events = play("opencode", [("again", None), *[("work", (False, "That step is done."))] * 3])
    # refused once; each later reply of the same words is continued as its own reply
    assert events == ["claimed", "engage", "refused", "deferred-quality-gate", "engage", "engage"]
