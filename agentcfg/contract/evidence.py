"""The baseline a step's evidence is graded against (state/baselines/<slug>.json), and the
grade of a passing check (core/evidence.py says what each word means).

A baseline is each open step's verify line run once before the work starts, by `agentcfg run`
or `roadmap verify --baseline`; it is kept per roadmap, one entry per step and verify line, with
the commit it was taken on.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentcfg import state
from agentcfg.contract import seal, trust
from agentcfg.contract.model import command_hash
from agentcfg.core import evidence
from agentcfg.core.roadmap import Step
from agentcfg.core.times import iso_ms
from agentcfg.paths import BASELINES
from agentcfg.workspace import Workspace


def baseline_path(ws: Workspace, slug: str) -> Path:
    return ws.state / BASELINES / f"{slug}.json"


def read_baseline(ws: Workspace, slug: str) -> dict[str, dict[str, Any]]:
    """Step id -> {command (sha256 of its verify line), exit_code, at, head} at the baseline.

    The baseline is sealed: one whose seal fails (an agent made its checks look red before the
    work) counts as none, and the evidence is `unknown`."""
    data = state.read_json(baseline_path(ws, slug), limit=4 * state.STATE_FILE_LIMIT) or {}
    steps = data.get("steps")
    sealed = seal.check(BASELINES, slug, {"steps": steps}, data.get(seal.FIELD))
    if not isinstance(steps, dict) or not sealed:
        return {}
    return {k: v for k, v in steps.items() if isinstance(v, dict) and isinstance(k, str)}


def write_baseline(ws: Workspace, slug: str, steps: Mapping[str, dict[str, Any]]) -> None:
    """The baseline's entries, sealed with the person's key."""
    body = {"steps": dict(steps)}
    path = baseline_path(ws, slug)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    state.write_json(path, {**body, seal.FIELD: seal.sign(BASELINES, slug, body)}, compact=True)


def missing(ws: Workspace, slug: str, steps: list[Step]) -> list[Step]:
    """The open steps with a verify line that the baseline has no entry for, as they are now."""
    taken = read_baseline(ws, slug)
    return [
        step
        for step in steps
        if step.is_open
        and step.verify
        and taken.get(step.id, {}).get("command") != command_hash(step.verify)
    ]


def record(
    ws: Workspace,
    slug: str,
    ran: Mapping[str, tuple[str, int | None]],
    facts: Mapping[str, object],
    now: float,
) -> None:
    """Add these steps' baseline runs (step id -> (verify line, exit code)) to the baseline."""
    path = baseline_path(ws, slug)
    with state.locked(path.with_suffix(".lock")):
        steps = read_baseline(ws, slug)
        for step, (command, code) in ran.items():
            steps[step] = {
                "command": command_hash(command), "exit_code": code, "at": iso_ms(now),
                **facts,
            }  # fmt: skip
        write_baseline(ws, slug, steps)


def grade(ws: Workspace, slug: str, step: Step, env: Mapping[str, str]) -> str:
    """The evidence of the step's check passing now."""
    guard = trust.trusted_guards(ws, slug, env).get(step.id)
    agent_wrote = guard is not None and any((ws.root / p).exists() for p in guard.absent)
    entry = read_baseline(ws, slug).get(step.id)
    baselined = entry is not None and entry.get("command") == command_hash(step.verify)
    code = entry.get("exit_code") if entry is not None else None
    return evidence.grade(code if type(code) is int else None, baselined, agent_wrote)
