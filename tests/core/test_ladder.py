"""The termination ladder, rung by rung and at every boundary, plus its property: always bounded."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcfg.core.ladder import Caps, Decision, Fire, RunState, decide

CAPS = Caps(max_iterations=25, wall_clock=4 * 3600, stall_window=3)
T0 = 1000.0


def fire(**changes: object) -> Fire:
    base = Fire(turn="t1", reply="r1", open=3, blocked=0, now=T0 + 10)
    return replace(base, **changes)  # type: ignore[arg-type]


def engaged(**changes: object) -> RunState:
    """A run that engaged reply r1 of turn t1 with 3 open steps."""
    base = RunState(T0, 1, "t1", "r1", 0, (3,), T0 + 10)
    return replace(base, **changes)  # type: ignore[arg-type]


def outcome(d: Decision) -> tuple[bool, str | None]:
    return d.block, d.event


def test_first_fire_engages_and_counts() -> None:
    d = decide(RunState.fresh(T0), fire(), CAPS)
    assert outcome(d) == (True, "engage")
    assert d.state == RunState(T0, 1, "t1", "r1", 0, (3,), T0 + 10, None)


@pytest.mark.parametrize(
    ("changes", "event"),
    [
        ({"deferred": True}, "deferred-quality-gate"),
        ({"question": True}, "handback-question"),
        ({"background": True}, "handback-background"),
        ({"deferred": True, "question": True, "background": True}, "deferred-quality-gate"),
        ({"question": True, "background": True}, "handback-question"),
    ],
)
def test_handbacks_allow_without_touching_state(changes: dict[str, bool], event: str) -> None:
    run = engaged(halted="halt-stall")
    d = decide(run, fire(**changes), CAPS)
    assert outcome(d) == (False, event)
    assert d.state == run and not d.changed


def test_duplicate_fire_blocks_again_uncounted() -> None:
    d = decide(engaged(), fire(now=T0 + 70), CAPS)  # 60 s after the engagement: still within
    assert outcome(d) == (True, None)
    assert d.state is not None
    assert (d.state.iterations, d.state.repeats) == (1, 1)


def test_duplicate_repeats_are_capped_at_two() -> None:
    d = decide(engaged(repeats=2), fire(), CAPS)
    assert outcome(d) == (True, "engage")
    assert d.state is not None and (d.state.iterations, d.state.repeats) == (2, 0)


@pytest.mark.parametrize(
    "changes",
    [{"now": T0 + 70.5}, {"reply": "r2"}, {"open": 2}, {"now": T0 + 5}],
    ids=["after 60 s", "another reply", "another open count", "clock went back"],
)
def test_not_a_duplicate(changes: dict[str, object]) -> None:
    d = decide(engaged(), fire(**changes), CAPS)
    assert d.event == "engage"


def test_halt_stamp_allows_silently_and_outranks_complete() -> None:
    run = engaged(halted="halt-max-iterations", last_reply=None)
    for open_count in (0, 3):
        d = decide(run, fire(open=open_count, reply="r9"), CAPS)
        assert outcome(d) == (False, None)
        assert not d.changed


def test_halted_run_never_matches_a_duplicate() -> None:
    d = decide(engaged(halted="halt-stall"), fire(), CAPS)
    assert outcome(d) == (False, None)


def test_blocked_only() -> None:
    d = decide(engaged(), fire(open=0, blocked=2, reply="r2"), CAPS)
    assert outcome(d) == (False, "blocked")
    assert d.state is not None and d.state.last_reply is None  # the agent is let go


def test_complete_removes_the_run() -> None:
    d = decide(engaged(), fire(open=0, reply="r2"), CAPS)
    assert outcome(d) == (False, "complete")
    assert d.state is None and d.changed


def test_max_iterations_cap_reached_exactly() -> None:
    below = decide(engaged(iterations=24), fire(reply="r2"), CAPS)
    assert below.event == "engage" and below.state is not None and below.state.iterations == 25
    at = decide(engaged(iterations=25), fire(reply="r2"), CAPS)
    assert outcome(at) == (False, "halt-max-iterations")
    assert at.state is not None and at.state.halted == "halt-max-iterations"


def test_wall_clock_at_the_cap_exactly() -> None:
    just_before = decide(engaged(), fire(reply="r2", now=T0 + CAPS.wall_clock - 0.001), CAPS)
    assert just_before.event == "engage"
    at = decide(engaged(), fire(reply="r2", now=T0 + CAPS.wall_clock), CAPS)
    assert outcome(at) == (False, "halt-wall-clock")


def test_stall_window_just_short_and_just_met() -> None:
    short = decide(engaged(history=(3, 3)), fire(reply="r2"), CAPS)
    assert short.event == "engage"
    met = decide(engaged(history=(3, 3, 3)), fire(reply="r2"), CAPS)
    assert outcome(met) == (False, "halt-stall")
    other = decide(engaged(history=(4, 3, 3)), fire(reply="r2"), CAPS)
    assert other.event == "engage"


def test_new_human_turn_clears_stall_history_but_not_the_counters() -> None:
    d = decide(engaged(history=(3, 3, 3), iterations=5), fire(turn="t2", reply="r2"), CAPS)
    assert d.event == "engage"
    assert d.state is not None
    assert (d.state.history, d.state.iterations, d.state.last_turn) == ((3,), 6, "t2")
    assert decide(engaged(iterations=25), fire(turn="t2", reply="r2"), CAPS).event == (
        "halt-max-iterations"
    )


def test_an_unknown_turn_is_not_a_new_turn() -> None:
    d = decide(engaged(history=(3, 3, 3)), fire(turn="", reply="r2"), CAPS)
    assert d.event == "halt-stall"


def test_shadow_mode_would_engage_without_counting() -> None:
    d = decide(engaged(), fire(reply="r2", shadow=True), CAPS)
    assert outcome(d) == (False, "shadow-engage")
    assert not d.changed
    assert decide(engaged(iterations=25), fire(reply="r2", shadow=True), CAPS).event == (
        "halt-max-iterations"
    )


def test_run_state_json_round_trip_and_validation() -> None:
    run = engaged(history=(5, 4, 3), halted="halt-stall")
    assert RunState.from_json(run.to_json()) == run
    for bad in (
        {**run.to_json(), "iterations": -1},
        {**run.to_json(), "iterations": True},
        {**run.to_json(), "history": [1, "2"]},
        {**run.to_json(), "started_at": "yesterday"},
        {**run.to_json(), "started_at": True},
        {k: v for k, v in run.to_json().items() if k != "halted"},
    ):
        assert RunState.from_json(bad) is None


events = st.tuples(
    st.sampled_from(["t1", "t2", "t3"]),
    st.sampled_from(["r1", "r2", "r3", "r4"]),
    st.integers(0, 4),
    st.integers(0, 2),
    st.floats(0, 400),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(events, max_size=200), st.integers(1, 6), st.integers(1, 4))
def test_blocks_never_exceed_three_times_the_cap(
    fires: list[tuple[str, str, int, int, float, bool]], cap: int, window: int
) -> None:
    caps = Caps(max_iterations=cap, wall_clock=1e9, stall_window=window)
    run: RunState | None = RunState.fresh(0.0)
    now, blocks, engages = 0.0, 0, 0
    for turn, reply, open_count, blocked, step, deferred in fires:
        now += step
        if run is None:
            run = RunState.fresh(now)
        d = decide(run, Fire(turn, reply, open_count, blocked, now, deferred=deferred), caps)
        blocks += d.block
        engages += d.event == "engage"
        if d.event == "complete":
            assert open_count == 0 and blocked == 0
            blocks = engages = 0  # a fresh run starts after completion
        if run.halted is not None:
            assert not d.block, "a halted run never blocks again"
        run = d.state if d.changed else run
        assert blocks <= 3 * cap
        assert engages <= cap


def test_a_new_prompt_while_a_block_still_held_the_turn_is_a_cut_short_run() -> None:
    d = decide(engaged(), fire(turn="t2", reply="r2"), CAPS)
    assert d.cut_short and outcome(d) == (True, "engage")
    assert d.state is not None and d.state.last_turn == "t2"
    again = decide(d.state, fire(turn="t2", reply="r3", now=T0 + 20), CAPS)
    assert not again.cut_short  # said once


@pytest.mark.parametrize(
    "changes", [{"question": True}, {"background": True}, {"open": 0, "blocked": 1}]
)
def test_a_new_prompt_after_the_agent_was_let_go_is_no_cut_short(
    changes: dict[str, object],
) -> None:
    let_go = decide(engaged(), fire(reply="r2", **changes), CAPS)
    assert let_go.state is not None and let_go.changed
    later = decide(let_go.state, fire(turn="t2", reply="r3", open=2), CAPS)
    assert not later.cut_short and outcome(later) == (True, "engage")


def test_a_cut_short_run_is_recorded_even_when_the_next_decision_allows() -> None:
    d = decide(engaged(), fire(turn="t2", reply="r2", deferred=True), CAPS)
    assert d.cut_short and outcome(d) == (False, "deferred-quality-gate")
    assert d.changed and d.state is not None and d.state.last_reply is None
    assert not decide(d.state, fire(turn="t2", reply="r3"), CAPS).cut_short
    assert not decide(engaged(halted="halt-stall"), fire(turn="t2"), CAPS).cut_short
    assert not decide(engaged(), fire(turn=""), CAPS).cut_short  # no turn id: no new turn
