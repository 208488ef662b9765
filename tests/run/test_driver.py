"""`agentcfg run`: the driver's pure decisions (core.unattended), its texts, its refusals of bad
input before anything starts, and its waits that a person's `agentcfg stop` ends."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion

from agentcfg import controls
from agentcfg.core.times import iso
from agentcfg.hosts import claude, codex, copilot, gemini, opencode, qwen
from agentcfg.run import driver
from agentcfg.run import model as plan
from agentcfg.run.model import Action, Ended, Policy, Progress, Window
from agentcfg.run.runners import Plain
from agentcfg.workspace import Workspace
from tests.conftest import run_cli, write_roadmap

NOW = 1_790_024_000.0  # 2026-09-21T20:53:20Z
OPEN = Ended(code=0, ending=None)  # the host ended cleanly with work still open


# --- the decision after a host process ended ---


@pytest.mark.parametrize(
    ("ending", "code"),
    [
        ("complete", 0),
        ("blocked", 10),
        ("halt-max-iterations", 11),
        ("halt-token-budget", 11),
        ("halt-wall-clock", 11),
        ("halt-stall", 12),
        ("handback-question", 13),
        ("paused", 13),
        ("released", 13),
        ("stopped", 14),
        ("halt-roadmap-absent", 15),
        ("halt-contract-changed", 15),
        ("halt-state-tampered", 15),
        ("halt-unproven", 15),
        ("some-future-halt", 15),
    ],
)
def test_an_ending_finishes_with_its_familys_exit_code(ending: str, code: int) -> None:
    action = plan.decide(Progress(starts=1), Ended(0, ending), NOW, Policy())
    assert (action.kind, action.ending, action.exit_code) == ("finish", ending, code)


def test_an_ending_wins_over_a_spent_restart_budget() -> None:
    spent = Progress(starts=4, restarts=3)
    assert plan.decide(spent, Ended(1, "complete"), NOW, Policy(max_restarts=3)).exit_code == 0


def test_work_left_when_the_host_ended_cleanly_resumes_at_once() -> None:
    action = plan.decide(Progress(starts=1), OPEN, NOW, Policy())
    assert action == Action("start", at=NOW, resume=True, reason="cut-short")


def test_a_crash_resumes_after_a_backoff_that_doubles_in_a_row() -> None:
    policy = Policy(crash_backoff=10.0)
    waits = [
        plan.decide(Progress(starts=1, failures=n), Ended(1, None), NOW, policy).at - NOW
        for n in range(4)
    ]
    assert waits == [10.0, 20.0, 40.0, 80.0]
    signalled = plan.decide(Progress(starts=1), Ended(None, None), NOW, policy)
    assert (signalled.reason, signalled.resume) == ("crash", True)


def test_a_second_crash_in_a_row_with_nothing_done_starts_a_new_session() -> None:
    crashed = Ended(1, None)
    first = plan.decide(Progress(starts=2), crashed, NOW, Policy())
    assert (first.reason, first.resume) == ("crash", True)
    again = plan.decide(plan.advance(Progress(starts=2), first, crashed), crashed, NOW, Policy())
    assert (again.reason, again.resume) == ("crash", False)
    moved = plan.decide(
        Progress(starts=3, failures=1), Ended(1, None, progressed=True), NOW, Policy()
    )
    assert moved.resume  # a step closed before it crashed: the session is worth carrying on


def test_a_crash_after_progress_is_carried_on_at_once() -> None:
    action = plan.decide(
        Progress(starts=1, failures=3), Ended(1, None, progressed=True), NOW, Policy()
    )
    assert (action.reason, action.at) == ("crash", NOW)
    assert (
        plan.advance(Progress(1, failures=3), action, Ended(1, None, progressed=True)).failures == 0
    )


def test_a_step_done_under_fresh_per_step_starts_a_new_session_outside_the_budget() -> None:
    spent = Progress(starts=3, restarts=2)
    action = plan.decide(spent, Ended(None, None, next_step=True), NOW, Policy(max_restarts=2))
    assert action == Action("start", at=NOW, reason="next-step")
    assert plan.advance(spent, action, Ended(None, None, next_step=True)) == Progress(
        starts=4, restarts=2, fresh=1
    )


def test_a_failed_re_proof_carries_the_run_on_until_the_same_steps_fail_it_again() -> None:
    failed = frozenset({"1.2"})
    again = plan.after_reproof(Progress(starts=1), failed, None, NOW, Policy())
    assert again == Action("start", at=NOW, resume=True, reason="reproof")
    assert plan.after_reproof(Progress(2, 1), frozenset({"1.3"}), failed, NOW, Policy()) == again
    same = plan.after_reproof(Progress(starts=2, restarts=1), failed, failed, NOW, Policy())
    assert (same.ending, same.exit_code) == ("halt-unproven", 15)
    spent = plan.after_reproof(Progress(3, 2), failed, None, NOW, Policy(max_restarts=2))
    assert spent.ending == "halt-restarts"
    untrusted = plan.after_reproof(Progress(1), failed, None, NOW, Policy(), closable=False)
    assert untrusted.ending == "halt-unproven"  # nothing the agent can mend: no restart


def test_the_restart_budget_spent_halts() -> None:
    action = plan.decide(Progress(starts=3, restarts=2), OPEN, NOW, Policy(max_restarts=2))
    assert (action.ending, action.exit_code) == ("halt-restarts", 16)


def test_a_usage_limit_with_an_announced_reset_waits_for_it() -> None:
    action = plan.decide(Progress(starts=1), Ended(1, None, reset_at=NOW + 3600), NOW, Policy())
    assert action == Action(
        "start",
        at=NOW + 3600,
        resume=True,
        reason="usage-limit",
        pause="paused-usage-limit",
        reset_at=NOW + 3600,
    )


def test_a_usage_limit_with_no_reset_told_backs_off_up_to_five_hours() -> None:
    waits = [
        plan.decide(Progress(starts=1, limits=n), Ended(1, None, reset_at=NOW), NOW, Policy()).at
        - NOW
        for n in (0, 1, 2, 9, 40)
    ]
    assert waits == [60.0, 120.0, 240.0, 5 * 3600.0, 5 * 3600.0]
    assert (
        plan.decide(Progress(starts=1), Ended(1, None, reset_at=NOW), NOW, Policy()).reset_at
        is None
    )


def test_no_wait_is_longer_than_max_wait() -> None:
    far = Ended(1, None, reset_at=NOW + 86400)
    assert plan.decide(Progress(starts=1), far, NOW, Policy(max_wait=2.0)).at == NOW + 2.0


def test_a_start_after_until_is_a_told_halt() -> None:
    policy = Policy(until=NOW + 600)
    limited = Ended(1, None, reset_at=NOW + 3600)
    action = plan.decide(Progress(starts=1), limited, NOW, policy)
    assert (action.kind, action.ending, action.exit_code) == ("finish", "halt-until", 11)
    assert plan.first(NOW + 600, policy).ending == "halt-until"
    assert plan.first(NOW, policy) == Action("start", at=NOW)


def test_outside_the_window_a_start_waits_for_it_to_open() -> None:
    # NOW is 20:53 UTC; the window opens at 22:00 (offset 0) or at 22:00 in UTC+2 (20:00 UTC)
    window = Window(22 * 60, 6 * 60)
    action = plan.first(NOW, Policy(window=window))
    assert (action.at - NOW, action.pause) == (67 * 60 - 20, "paused-window")
    assert plan.first(NOW, Policy(window=window, utc_offset=7200)) == Action("start", at=NOW)
    # a usage limit whose reset falls outside the window waits for both, named as the limit
    limited = plan.decide(
        Progress(starts=1), Ended(1, None, reset_at=NOW + 60), NOW, Policy(window=window)
    )
    assert limited.pause == "paused-usage-limit" and limited.at == NOW + 67 * 60 - 20


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("22:00-06:00", Window(1320, 360)),
        ("09:30-17:00", Window(570, 1020)),
        (" 00:00-23:59 ", Window(0, 1439)),
        ("9:30-17:00", None),
        ("22:00-22:00", None),
        ("24:00-06:00", None),
        ("22:00", None),
        ("night", None),
        ("", None),
    ],
)
def test_a_window_parses_only_as_hh_mm_hh_mm(text: str, expected: Window | None) -> None:
    assert plan.parse_window(text) == expected


@given(st.integers(0, 1439), st.integers(0, 1439), st.floats(0, 7 * 86400))
def test_a_window_wait_always_lands_inside_it(start: int, end: int, later: float) -> None:
    if start == end:
        return
    window = Window(start, end)
    at = NOW + later
    wait = window.wait(at, 0.0)
    assert 0 <= wait < 86400
    assert window.wait(at + wait, 0.0) == 0.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("21:00", NOW + 400),  # 20:53:20 now: later today
        ("20:00", NOW + 86400 - 3200),  # passed today: tomorrow
        ("8h", NOW + 8 * 3600),
        ("2026-09-22T06:00:00Z", 1_790_056_800.0),
        ("tomorrow", None),
        ("25:00", None),
        ("90", None),
    ],
)
def test_until_reads_a_clock_time_an_iso_time_or_a_duration(
    text: str, expected: float | None
) -> None:
    assert plan.parse_until(text, NOW, 0.0) == expected


# --- the budget holds whatever the hosts do ---

ENDS = st.one_of(
    st.builds(Ended, st.sampled_from([0, 1, 2, None]), st.none(), st.none(), st.booleans()),
    st.builds(Ended, st.just(1), st.none(), st.floats(NOW - 100, NOW + 86400), st.just(False)),
    st.builds(Ended, st.just(0), st.sampled_from(["complete", "halt-stall", "stopped"])),
    st.builds(Ended, st.sampled_from([0, None]), st.none(), next_step=st.just(True)),
)


@settings(max_examples=300)
@given(st.lists(ENDS, min_size=1, max_size=60), st.integers(0, 12))
def test_host_starts_never_exceed_the_restart_budget(ends: list[Ended], budget: int) -> None:
    """The driver's loop over decisions, with the hosts ending as hypothesis likes."""
    policy = Policy(max_restarts=budget)
    progress, ended, now = Progress(), None, NOW
    action = plan.first(now, policy)
    outcomes = iter(ends)
    while action.kind == "start":
        now = max(now, action.at)
        progress = plan.advance(progress, action, ended)
        ended = next(outcomes, Ended(0, "complete"))
        action = plan.decide(progress, ended, now, policy)
    assert progress.restarts <= budget
    # a step's own new session (--fresh-per-step) is progress, bounded by the steps, not a restart
    assert progress.starts == 1 + progress.restarts + progress.fresh
    assert progress.fresh == sum(1 for end in ends[: progress.starts - 1] if end.next_step)
    assert action.ending is not None


