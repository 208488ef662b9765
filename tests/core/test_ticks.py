"""A roadmap's marks merge as a union: ticks from two branches never make a conflict."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentcfg.core.ticks import retick, unticked

BASE = "## Phase 1\n- [ ] **1.1** one\n- [ ] **1.2** two\n- [ ] **1.3** three\n"


def test_a_side_unticked_carries_the_bases_marks_and_keeps_its_other_lines() -> None:
    ours = (
        "## Phase 1\n- [x] **1.1** one\n- [ ] **1.2** two\n- [ ] **1.3** three\n- [ ] **1.4** new\n"
    )
    assert unticked(ours, BASE) == BASE + "- [ ] **1.4** new\n"


def test_ticks_from_both_sides_are_put_back_on_the_merge() -> None:
    ours = BASE.replace("[ ] **1.1**", "[x] **1.1**")
    theirs = BASE.replace("[ ] **1.2**", "[X] **1.2**")
    merged = retick(BASE, BASE, ours, theirs)
    assert merged == BASE.replace("[ ] **1.1**", "[x] **1.1**").replace(
        "[ ] **1.2**", "[X] **1.2**"
    )


def test_a_closed_box_wins_over_any_other_change_and_ours_over_theirs_otherwise() -> None:
    ours = BASE.replace("[ ] **1.1**", "[/] **1.1**").replace("[ ] **1.2**", "[/] **1.2**")
    theirs = BASE.replace("[ ] **1.1**", "[x] **1.1**").replace("[ ] **1.2**", "[~] **1.2**")
    merged = retick(BASE, BASE, ours, theirs)
    assert "- [x] **1.1**" in merged and "- [/] **1.2**" in merged and "- [ ] **1.3**" in merged


def test_line_endings_and_repeated_lines_are_left_as_they_are() -> None:
    base = "- [ ] same\r\n- [ ] same\r\n- [ ] other\r\n"
    ours = "- [x] same\r\n- [ ] same\r\n- [x] other\r\n"
    assert retick(base, base, ours, base) == "- [ ] same\r\n- [ ] same\r\n- [x] other\r\n"


marks = st.sampled_from(" x/~-")


@given(st.lists(st.tuples(marks, marks), min_size=1, max_size=12))
def test_every_box_closed_on_either_side_is_closed_after_the_merge(
    pairs: list[tuple[str, str]],
) -> None:
    base = "".join(f"- [ ] step {n}\n" for n in range(len(pairs)))
    ours = "".join(f"- [{a}] step {n}\n" for n, (a, _) in enumerate(pairs))
    theirs = "".join(f"- [{b}] step {n}\n" for n, (_, b) in enumerate(pairs))
    assert unticked(ours, base) == base == unticked(theirs, base)
    merged = retick(base, base, ours, theirs).splitlines()
    for n, (a, b) in enumerate(pairs):
        expected = "x" if "x" in (a, b) else (a if a != " " else b)
        assert merged[n] == f"- [{expected}] step {n}"
