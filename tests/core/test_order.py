"""Which steps are ready and what the others wait for: `[P]`, `needs:` and the roadmap's order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcfg.core.lint import lint
from agentcfg.core.order import first_ready, problems, readiness, side_by_side
from agentcfg.core.roadmap import Roadmap, parse_roadmap, scan


def roadmap(body: str, order: str | None = None) -> Roadmap:
    front = f"---\nexecution:\n  mode: autonomous\n  fleet:\n    order: {order}\n---\n"
    return parse_roadmap((front if order else "") + body)


def ready(found: Roadmap) -> list[str]:
    return [step.name for step in readiness(found).ready]


def waiting(found: Roadmap) -> dict[str, list[str]]:
    return {step.name: [s.name for s in on] for step, on in readiness(found).waiting}


TWO_PHASES = (
    "## Phase 1\n- [ ] **1.1** a\n- [ ] **1.2** b\n- [ ] **1.3** c\n"
    "## Phase 2\n- [ ] **2.1** d\n- [ ] **2.2** e\n"
)


def test_by_default_each_step_waits_for_the_one_before_it() -> None:
    found = roadmap(TWO_PHASES)
    assert found.order == "steps"
    assert ready(found) == ["1.1"]
    assert waiting(found) == {"1.2": ["1.1"], "1.3": ["1.2"], "2.1": ["1.3"], "2.2": ["2.1"]}
    done = roadmap(TWO_PHASES.replace("[ ] **1.1**", "[x] **1.1**"))
    assert ready(done) == ["1.2"]


def test_phases_order_runs_a_phase_side_by_side_after_the_phases_before_it() -> None:
    found = roadmap(TWO_PHASES, "phases")
    assert ready(found) == ["1.1", "1.2", "1.3"]
    assert waiting(found) == {"2.1": ["1.1", "1.2", "1.3"], "2.2": ["1.1", "1.2", "1.3"]}
    most = TWO_PHASES.replace("[ ] **1.1**", "[x] **1.1**").replace("[ ] **1.3**", "[x] **1.3**")
    assert waiting(roadmap(most, "phases")) == {"2.1": ["1.2"], "2.2": ["1.2"]}


def test_free_order_is_every_open_step_at_once() -> None:
    assert ready(roadmap(TWO_PHASES, "free")) == ["1.1", "1.2", "1.3", "2.1", "2.2"]


@pytest.mark.parametrize(
    "item",
    ["- [ ] [P] **1.2** b", "- [ ] **1.2** [P] b", "- [ ] 1.2 [P] b", "- [ ] [P] b"],
)
def test_p_runs_a_step_beside_the_one_before_it_wherever_the_tag_is_written(item: str) -> None:
    found = roadmap(f"- [ ] **1.1** a\n{item}\n- [ ] **1.3** c\n")
    assert found.steps[1].parallel
    assert ready(found) == ["1.1", "1.2"]
    assert waiting(found) == {"1.3": ["1.1", "1.2"]}  # the step after a group waits for all of it


def test_a_run_of_p_steps_is_one_group_and_p_on_a_first_step_is_harmless() -> None:
    found = roadmap("- [ ] [P] 1.1 a\n- [ ] [P] 1.2 b\n- [ ] [P] 1.3 c\n- [ ] 1.4 d\n")
    assert ready(found) == ["1.1", "1.2", "1.3"]
    assert waiting(found) == {"1.4": ["1.1", "1.2", "1.3"]}
    assert lint(found) == []


def test_needs_names_exactly_what_a_step_waits_for_by_id_or_label() -> None:
    body = (
        "## Phase 1\n- [ ] **T001** a\n- [ ] **T002** b\n"
        "## Phase 2\n- [ ] **T003** c <!-- needs: T001 -->\n- [ ] **T004** d\n  needs: 1.2, t003\n"
    )
    found = roadmap(body)
    assert [s.needs for s in found.steps] == [(), (), ("T001",), ("1.2", "t003")]
    assert ready(found) == ["T001"]
    assert waiting(found) == {"T002": ["T001"], "T003": ["T001"], "T004": ["T002", "T003"]}
    first_done = roadmap(body.replace("[ ] **T001**", "[x] **T001**"))
    assert ready(first_done) == ["T002", "T003"]  # T003 needs T001 only, not T002 before it


def test_a_nested_needs_line_is_read_and_left_out_of_the_detail() -> None:
    found = roadmap("- [ ] 1.1 a\n- [ ] 1.2 b\n- [ ] 1.3 c\n  - needs: 1.1\n  - more words\n")
    assert found.steps[2].needs == ("1.1",)
    assert found.steps[2].detail == ("- more words",)
    assert ready(found) == ["1.1"]
    assert waiting(found) == {"1.2": ["1.1"], "1.3": ["1.1"]}


def test_needs_in_prose_on_the_first_line_is_the_step_s_text() -> None:
    found = roadmap("- [ ] 1.1 write what the API needs: auth\n")
    assert found.steps[0].needs == ()
    assert found.steps[0].text == "write what the API needs: auth"


def test_the_order_passes_over_blocked_deferred_and_cancelled_steps() -> None:
    body = (
        "- [ ] 1.1 a <!-- blocked-by: ops -->\n- [~] 1.2 b\n- [-] 1.3 c\n- [ ] 1.4 d\n- [ ] 1.5 e\n"
    )
    found = roadmap(body)
    assert ready(found) == ["1.4"]
    assert waiting(found) == {"1.5": ["1.4"]}
    named = roadmap(body.replace("1.5 e", "1.5 e <!-- needs: 1.1 -->"))
    assert waiting(named) == {"1.5": ["1.1"]}  # a `needs:` waits even for a blocked step


def test_one_agent_takes_the_first_ready_step() -> None:
    found = roadmap(
        "- [x] 1.1 a\n- [ ] 1.2 b <!-- needs: 1.4 -->\n- [ ] 1.3 c <!-- needs: 1.1 -->\n"
        "- [ ] 1.4 d <!-- needs: 1.1 -->\n"
    )
    assert ready(found) == ["1.3", "1.4"]
    assert scan(found).next == first_ready(found) == found.steps[2]
    started = roadmap("- [ ] 1.1 a\n- [/] [P] 1.2 b\n- [ ] 1.3 c <!-- needs: 1.1 -->\n")
    assert scan(started).next == first_ready(started) == started.steps[1]


def test_steps_waiting_for_each_other_still_leave_one_agent_a_next_step() -> None:
    found = roadmap("- [ ] 1.1 a <!-- needs: 1.2 -->\n- [ ] 1.2 b <!-- needs: 1.1 -->\n")
    assert ready(found) == []
    assert scan(found).next == found.steps[0]


def test_lint_reports_unknown_names_a_step_needing_itself_and_cycles() -> None:
    found = roadmap(
        "- [ ] 1.1 a <!-- needs: 1.3 -->\n- [ ] 1.2 b <!-- needs: 9.9 -->\n"
        "- [ ] 1.3 c <!-- needs: 1.2 -->\n- [ ] 1.4 d <!-- needs: 1.4 -->\n"
        "- [ ] 1.5 e\n- [ ] 1.6 f <!-- needs: 1.7 -->\n- [ ] 1.7 g\n"
    )
    assert [(p.line, p.level, p.message) for p in problems(found)] == [
        (2, "error", "step `1.2` needs `9.9`, which names no step of this roadmap"),
        (4, "error", "step `1.4` needs itself"),
        (6, "error", (
            "steps `1.6`, `1.7` wait for each other (by `needs:` and the roadmap's order): none "
            "of them can start; change a `needs:` or mark a step `[P]`"
        )),
    ]  # fmt: skip
    assert lint(found)[0].message.startswith("step `1.2` needs `9.9`")


def test_a_cycle_of_needs_alone_is_reported_whatever_is_done() -> None:
    found = roadmap("- [x] 1.1 a <!-- needs: 1.2 -->\n- [x] 1.2 b <!-- needs: 1.1 -->\n", "free")
    assert [p.message[:21] for p in problems(found)] == ["steps `1.1`, `1.2` wa"]


def test_an_unknown_order_is_an_error_and_reads_as_steps() -> None:
    found = roadmap("- [ ] a\n- [ ] b\n", "sideways")
    assert found.order == "steps"
    assert any("unknown execution.fleet.order 'sideways'" in p.message for p in lint(found))


def test_side_by_side_says_whether_two_steps_can_ever_run_at_once() -> None:
    assert not side_by_side(roadmap(TWO_PHASES))
    assert side_by_side(roadmap(TWO_PHASES, "phases"))
    assert side_by_side(roadmap(TWO_PHASES.replace("**2.2**", "[P] **2.2**")))
    assert not side_by_side(roadmap("## Phase 1\n- [ ] a\n## Phase 2\n- [ ] b\n", "phases"))


# --- properties -------------------------------------------------------------------------------

MARKS = [" ", " ", " ", "x", "~", "-"]


@st.composite
def roadmaps(draw: st.DrawFn) -> Roadmap:
    count = draw(st.integers(1, 9))
    order = draw(st.sampled_from(["steps", "phases", "free"]))
    lines: list[str] = []
    phase = 0
    for n in range(1, count + 1):
        if n == 1 or (draw(st.booleans()) and draw(st.booleans())):
            phase += 1
            lines.append(f"## Phase {phase}")
        mark = draw(st.sampled_from(MARKS))
        tag = "[P] " if draw(st.booleans()) else ""
        extra = ""
        if draw(st.integers(0, 4)) == 0:
            extra += " <!-- blocked-by: x -->"
        if draw(st.integers(0, 3)) == 0:
            named = draw(st.lists(st.integers(1, count + 1), max_size=3))
            extra += f" <!-- needs: {', '.join(f'S{k}' for k in named)} -->"
        lines.append(f"- [{mark}] {tag}**S{n}** step{extra}")
    front = f"---\nexecution:\n  mode: autonomous\n  fleet:\n    order: {order}\n---\n"
    return parse_roadmap(front + "\n".join(lines) + "\n")


@settings(max_examples=300, deadline=None)
@given(roadmaps())
def test_every_open_step_is_ready_or_waits_only_for_other_open_steps(found: Roadmap) -> None:
    result = readiness(found)
    workable = [s.id for s in found.steps if s.is_open]
    assert sorted([s.id for s in result.ready] + [s.id for s, _ in result.waiting]) == sorted(
        workable
    )
    for step, on in result.waiting:
        assert on and all(other.mark == "open" and other.id != step.id for other in on)


@settings(max_examples=300, deadline=None)
@given(roadmaps())
def test_without_needs_the_first_open_step_is_ready_and_the_work_never_sticks(
    found: Roadmap,
) -> None:
    found = found._replace(steps=tuple(s._replace(needs=()) for s in found.steps))
    current = found
    while (result := readiness(current)).ready or result.waiting:
        first_open = next(s for s in current.steps if s.is_open)
        assert result.ready[0] == first_open == scan(current).next
        flow = [s.mark for s in current.steps if s.mark in ("open", "done") and not s.blocked]
        in_turn = "done" not in flow[flow.index("open") :] if "open" in flow else True
        if current.order == "steps" and not any(s.parallel for s in current.steps) and in_turn:
            assert len(result.ready) == 1  # a step done out of turn lets the next one go
        if current.order == "phases":
            assert {s.phase for s in result.ready} == {first_open.phase}
        done = result.ready[-1].id
        current = current._replace(
            steps=tuple(s._replace(mark="done") if s.id == done else s for s in current.steps)
        )
    assert not any(s.is_open for s in current.steps)


@settings(max_examples=300, deadline=None)
@given(roadmaps())
def test_the_work_sticks_only_where_lint_names_a_cycle_or_a_blocked_or_unknown_need(
    found: Roadmap,
) -> None:
    current = found
    while ready_now := readiness(current).ready:
        done = ready_now[0].id
        current = current._replace(
            steps=tuple(s._replace(mark="done") if s.id == done else s for s in current.steps)
        )
    stuck = readiness(current).waiting
    if stuck:
        blocked_needed = any(other.blocked for _, on in stuck for other in on)
        assert blocked_needed or any("wait for each other" in p.message for p in problems(found))


@settings(max_examples=200, deadline=None)
@given(roadmaps())
def test_free_order_without_needs_is_today_s_fleet(found: Roadmap) -> None:
    found = found._replace(order="free", steps=tuple(s._replace(needs=()) for s in found.steps))
    assert list(readiness(found).ready) == [s for s in found.steps if s.is_open]


@settings(max_examples=200, deadline=None)
@given(roadmaps())
def test_side_by_side_by_the_order_alone_agrees_with_doing_the_steps_in_turn(
    found: Roadmap,
) -> None:
    plain = found._replace(steps=tuple(s._replace(needs=(), tags=()) for s in found.steps))
    current, most = plain, 0
    while ready_now := readiness(current).ready:
        most = max(most, len(ready_now))
        current = current._replace(
            steps=tuple(
                s._replace(mark="done") if s.id == ready_now[0].id else s for s in current.steps
            )
        )
    assert side_by_side(plain) == (most > 1)