# --- texts a person reads (snapshots) ---


def test_the_live_lines_and_the_endings(snapshot: SnapshotAssertion) -> None:
    engage = {"event": "engage", "iterations": 3, "step": "1.2", "tokens": {"total": 12345}}
    unknown = {"event": "engage", "iterations": 4, "step": None, "tokens": None}
    row = {"engagements": 7, "tokens": {"total": 48210}, "wall_seconds": 4210.5}
    progress = Progress(starts=3, restarts=2)
    limit = Action("start", at=NOW + 5400, resume=True, reason="usage-limit",
                   pause="paused-usage-limit", reset_at=NOW + 5400)  # fmt: skip
    texts = [
        plan.start_line("claude", "demo", "0b6f", Action("start", at=NOW), 0),
        plan.start_line("codex", "demo", None, Action("start", at=NOW), 0),
        plan.start_line(
            "claude", "demo", "0b6f", Action("start", NOW, resume=True, reason="cut-short"), 1
        ),
        plan.start_line(
            "gemini", "demo", "0b6f", Action("start", NOW, resume=True, reason="crash"), 2
        ),
        plan.start_line("gemini", "demo", "5d1e", Action("start", NOW, reason="crash"), 3),
        plan.start_line("claude", "demo", "0b6f", limit, 3),
        plan.start_line("claude", "demo", "9a2c", Action("start", NOW, reason="next-step"), 3),
        plan.engagement_line(engage, 95, 25),
        plan.engagement_line(unknown, 4000, 25),
        plan.pause_line(limit, NOW),
        plan.pause_line(
            Action(
                "start", at=NOW + 60, resume=True, reason="usage-limit", pause="paused-usage-limit"
            ),
            NOW,
        ),
        plan.pause_line(Action("start", at=NOW + 3 * 3600, pause="paused-window"), NOW),
        plan.ending_text("complete", 0, "demo", 5, row, progress),
        plan.ending_text("halt-restarts", 16, "demo", 0, None, Progress(starts=11, restarts=10)),
        plan.ending_text("interrupted", 130, "demo", 1, {"engagements": 1}, Progress(1)),
        plan.start_line(
            "claude", "demo", "0b6f", Action("start", NOW, resume=True, reason="reproof"), 2
        ),
        plan.ending_text("complete", 0, "demo", 3, None, Progress(1), "re-proof 3 steps in 1.2 s"),
        plan.ending_text(
            "halt-unproven",
            15,
            "demo",
            0,
            None,
            Progress(2, 1),
            "re-proof 3 steps in 0.4 s, 2 failed",
        ),
    ]
    assert "\n".join(texts) == snapshot


