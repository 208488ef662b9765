"""Roadmap lint: the parser's diagnostics plus checks across steps. Pure."""

from __future__ import annotations

from collections import Counter

from agentcfg.core.roadmap import Problem, Roadmap


def lint(roadmap: Roadmap) -> list[Problem]:
    """Every problem of a parsed roadmap, in line order."""
    problems = list(roadmap.problems)
    seen = Counter(step.id for step in roadmap.steps)
    reported: set[str] = set()
    for step in roadmap.steps:
        if seen[step.id] > 1 and step.id in reported:
            problems.append(Problem(step.line, "error", f"duplicate step id `{step.id}`"))
        reported.add(step.id)
        if step.mark == "open" and not step.blocked and not step.verify:
            problems.append(
                Problem(step.line, "warning", f"open step `{step.id}` has no verify line")
            )
        if step.blocked_by == "":
            problems.append(
                Problem(step.line, "warning", f"step `{step.id}` has `blocked-by:` with no id")
            )
    return sorted(problems, key=lambda p: p.line)
