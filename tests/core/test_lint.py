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


def test_a_mode_at_the_top_of_the_frontmatter_is_an_error_naming_where_it_goes() -> None:
    body = "## Phase 1\n- [ ] **1.1** a <!-- verify: true -->\n"
    problems = report("---\nmode: autonomous\n---\n" + body)
    assert [(line, level) for line, level, _ in problems] == [(1, "error")]
    assert problems[0][2] == (
        "frontmatter `mode: autonomous` is at the top level, where it is not read: the mode "
        "goes under `execution:` (`execution: {mode: autonomous}`); without it the roadmap "
        "is interactive and the stop hook never carries it on"
    )
    assert parse_roadmap("---\nmode: autonomous\n---\n" + body).mode is None


def test_a_top_level_mode_beside_the_execution_mode_is_a_warning() -> None:
    text = "---\nmode: autonomous\nexecution: {mode: interactive}\n---\n- [ ] a\n"
    assert report(text) == [
        (
            1,
            "warning",
            "frontmatter `mode: autonomous` at the top level is not read: the roadmap runs "
            "in its `execution:` mode, `interactive`",
        )
    ]


def test_a_top_level_key_named_mode_that_is_no_mode_of_ours_is_left_alone() -> None:
    assert report("---\nmode: dark\n---\n- [ ] a\n") == []


def test_lint_tells_what_a_mode_other_than_autonomous_does() -> None:
    body = "## Phase 1\n- [ ] **1.1** a\n"
    assert report("---\nexecution: {mode: phase-checkpoints}\n---\n" + body) == [
        (
            1,
            "note",
            "mode `phase-checkpoints` runs as `interactive` does today: the stop hook lets "
            "every turn end and `agentcfg run` refuses it; `autonomous` carries the agent on",
        )
    ]


def test_an_unknown_mode_is_told_what_each_mode_does() -> None:
    assert report("---\nexecution: {mode: turbo}\n---\n- [ ] a\n") == [
        (
            1,
            "error",
            "unknown execution.mode 'turbo'; expected autonomous (the stop hook carries the "
            "agent on to the next open step), phase-checkpoints (as interactive, for now) or "
            "interactive (the default: every turn end is the person's)",
        )
    ]


def test_an_execution_without_a_mode_says_so() -> None:
    assert report("---\nexecution: [1, 2]\n---\n- [ ] a\n")[0][2].startswith(
        "`execution:` has no `mode:`; expected autonomous (the stop hook"
    )