def test_the_relay_note(snapshot: SnapshotAssertion) -> None:
    reply = "\n".join(f"reply line {n}" for n in range(1, 31))
    note = plan.relay_note(
        "demo",
        "cut-short",
        "2 open steps, 3 done",
        ["1.1 passed at 2026-09-21T20:00:00Z", "1.2 passed at 2026-09-21T20:10:00Z"],
        reply,
        "run-continuation: roadmap `demo` has 2 open steps — iteration 4/25.",
    )
    assert note == snapshot
    assert "reply line 10" not in note and "reply line 11" in note  # its last 20 lines only


# --- each host's headless command line ---


def test_each_host_starts_and_resumes_its_own_way() -> None:
    extra = ("--x", "1")
    stream = ["--output-format", "stream-json", "--verbose"]  # what the driver reads
    assert claude.headless("go", "s-1", False, extra) == [
        "-p", "go", "--session-id", "s-1", "--x", "1", *stream,
    ]  # fmt: skip
    assert claude.headless("go", "s-1", True, ()) == ["-p", "go", "--resume", "s-1", *stream]
    # the person's own output format is kept
    own = ("--output-format", "json")
    assert claude.headless("go", "s-1", True, own) == ["-p", "go", "--resume", "s-1", *own]
    assert gemini.headless("go", "s-1", False, ()) == ["-p", "go", "--session-id", "s-1"]
    assert gemini.headless("go", "s-1", True, ()) == ["-p", "go", "--resume", "s-1"]
    assert codex.headless("go", None, False, extra) == ["exec", "--x", "1", "go"]
    assert codex.headless("go", "t-1", True, extra) == ["exec", "resume", "--x", "1", "t-1", "go"]
    assert codex.headless("go", None, True, ()) is None  # no thread id known: nothing to resume
    assert qwen.headless("go", "s-1", False, extra) == ["go", "--session-id", "s-1", "--x", "1"]
    assert qwen.headless("go", "s-1", True, ()) == ["go", "--resume", "s-1"]
    assert copilot.headless("go", "s-1", True, ()) == ["-p", "go", "--resume", "s-1"]
    # sent to the run's `opencode serve` with `--attach` (see tests/run/test_runners.py)
    assert opencode.headless("go", "ses_1", True, extra) == [
        "run", "--session", "ses_1", "--x", "1", "go"
    ]  # fmt: skip


