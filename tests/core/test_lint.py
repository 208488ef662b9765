"""Roadmap lint: what it reports, at which line and level, and what it leaves alone."""

from __future__ import annotations

from agentcfg.core.lint import lint
from agentcfg.core.roadmap import parse_roadmap

AUTONOMOUS = "---\nexecution:\n  mode: autonomous\n---\n"


def report(text: str) -> list[tuple[int, str, str]]:
    return [(p.line, p.level, p.message) for p in lint(parse_roadmap(text))]


def test_missing_verify_lines_matter_only_in_an_autonomous_roadmap() -> None:
    body = "## Phase 1\n- [ ] **1.1** a\n- [x] **1.2** b\n- [ ] c <!-- blocked-by: x -->\n"
    assert report(AUTONOMOUS + body) == [(6, "warning", "open step `1.1` has no verify line")]
    assert report(body) == []
    assert report("---\nexecution: {mode: interactive}\n---\n" + body) == []


def test_an_empty_blocked_by_is_warned_by_the_step_name() -> None:
    assert report("- [ ] T001 a <!-- blocked-by: -->\n") == [
        (1, "warning", "step `T001` has `blocked-by:` with no id")
    ]


def test_step_n_restarting_per_phase_and_phase_minus_one_lint_clean() -> None:
    text = AUTONOMOUS + "".join(
        f"## Phase {phase}\n"
        + "".join(f"- [ ] **Step {n}:** s <!-- verify: true -->\n" for n in range(1, 4))
        for phase in (-1, 0, 1, 2)
    )
    assert report(text) == []
    assert len(parse_roadmap(text).steps) == 12


def test_problems_come_in_line_order_with_their_levels() -> None:
    text = (
        "---\nexecution: {mode: turbo}\n---\n- [ ] early\n## Phase 1\n- [ ] **A1** a\n"
        "- [ ] **A1** b\n- [*] c\n## Later\n- [ ] d\n"
    )
    assert [(line, level) for line, level, _ in report(text)] == [
        (1, "error"),
        (4, "note"),
        (6, "warning"),
        (8, "warning"),
        (9, "note"),
    ]
