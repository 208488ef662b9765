"""A simulated Claude Code host for tests and `make demo`: real hook processes, a fake session.

The host writes a transcript in Claude Code's JSONL shape, fires `agentcfg hook stop` as a
subprocess with a Stop payload, and reads the answer the way the real host does. A test may
give it another way to run agentcfg (`run`), such as the same entry points in process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcfg import agents

# how agentcfg is run: (argv after `agentcfg`, environment, stdin, working folder)
Runner = Callable[[list[str], dict[str, str], str, Path], "subprocess.CompletedProcess[str]"]


def as_process(
    args: list[str], env: dict[str, str], stdin: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """`agentcfg ARGS` as a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "agentcfg", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60 if args[:1] == ["hook"] else 600,
        check=False,
    )


_NEXT = re.compile(r"^Next step: \*\*(?P<id>[^*]+)\*\*", re.M)


@dataclass(frozen=True)
class FireResult:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def blocked(self) -> bool:
        return self.exit_code == 2

    @property
    def next_step(self) -> str | None:
        found = _NEXT.search(self.stderr)
        return found.group("id") if found else None


class SimulatedHost:
    """One Claude Code session in a workspace: human turns, replies, tool calls and Stop fires."""

    def __init__(
        self,
        root: Path,
        session_id: str | None = None,
        env: dict[str, str] | None = None,
        usage: dict[str, int] | None = None,
        run: Runner = as_process,
    ):
        self.root = root
        self.run = run
        self.usage = usage  # what each model message reports spending, as Claude Code records it
        self.session_id = session_id or str(uuid.uuid4())
        self.transcript = root / ".host" / f"{self.session_id}.jsonl"
        self.transcript.parent.mkdir(parents=True, exist_ok=True)
        self.transcript.touch()
        self.prompt_id = ""
        self.last_message = ""
        self.fires_in_turn = 0
        # the person's trust store lives beside the transcripts, never in the real home
        trust_home = str(root / ".host" / "state-home")
        hosts = agents.variables()
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in hosts},
            "XDG_STATE_HOME": trust_home,
            **(env or {}),
            "AGENTCFG_ROOT": str(root),
        }

    def _append(self, record: dict[str, Any]) -> None:
        record.update(sessionId=self.session_id, uuid=str(uuid.uuid4()), isSidechain=False)
        with self.transcript.open("a") as handle:
            handle.write(json.dumps(record) + "\n")

    def human(self, text: str) -> None:
        """A person speaks: a new prompt id, a new turn."""
        self.prompt_id = str(uuid.uuid4())
        self.fires_in_turn = 0
        self._append(
            {
                "type": "user",
                "promptId": self.prompt_id,
                "message": {"role": "user", "content": text},
            }
        )

    def tool(self, command: str, output: str = "") -> None:
        """The agent runs a Bash command in this turn."""
        call = str(uuid.uuid4())
        block = {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}
        self._assistant([block])
        result = {"type": "tool_result", "tool_use_id": call, "content": output}
        self._append(
            {
                "type": "user",
                "promptId": self.prompt_id,
                "message": {"role": "user", "content": [result]},
            }
        )

    def reply(self, text: str) -> None:
        self.last_message = text
        self._assistant([{"type": "text", "text": text}])

    def _assistant(self, content: list[dict[str, Any]]) -> None:
        message: dict[str, Any] = {
            "id": f"msg_{uuid.uuid4().hex}",
            "role": "assistant",
            "content": content,
        }
        if self.usage is not None:
            message["usage"] = self.usage
        self._append({"type": "assistant", "message": message})

    def payload(self, **changes: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript),
            "cwd": str(self.root),
            "prompt_id": self.prompt_id,
            "permission_mode": "default",
            "hook_event_name": "Stop",
            "stop_hook_active": self.fires_in_turn > 0,
            "last_assistant_message": self.last_message,
            "background_tasks": [],
            "session_crons": [],
        }
        data.update(changes)
        return data

    def fire(self, feedback: bool = True, **changes: Any) -> FireResult:
        """Run the stop hook as a real subprocess; a block feeds its text back as the host does.

        `feedback=False` leaves the transcript as it was, as when a host fires twice for one reply.
        """
        proc = self._run(["hook", "stop"], self.env, stdin=json.dumps(self.payload(**changes)))
        self.fires_in_turn += 1
        result = FireResult(proc.returncode, proc.stdout, proc.stderr)
        if result.blocked and feedback:
            text = f"Stop hook feedback:\n[agentcfg hook stop]: {result.stderr}"
            self._append(
                {
                    "type": "user",
                    "isMeta": True,
                    "promptId": self.prompt_id,
                    "message": {"role": "user", "content": text},
                }
            )
        return result

    def agentcfg(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run `agentcfg ARGS` from inside the agent's Bash tool (session id in the environment)."""
        self.tool("agentcfg " + " ".join(args))
        env = {**self.env, "CLAUDE_CODE_SESSION_ID": self.session_id}
        return self._run(list(args), env)

    def claim(self, slug: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.agentcfg("sessions", "claim", slug, *args)

    def trust(self, slug: str) -> subprocess.CompletedProcess[str]:
        """`agentcfg roadmap trust SLUG` as the person runs it, outside the session."""
        return self._run(["roadmap", "trust", slug], self.env)

    def _run(
        self, args: list[str], env: dict[str, str], stdin: str = ""
    ) -> subprocess.CompletedProcess[str]:
        """`agentcfg ARGS` in the workspace, run as this host runs it."""
        return self.run(args, env, stdin, self.root)


def mark_done(roadmap: Path, step_id: str) -> None:
    """Flip the `[ ]` of the step whose bold id is `step_id` to `[x]`."""
    text = roadmap.read_text()
    pattern = re.compile(rf"^(\s*(?:[-*+]|\d+[.)])\s+)\[ \](\s+\*\*{re.escape(step_id)}\*\*)", re.M)
    updated, count = pattern.subn(r"\1[x]\2", text, count=1)
    if count != 1:
        raise ValueError(f"no open step {step_id} in {roadmap}")
    roadmap.write_text(updated)