def test_claude_code_ending_on_a_limit_is_told_apart() -> None:
    rejected = (
        "API Error: Request rejected (429) · Number of requests has exceeded your rate limit."
    )
    assert claude.limit_reset(rejected, NOW) == NOW  # a limit, its reset not told
    assert claude.limit_reset("Claude AI usage limit reached|1790003600", NOW) == 1_790_003_600.0
    assert claude.limit_reset("Done with that step.", NOW) is None
    assert claude.limit_reset("API Error: 500 Internal Server Error", NOW) is None


@pytest.mark.parametrize(
    "printed",
    [
        "You've hit your 5-hour limit · resets 9am (UTC)",
        "Claude AI usage limit reached|1790003600",
        "API Error: Request rejected (429) · rate limited",
        f"Claude AI usage limit reached|{'9' * 5000}",
    ],
    ids=["clock", "epoch", "429", "5000-digits"],
)
def test_a_limit_line_from_a_start_that_exited_0_is_the_models_words(printed: str) -> None:
    """The line the host prints when it fails on a limit is, from a start that exited 0, the
    model's reply (tests/run/test_process.py runs such a host whole)."""
    plain = Plain(claude, "claude")
    assert plain.limit_reset(printed, NOW, None, 1) is not None
    assert plain.limit_reset(printed, NOW, None, None) is not None  # ended by a signal
    assert plain.limit_reset(printed, NOW, None, 0) is None


