"""The termination ladder, rung by rung and at every boundary, plus its property: always bounded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcfg.core.ladder import Caps, Decision, Fire, RunState, clamp, decide, fingerprint

CAPS = Caps(max_iterations=25, wall_clock=4 * 3600, stall_window=3)
T0 = 1000.0


def ids(*names: str) -> frozenset[str]:
    return frozenset(names)


THREE = ids("1.1", "1.2", "1.3")


def fire(open: int | None = None, **changes: object) -> Fire:
    """A fire of reply r1 in turn t1; `open=n` sees steps 1.1 .. 1.n open."""
    base = Fire(turn="t1", reply="r1", open_ids=THREE, blocked=0, now=T0 + 10)
    if open is not None:
        changes["open_ids"] = frozenset(f"1.{n}" for n in range(1, open + 1))
    return base._replace(**changes)  # type: ignore[arg-type]


def seen(open_ids: frozenset[str] = THREE) -> str:
    return fingerprint(fire(open_ids=open_ids))


def engaged(**changes: object) -> RunState:
    """A run that engaged reply r1 of turn t1 with steps 1.1-1.3 open."""
    base = RunState(T0, 1, "t1", "r1", 0, (seen(),), T0 + 10)
    return base._replace(**changes)  # type: ignore[arg-type]


def outcome(d: Decision) -> tuple[bool, str | None]:
    return d.block, d.event


def test_first_fire_engages_and_counts() -> None:
    d = decide(RunState.fresh(T0), fire(), CAPS)
    assert outcome(d) == (True, "engage")
    assert d.state == RunState(T0, 1, "t1", "r1", 0, (seen(),), T0 + 10, None)


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
def test_handbacks_allow_and_let_the_agent_go(changes: dict[str, bool], event: str) -> None:
    run = engaged()
    d = decide(run, fire(**changes), CAPS)
    assert outcome(d) == (False, event)
    held = event == "deferred-quality-gate"  # the gate blocked: the turn goes on
    assert d.state == (run if held else run._replace(last_reply=None))


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


def test_same_count_other_steps_is_not_a_duplicate() -> None:
    d = decide(engaged(), fire(open_ids=ids("1.2", "1.3", "1.4")), CAPS)
    assert d.event == "engage"


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"open": 0},
        {"question": True},
        {"deferred": True},
        {"background": True},
        {"person": "pause"},
        {"open_ids": None},
    ],
)
def test_a_halted_run_is_silent_whatever_the_fire_says(changes: dict[str, object]) -> None:
    run = engaged(halted="halt-max-iterations", last_reply=None)
    d = decide(run, fire(reply="r9", **changes), CAPS)
    assert outcome(d) == (False, None)
    assert not d.changed


def test_halted_run_never_matches_a_duplicate() -> None:
    d = decide(engaged(halted="halt-stall"), fire(), CAPS)
    assert outcome(d) == (False, None)


def test_blocked_only_is_written_once() -> None:
    d = decide(engaged(), fire(open=0, blocked=2, reply="r2"), CAPS)
    assert outcome(d) == (False, "blocked")
    assert d.state.last_reply is None  # the agent is let go
    assert d.state.ended == "blocked" and d.changed
    again = decide(d.state, fire(open=0, blocked=2, reply="r3", question=True), CAPS)
    assert outcome(again) == (False, None) and not again.changed


def test_complete_is_written_once_and_new_work_goes_on_as_the_same_run() -> None:
    d = decide(engaged(iterations=4), fire(open=0, reply="r2"), CAPS)
    assert outcome(d) == (False, "complete")
    assert d.state.ended == "complete"
    for reply in ("r3", "r4", "r5"):
        later = decide(d.state, fire(open=0, reply=reply, turn="t2"), CAPS)
        assert outcome(later) == (False, None) and not later.changed
    more = decide(d.state, fire(open_ids=ids("2.1"), reply="r6", turn="t2"), CAPS)
    assert outcome(more) == (True, "engage")
    assert (more.state.iterations, more.state.ended) == (5, None)  # the same run counts on


def test_complete_waits_for_the_final_re_proof_whatever_the_run_state_says() -> None:
    waiting = decide(engaged(iterations=4), fire(open=0, reply="r2", unfinal=True), CAPS)
    assert outcome(waiting) == (True, "engage") and waiting.state.ended is None
    forged = engaged(iterations=4, ended="complete", last_reply=None)
    again = decide(forged, fire(open=0, reply="r3", unfinal=True), CAPS)
    assert outcome(again) == (True, "engage")  # rung 4 needs the fire's own ending
    proven = decide(again.state, fire(open=0, reply="r4"), CAPS)
    assert outcome(proven) == (False, "complete")
    assert outcome(decide(engaged(), fire(open=0, blocked=1, unfinal=True), CAPS)) == (
        False,
        "blocked",
    )


def test_blocked_then_complete_each_once() -> None:
    blocked = decide(engaged(), fire(open=0, blocked=1, reply="r2"), CAPS).state
    d = decide(blocked, fire(open=0, blocked=0, reply="r3"), CAPS)
    assert outcome(d) == (False, "complete")


def test_an_absent_roadmap_halts_once() -> None:
    d = decide(engaged(), fire(open_ids=None, reply="r2"), CAPS)
    assert outcome(d) == (False, "halt-roadmap-absent")
    assert d.state.halted == "halt-roadmap-absent"
    assert outcome(decide(d.state, fire(open_ids=None, reply="r3"), CAPS)) == (False, None)


@pytest.mark.parametrize("open_now", [0, 2])
def test_a_record_that_fails_its_seal_halts_once_never_complete(open_now: int) -> None:
    d = decide(engaged(), fire(open=open_now, reply="r2", tampered=True, changed=True), CAPS)
    assert outcome(d) == (False, "halt-state-tampered")
    assert (d.state.halted, d.state.ended) == ("halt-state-tampered", None)
    assert outcome(decide(d.state, fire(open=0, reply="r3"), CAPS)) == (False, None)


def test_the_person_pauses_and_says_go_on() -> None:
    d = decide(engaged(), fire(reply="r2", turn="t2", person="pause"), CAPS)
    assert outcome(d) == (False, "paused")
    assert d.state.paused
    for changes in ({"person": "pause"}, {"person": None, "turn": "t3"}, {"question": True}):
        still = decide(d.state, fire(reply="r3", **changes), CAPS)  # type: ignore[arg-type]
        assert outcome(still) == (False, None) and not still.changed
    resumed = decide(d.state, fire(reply="r4", turn="t4", person="resume"), CAPS)
    assert outcome(resumed) == (True, "engage")
    assert not resumed.state.paused


def test_a_pause_outranks_a_question_and_is_kept_by_a_finished_run() -> None:
    d = decide(engaged(), fire(reply="r2", person="pause", question=True), CAPS)
    assert outcome(d) == (False, "paused")
    done = engaged(ended="complete")
    kept = decide(done, fire(open=0, reply="r3", person="pause"), CAPS)
    assert outcome(kept) == (False, None) and kept.state.paused  # silent, yet remembered
    new_work = decide(kept.state, fire(reply="r4", turn="t2"), CAPS)
    assert outcome(new_work) == (False, None) and new_work.state.paused


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


S = seen()


def test_stall_window_just_short_and_just_met() -> None:
    short = decide(engaged(history=(S, S)), fire(reply="r2"), CAPS)
    assert short.event == "engage"
    met = decide(engaged(history=(S, S, S)), fire(reply="r2"), CAPS)
    assert outcome(met) == (False, "halt-stall")
    other = decide(engaged(history=(seen(ids("1.9")), S, S)), fire(reply="r2"), CAPS)
    assert other.event == "engage"


def test_stall_compares_the_open_steps_not_their_count() -> None:
    # closing one step while finding another each turn keeps the count and is progress
    run, turn_open = RunState.fresh(T0), ["1.1", "1.2", "1.3"]
    for n in range(4, 12):
        d = decide(run, fire(open_ids=frozenset(turn_open), reply=f"r{n}"), CAPS)
        assert d.event == "engage"
        run = d.state
        turn_open = [*turn_open[1:], f"1.{n}"]
    # the same open steps, fire after fire, halt after stall_window engagements
    run, events = RunState.fresh(T0), list[str | None]()
    for n in range(5):
        d = decide(run, fire(reply=f"s{n}"), CAPS)
        events.append(d.event)
        run = d.state
    assert events == ["engage", "engage", "engage", "halt-stall", None]


@pytest.mark.parametrize(
    ("budget", "tokens", "event"),
    [
        (None, 10**9, "engage"),  # no budget set
        (1000, None, "engage"),  # no tokens known
        (1000, 999, "engage"),
        (1000, 1000, "halt-token-budget"),  # reached exactly
        (1000, 5000, "halt-token-budget"),
    ],
)
def test_token_budget(budget: int | None, tokens: int | None, event: str) -> None:
    d = decide(engaged(), fire(reply="r2", tokens=tokens), CAPS._replace(max_tokens=budget))
    assert d.event == event
    assert d.state is not None and d.block == (event == "engage")
    assert d.state.halted == (None if event == "engage" else event)


def test_token_budget_sits_beside_the_other_caps() -> None:
    caps = CAPS._replace(max_tokens=100)
    spent = fire(reply="r2", tokens=100)
    assert decide(engaged(iterations=25), spent, caps).event == "halt-max-iterations"
    late = spent._replace(now=T0 + CAPS.wall_clock)
    assert decide(engaged(), late, caps).event == "halt-token-budget"
    assert decide(engaged(), spent._replace(open_ids=frozenset()), caps).event == "complete"
    assert decide(engaged(), spent._replace(question=True), caps).event == "handback-question"


def test_new_human_turn_clears_stall_history_but_not_the_counters() -> None:
    d = decide(engaged(history=(S, S, S), iterations=5), fire(turn="t2", reply="r2"), CAPS)
    assert d.event == "engage"
    assert (d.state.history, d.state.iterations, d.state.last_turn) == ((S,), 6, "t2")
    assert decide(engaged(iterations=25), fire(turn="t2", reply="r2"), CAPS).event == (
        "halt-max-iterations"
    )


def test_an_unknown_turn_is_not_a_new_turn() -> None:
    d = decide(engaged(history=(S, S, S)), fire(turn="", reply="r2"), CAPS)
    assert d.event == "halt-stall"


def test_shadow_mode_would_engage_without_counting() -> None:
    d = decide(engaged(), fire(reply="r2", shadow=True), CAPS)
    assert outcome(d) == (False, "shadow-engage")
    assert not d.changed
    assert decide(engaged(iterations=25), fire(reply="r2", shadow=True), CAPS).event == (
        "halt-max-iterations"
    )


def test_run_state_json_round_trip_and_validation() -> None:
    run = engaged(history=(S, "x"), halted="halt-stall", ended="complete", paused=True,
                  tokens=1234, mark=("/t.jsonl", 99))  # fmt: skip
    assert RunState.from_json(run.to_json()) == run
    older = {
        k: v for k, v in run.to_json().items() if k not in ("ended", "paused", "tokens", "mark")
    }
    assert RunState.from_json({**older, "history": [3, 3]}) == run._replace(
        history=("3", "3"), ended=None, paused=False, tokens=None, mark=None
    )  # a run state from before open-step fingerprints: counts never match one
    for bad in (
        {**run.to_json(), "iterations": -1},
        {**run.to_json(), "iterations": True},
        {**run.to_json(), "history": [1, None]},
        {**run.to_json(), "paused": "yes"},
        {**run.to_json(), "started_at": "yesterday"},
        {**run.to_json(), "started_at": True},
        {k: v for k, v in run.to_json().items() if k != "halted"},
        {**run.to_json(), "tokens": -1},
        {**run.to_json(), "tokens": 1.5},
        {**run.to_json(), "mark": ["/t.jsonl"]},
        {**run.to_json(), "mark": ["/t.jsonl", -1]},
        {**run.to_json(), "mark": "/t.jsonl:99"},
    ):
        assert RunState.from_json(bad) is None


def test_clamp_cuts_budgets_to_their_limits_and_says_so() -> None:
    assert clamp("max_iterations", 1000) == (1000, None)
    assert clamp("max_iterations", 5000) == (1000, "5000 is above the limit of 1000; using 1000")
    assert clamp("wall_clock", 8 * 86400.0) == (
        7 * 86400.0,
        "8d0h is above the limit of 7d0h; using 7d0h",
    )


events = st.tuples(
    st.sampled_from(["t1", "t2", "t3"]),
    st.sampled_from(["r1", "r2", "r3", "r4"]),
    st.one_of(st.none(), st.frozensets(st.sampled_from(["1.1", "1.2", "1.3", "2.1"]))),
    st.integers(0, 2),
    st.floats(0, 400),
    st.booleans(),
    st.sampled_from([None, None, "pause", "resume"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(events, max_size=200), st.integers(1, 6), st.integers(1, 4))
def test_blocks_never_exceed_three_times_the_cap_and_outcomes_are_written_once(
    fires: list[tuple[str, str, frozenset[str] | None, int, float, bool, str | None]],
    cap: int,
    window: int,
) -> None:
    caps = Caps(max_iterations=cap, wall_clock=1e9, stall_window=window)
    run = RunState.fresh(0.0)
    now, blocks, engages, written = 0.0, 0, 0, []
    for turn, reply, open_ids, blocked, step, deferred, person in fires:
        now += step
        f = Fire(turn, reply, open_ids, blocked, now, deferred=deferred, person=person)
        d = decide(run, f, caps)
        blocks += d.block
        engages += d.event == "engage"
        if d.event in ("complete", "blocked"):
            assert f.open == 0 and (blocked > 0) == (d.event == "blocked")
            assert written[-1:] != [d.event], "an ending is written once until work goes on"
        if d.event is not None and d.event.startswith("halt-"):
            assert not any(e.startswith("halt-") for e in written), "one halt per run"
        if run.halted is not None:
            assert (d.block, d.event) == (False, None), "a halted run says nothing more"
        if d.event in ("complete", "blocked", "engage") or (d.event or "").startswith("halt-"):
            written.append(d.event or "")
        assert d.changed == (d.state != run)
        run = d.state
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


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 400), st.sampled_from(["r1", "r2", "r3"])), max_size=60),
    st.integers(1, 2000),
)
def test_no_engagement_once_the_token_budget_is_spent(
    fires: list[tuple[int, str]], budget: int
) -> None:
    caps = Caps(max_iterations=1000, wall_clock=1e9, stall_window=1000, max_tokens=budget)
    run, tokens = RunState.fresh(0.0), 0
    for n, (spent, reply) in enumerate(fires):
        tokens += spent
        d = decide(run, fire(reply=reply, now=float(n), tokens=tokens), caps)
        if tokens >= budget:  # a duplicate fire may still repeat the last text, uncounted
            assert d.event in ("halt-token-budget", None)
        run = d.state
