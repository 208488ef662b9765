"""Roadmap lint: the parser's diagnostics plus checks across steps. Pure."""

from __future__ import annotations

from agentcfg.core import order
from agentcfg.core.roadmap import Problem, Roadmap


def lint(roadmap: Roadmap) -> list[Problem]:
    """Every problem of a parsed roadmap, in line order."""
    problems = list(roadmap.problems)
    if roadmap.mode == "phase-checkpoints":
        problems.append(Problem(1, "note", (
            "mode `phase-checkpoints` runs as `interactive` does today: the stop hook lets "
            "every turn end and `agentcfg run` refuses it; `autonomous` carries the agent on"
        )))  # fmt: skip
    for step in roadmap.steps:
        if roadmap.autonomous and step.is_open and not step.verify:
            problems.append(
                Problem(step.line, "warning", f"open step `{step.name}` has no verify line")
            )
        if step.blocked_by == "":
            problems.append(
                Problem(step.line, "warning", f"step `{step.name}` has `blocked-by:` with no id")
            )
    problems += order.problems(roadmap)
    return sorted(problems, key=lambda p: p.line)