# --- bad input: one line, non-zero, nothing started ---


def _installed(root: Path, host: str = "claude") -> None:
    assert run_cli("hooks", "install", "--host", host).exit_code == 0
    if (root / "roadmaps" / "demo.md").exists():  # its verify lines, as a person trusts them
        assert run_cli("roadmap", "trust", "demo").exit_code == 0


def _nothing_started(root: Path) -> None:
    assert not (root / "state" / "claims").exists() or not list(
        (root / "state" / "claims").glob("*.json")
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "vim"], "agentcfg: error: unknown host 'vim' (one of: claude, codex, copilot, cursor, gemini, opencode, qwen)"),
        (["--host", "cursor"], "agentcfg: error: Cursor cannot be run unattended yet (hosts that can: claude, codex, copilot, gemini, opencode, qwen)"),
        (["--host", "claude", "--window", "late"], "agentcfg: error: --window 'late' is not HH:MM-HH:MM, e.g. 22:00-06:00"),
        (["--host", "claude", "--until", "soon"], "agentcfg: error: --until 'soon' is not HH:MM, an ISO-8601 time or a duration like 8h"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_before_anything_starts(
    ws: Path, args: list[str], message: str
) -> None:
    result = run_cli("run", "demo", *args, env={"PATH": "/nonexistent"})
    assert (result.exit_code, result.output) == (1, message + "\n")
    _nothing_started(ws)


def test_a_missing_host_binary_is_refused(ws: Path, tmp_path: Path) -> None:
    _installed(ws)
    result = run_cli("run", "demo", "--host", "claude", env={"PATH": str(tmp_path)})
    assert result.exit_code == 1
    assert (
        result.output
        == "agentcfg: error: cannot find Claude Code's program `claude` on PATH: install it first\n"
    )
    _nothing_started(ws)


def _fake_binary(folder: Path, name: str) -> dict[str, str]:
    folder.mkdir(exist_ok=True)
    program = folder / name
    program.write_text('#!/bin/sh\necho started >> "$0.log"\n')
    program.chmod(0o755)
    return {"PATH": str(folder), "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}


def test_a_roadmap_that_is_not_autonomous_is_refused(ws: Path, tmp_path: Path) -> None:
    write_roadmap(ws, "manual", "- [ ] one\n", mode="interactive")
    _installed(ws)
    env = _fake_binary(tmp_path / "bin", "claude")
    result = run_cli("run", "manual", "--host", "claude", env=env)
    assert result.exit_code == 1
    assert result.output == (
        "agentcfg: error: roadmap `manual` is not autonomous: set `execution: {mode: autonomous}` "
        "in its frontmatter to run it unattended\n"
    )
    assert not (tmp_path / "bin" / "claude.log").exists()
    _nothing_started(ws)


def test_a_refused_run_points_to_lint_when_the_frontmatter_has_an_error(
    ws: Path, tmp_path: Path
) -> None:
    (ws / "roadmaps" / "flat.md").write_text("---\nmode: autonomous\n---\n- [ ] one\n")
    _installed(ws)
    env = _fake_binary(tmp_path / "bin", "claude")
    result = run_cli("run", "flat", "--host", "claude", env=env)
    assert result.exit_code == 1
    assert result.output == (
        "agentcfg: error: roadmap `flat` is not autonomous: set `execution: {mode: autonomous}` "
        "in its frontmatter to run it unattended; `agentcfg roadmap lint flat` finds 1 error\n"
    )
    _nothing_started(ws)


def test_a_host_without_our_stop_hook_is_refused(ws: Path, tmp_path: Path) -> None:
    env = _fake_binary(tmp_path / "bin", "claude")
    result = run_cli("run", "demo", "--host", "claude", env=env)
    assert result.exit_code == 1
    assert result.output == (
        "agentcfg: error: the stop hook is not installed for Claude Code: run "
        "`agentcfg hooks install --host claude` first\n"
    )
    _nothing_started(ws)


def test_an_unknown_roadmap_is_refused(ws: Path, tmp_path: Path) -> None:
    _installed(ws)
    result = run_cli(
        "run", "nope", "--host", "claude", env=_fake_binary(tmp_path / "bin", "claude")
    )
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert result.output.startswith("agentcfg: error: ")


# --- a person's stop ends a driver that waits ---


class StepClock:
    """A clock that moves only when the driver sleeps; `during` runs at each sleep."""

    def __init__(self, start: float, during: list[object]) -> None:
        self.moment, self.during, self.slept = start, during, 0

    def now(self) -> float:
        return self.moment

    def sleep(self, seconds: float) -> None:
        self.slept += 1
        if self.slept == 3:
            for act in self.during:
                act()  # type: ignore[operator]
        self.moment += seconds


def test_a_person_stopping_the_roadmap_ends_a_wait_for_a_reset(ws: Path, tmp_path: Path) -> None:
    _installed(ws)
    workspace = Workspace(ws)
    env = _fake_binary(tmp_path / "bin", "claude")
    request = driver.Request("demo", "claude", Policy(window=Window(0, 1)), (), False)
    ready = driver.prepare(workspace, request, env, tmp_path / "home")
    clock = StepClock(NOW, [lambda: controls.stop(workspace, ["demo"], "a-person", NOW + 2)])
    lines: list[str] = []
    result = driver.drive(workspace, request, ready, env, clock, lines.append)
    assert (result.ending, result.exit_code, result.progress.starts) == ("stopped", 14, 0)
    assert not (tmp_path / "bin" / "claude.log").exists()  # the host never started
    ledger = [
        json.loads(line)
        for line in (ws / "state" / "run-continuation.jsonl").read_text().splitlines()
    ]
    assert [e["event"] for e in ledger] == [
        "trusted", "claimed", "paused-window", "stop-requested", "stopped",
    ]  # fmt: skip
    assert ledger[-1]["by"] == "a-person" and ledger[-1]["run"] == ledger[1]["run"]
    assert lines[0].startswith("agentcfg run: outside the window; resuming at ")
    assert lines[-2].startswith("agentcfg run: stopped — roadmap `demo` (exit 14)\n")
    # what the person runs to carry on: the run takes its claim back by itself
    assert lines[-1] == "  next: agentcfg resume demo, then: agentcfg run demo --host claude"


def test_watch_counts_down_to_a_wait_of_the_driver(ws: Path) -> None:
    from agentcfg import claims, state, watch

    workspace = Workspace(ws)
    made = claims.claim(workspace, "s-1", "demo", now=NOW)
    resume_at = NOW + 5400
    paused = state.event(
        "paused-usage-limit", NOW, made.claim.key, "demo", resume_at=iso(resume_at), reset_at=None
    )
    state.append_ledger(workspace.state, paused)
    frame = watch.frame(workspace, {}, NOW + 600, width=160)
    assert "paused-usage-limit" in frame and "resumes in 1h20m" in frame


# --- the first line: can the agent forge what decides the run's ending? ---


@pytest.mark.parametrize(
    ("extra", "first"),
    [
        ([], "agentcfg run: store open — an agent that edits agentcfg's own store can forge"),
        (["--", "-s"], "agentcfg run: store sealed — Gemini CLI's sandbox keeps the agent out"),
    ],
)
def test_the_first_line_says_whether_the_store_is_out_of_the_agents_reach(
    ws: Path, tmp_path: Path, extra: list[str], first: str
) -> None:
    _installed(ws, "gemini")
    env = {**_fake_binary(tmp_path / "bin", "gemini"), "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    result = run_cli("run", "demo", "--host", "gemini", "--max-restarts", "1", *extra, env=env)
    assert result.output.splitlines()[0].startswith(first)
    assert (tmp_path / "bin" / "gemini.log").exists()  # said before the host started


def test_a_stop_hook_the_host_will_not_run_is_refused_before_it_starts(
    ws: Path, tmp_path: Path
) -> None:
    _installed(ws, "gemini")  # in a folder Gemini CLI does not trust: it skips project hooks
    env = _fake_binary(tmp_path / "bin", "gemini")
    result = run_cli("run", "demo", "--host", "gemini", env=env)
    assert result.exit_code == 1
    (line,) = result.output.splitlines()
    assert line.startswith(
        f"agentcfg: error: Gemini CLI will not run the stop hook in {ws}/.gemini/settings.json: "
        f"{ws} is not a trusted folder: Gemini CLI skips its project hooks; fix: trust the folder"
    )
    assert not (tmp_path / "bin" / "gemini.log").exists()  # the host never started


def test_a_run_state_the_host_rewrote_ends_the_run_non_zero(ws: Path, tmp_path: Path) -> None:
    """The host process writes `"ended": "complete"` into its run's state and exits: the driver
    reads a record whose seal fails, and ends `halt-state-tampered`, never `complete`."""
    _installed(ws)
    env = _fake_binary(tmp_path / "bin", "claude")
    forge = (
        "import json, pathlib\n"
        "for p in pathlib.Path('state/runs').glob('*.json'):\n"
        "    d = json.loads(p.read_text()); d['ended'] = 'complete'; p.write_text(json.dumps(d))\n"
    )
    program = tmp_path / "bin" / "claude"
    program.write_text(f'#!/bin/sh\n{sys.executable} -c "{forge}"\n')
    result = run_cli("run", "demo", "--host", "claude", "--max-restarts", "1", env=env)
    assert result.exit_code == 15
    assert "agentcfg run: halt-state-tampered — roadmap `demo` (exit 15)" in result.output
    assert "complete" not in result.output


# --- how the driver reads a host process's end, and the decision after it ---


def test_nothing_open_without_a_told_ending_is_re_proved_before_it_completes() -> None:
    finished = plan.after_host(Progress(starts=1), Ended(0, None, finished=True), NOW, Policy())
    assert (finished.kind, finished.recorded) == ("reprove", False)
    told = plan.after_host(Progress(starts=1), Ended(0, "complete"), NOW, Policy())
    assert (told.kind, told.recorded) == ("reprove", True)


def test_a_host_ended_at_until_with_work_open_is_the_drivers_halt() -> None:
    action = plan.after_host(Progress(starts=1), Ended(None, None, deadline=True), NOW, Policy())
    assert (action.ending, action.exit_code, action.recorded) == ("halt-until", 11, False)
    hooks = plan.after_host(Progress(1), Ended(None, "halt-stall", deadline=True), NOW, Policy())
    assert (hooks.ending, hooks.recorded) == ("halt-stall", True)


def test_a_re_proof_decides_complete_or_what_its_failures_allow() -> None:
    passed = plan.reproved(Progress(1), (), None, True, NOW, Policy())
    assert (passed.ending, passed.exit_code, passed.recorded) == ("complete", 0, True)
    mendable = plan.reproved(Progress(1), (("1.2", "exit 1"),), None, False, NOW, Policy())
    assert (mendable.kind, mendable.reason) == ("start", "reproof")
    again = plan.reproved(Progress(2, 1), (("1.2", "exit 1"),), (("1.2", "exit 2"),), False,
                          NOW, Policy())  # fmt: skip
    assert again.ending == "halt-unproven"
    untrusted = plan.reproved(Progress(1), (("1.2", "not trusted"),), None, False, NOW, Policy())
    assert untrusted.ending == "halt-unproven"


def test_the_hooks_hand_back_is_its_last_word_on_the_run() -> None:
    def said(*names: str, run: str = "r1") -> list[dict[str, object]]:
        return [{"event": name, "run": run} for name in names]

    assert plan.handed_back(said("engage", "handback-question", "verified"), "r1") == (
        "handback-question"
    )
    assert plan.handed_back(said("handback-question", "engage"), "r1") is None
    assert plan.handed_back(said("stopped", run="r2"), "r1") is None
    assert plan.handed_back(said("stopped", "marked-done"), "r1") == "stopped"


def test_a_session_moved_on_once_the_hook_engaged_it_after_a_closed_step() -> None:
    engaged = {"event": "engage", "run": "r1"}
    closed = {"event": "verified", "run": None}
    assert plan.progressed([closed]) and not plan.progressed([engaged])
    assert plan.moved_on([engaged, closed, engaged], "r1")
    assert not plan.moved_on([engaged, closed], "r1")
    assert not plan.moved_on([closed, {"event": "engage", "run": "r2"}], "r1")
