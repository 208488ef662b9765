"""The person's reserve of each usage window (core.quota) and what `agentcfg run` decides from
it (run.model): when a run pauses, until when, and when another listed host takes over."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion

from agentcfg.core import quota
from agentcfg.core.quota import Reading
from agentcfg.run import model as plan
from agentcfg.run.model import Action, Ended, Policy, Progress

NOW = 1_790_024_000.0  # 2026-09-21T20:53:20Z
MARGIN = 120.0
HOUR = 3600.0

shares = st.floats(min_value=0.0, max_value=1.5, allow_nan=False)
reserves = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)
resets = st.one_of(st.none(), st.floats(min_value=NOW - 6 * HOUR, max_value=NOW + 8 * 24 * HOUR))
readings = st.builds(Reading, st.sampled_from(["five_hour", "seven_day", "x"]), shares, resets)


def five(used: float, reset_in: float = HOUR) -> Reading:
    return Reading("five_hour", used, NOW + reset_in)


# --- which window eats into the reserve ---


def test_a_window_at_the_reserves_edge_is_spent_and_one_just_under_is_not() -> None:
    assert quota.spent([five(0.70)], 30, NOW, MARGIN) == five(0.70)
    assert quota.spent([five(0.6999)], 30, NOW, MARGIN) is None


def test_a_window_whose_reset_and_margin_have_passed_no_longer_holds_the_run() -> None:
    assert quota.spent([five(0.95, reset_in=-MARGIN)], 30, NOW, MARGIN) is None
    assert quota.spent([five(0.95, reset_in=-MARGIN + 1)], 30, NOW, MARGIN) is not None


def test_a_window_whose_reset_is_not_told_never_pauses_the_run() -> None:
    assert quota.spent([Reading("five_hour", 1.0, None)], 30, NOW, MARGIN) is None


def test_of_several_spent_windows_the_one_resetting_last_holds_the_run() -> None:
    week = Reading("seven_day", 0.75, NOW + 3 * 24 * HOUR)
    assert quota.spent([five(0.9), week, five(0.1)], 30, NOW, MARGIN) == week


def test_the_latest_reading_of_each_window_replaces_the_one_before() -> None:
    known = {"five_hour": five(0.9), "seven_day": Reading("seven_day", 0.2, NOW + HOUR)}
    found = quota.latest(known, [five(0.1), five(0.3)])
    assert found == {"five_hour": five(0.3), "seven_day": known["seven_day"]}


@given(st.lists(readings, max_size=6), reserves, st.floats(0, 600))
def test_a_spent_window_is_over_the_line_and_still_ahead_of_its_reset(
    shown: list[Reading], reserve: float, margin: float
) -> None:
    over = quota.spent(shown, reserve, NOW, margin)
    held = [
        r
        for r in shown
        if r.reset_at is not None
        and r.utilization >= (100 - reserve) / 100
        and r.reset_at + margin > NOW
    ]
    assert (over is None) == (not held)
    if over is not None:
        assert over in held
        assert all((r.reset_at or 0) <= (over.reset_at or 0) for r in held)


@given(st.lists(readings, max_size=6), reserves, reserves)
def test_a_larger_reserve_pauses_at_least_as_often(
    shown: list[Reading], small: float, large: float
) -> None:
    small, large = min(small, large), max(small, large)
    if quota.spent(shown, small, NOW, MARGIN) is not None:
        assert quota.spent(shown, large, NOW, MARGIN) is not None


def test_a_reserve_of_nothing_pauses_only_a_window_used_up() -> None:
    assert quota.spent([five(0.99)], 0, NOW, MARGIN) is None
    assert quota.spent([five(1.0)], 0, NOW, MARGIN) is not None


# --- the driver's decisions ---


def reserved(**changes: object) -> Policy:
    return Policy(reserve=30.0, quota_margin=MARGIN, **changes)  # type: ignore[arg-type]


def test_a_host_ended_for_the_reserve_waits_for_the_reset_and_margin_then_resumes() -> None:
    action = plan.decide(Progress(starts=1), Ended(None, None, quota=five(0.72)), NOW, reserved())
    assert action == Action(
        "start", at=NOW + HOUR + MARGIN, resume=True, reason="quota", pause="paused-quota",
        reset_at=NOW + HOUR, quota=five(0.72),
    )  # fmt: skip


def test_the_reserves_wait_is_no_longer_than_max_wait_at_a_time() -> None:
    action = plan.quota_pause(five(0.8, reset_in=4 * HOUR), NOW, reserved(max_wait=HOUR))
    assert action.at == NOW + HOUR and action.pause == "paused-quota"


def test_a_reserve_pause_past_until_is_the_told_halt() -> None:
    action = plan.decide(
        Progress(starts=1), Ended(0, None, quota=five(0.8)), NOW, reserved(until=NOW + 600)
    )
    assert (action.kind, action.ending) == ("finish", "halt-until")


def test_an_ending_wins_over_the_reserve() -> None:
    action = plan.decide(Progress(starts=1), Ended(0, "complete", quota=five(0.9)), NOW, reserved())
    assert action.kind == "finish" and action.ending == "complete"


def test_a_start_waits_while_a_window_last_shown_still_eats_into_the_reserve() -> None:
    start = Action("start", at=NOW, resume=True, reason="cut-short")
    held = plan.held([five(0.9)], NOW, reserved(), start)
    assert (held.at, held.reason, held.resume, held.pause) == (
        NOW + HOUR + MARGIN, "cut-short", True, "paused-quota"
    )  # fmt: skip
    assert plan.held([five(0.5)], NOW, reserved(), start) == start
    assert plan.held([five(0.9)], NOW, Policy(), start) == start  # no reserve asked
    assert plan.held([five(0.9)], NOW + HOUR + MARGIN, reserved(), start) == start


@given(st.lists(readings, max_size=4), reserves, st.floats(0, 8 * HOUR))
def test_a_held_start_never_comes_before_the_spent_windows_reset_and_margin(
    shown: list[Reading], reserve: float, max_wait: float
) -> None:
    policy = Policy(reserve=reserve, quota_margin=MARGIN, max_wait=max(max_wait, 1.0))
    held = plan.held(shown, NOW, policy, Action("start", at=NOW))
    over = quota.spent(shown, reserve, NOW, MARGIN)
    if over is None:
        assert held.at == NOW and held.pause is None
    else:  # waits end in a fresh look: at most max_wait now, never past the reset's margin
        assert NOW < held.at <= (over.reset_at or 0) + MARGIN
        assert held.at == min((over.reset_at or 0) + MARGIN, NOW + policy.max_wait)


# --- another listed host takes over ---


def test_a_paused_host_hands_the_run_to_the_first_listed_host_that_is_not_paused() -> None:
    wait = plan.quota_pause(five(0.8), NOW, reserved())
    hosts = ["claude", "codex", "gemini"]
    assert plan.failover(wait, "claude", hosts, {"claude": wait.at}, NOW) == "codex"
    busy = {"claude": wait.at, "codex": NOW + 60}
    assert plan.failover(wait, "claude", hosts, busy, NOW) == "gemini"
    assert plan.failover(wait, "claude", ["claude", "codex"], busy, NOW) is None
    assert plan.failover(wait, "claude", ["claude"], {}, NOW) is None


def test_only_a_limits_or_the_reserves_wait_is_handed_over() -> None:
    window = Action("start", at=NOW + HOUR, pause="paused-window")
    crash = Action("start", at=NOW + 10, reason="crash")
    for action in (window, crash, Action("start", at=NOW), plan.finish("complete")):
        assert plan.failover(action, "claude", ["claude", "codex"], {}, NOW) is None
    limit = plan.decide(Progress(starts=1), Ended(1, None, reset_at=NOW + HOUR), NOW, Policy())
    assert plan.failover(limit, "claude", ["claude", "codex"], {}, NOW) == "codex"


def test_a_paused_host_is_free_again_at_its_reset_not_at_the_end_of_one_wait() -> None:
    policy = reserved(max_wait=60.0)
    wait = plan.quota_pause(five(0.8, reset_in=2 * HOUR), NOW, policy)
    assert wait.at == NOW + 60 and plan.paused_until(wait, policy) == NOW + 2 * HOUR + MARGIN
    limit = Action("start", at=NOW + 60, pause="paused-usage-limit", reset_at=NOW + HOUR)
    assert plan.paused_until(limit, policy) == NOW + HOUR
    untold = Action("start", at=NOW + 60, pause="paused-usage-limit")
    assert plan.paused_until(untold, policy) == NOW + 60


# --- texts ---


def test_the_reserves_lines(snapshot: SnapshotAssertion) -> None:
    wait = plan.quota_pause(five(0.7213, reset_in=2 * HOUR), NOW, reserved())
    week = plan.quota_pause(Reading("seven_day", 0.9, NOW + 50 * HOUR), NOW, reserved())
    limit = Action("start", at=NOW + HOUR, pause="paused-usage-limit", reset_at=NOW + HOUR)
    texts = [
        plan.pause_line(wait, NOW),
        plan.pause_line(week, NOW),
        plan.start_line(
            "claude", "demo", "s-1", Action("start", NOW, resume=True, reason="quota"), 2
        ),
        plan.failover_line("claude", "codex", wait.pause, plan.paused_until(wait, reserved()), NOW),
        plan.failover_line("claude", "codex", limit.pause, NOW + HOUR, NOW),
        plan.start_line("codex", "demo", None, Action("start", NOW, reason="failover"), 3),
        plan.relay_note("demo", "failover", "1 open step, 1 done", [], "Done with 1.1.", "Go on."),
    ]
    assert "\n".join(texts) == snapshot


@pytest.mark.parametrize(("raw", "share"), [(30, 0.7), (0, 1.0), (100, 0.0), (12.5, 0.875)])
def test_the_line_a_reserve_draws(raw: float, share: float) -> None:
    assert quota.limit(raw) == pytest.approx(share)
