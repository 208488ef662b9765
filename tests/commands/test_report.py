"""`agentcfg report` over hand-made ledgers and over ledgers written by real hook runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg.core import report
from testing.simhost import SimulatedHost
from tests import inprocess
from tests.conftest import run_cli, write_roadmap


def line(event: str, at: str, run: str = "aaaa1111", slug: str = "demo", **fields: object) -> str:
    base = {"event": event, "at": f"2026-11-20T{at}Z", "run": run, "slug": slug, "turn": "t"}
    return json.dumps({**base, **fields})


HAND_MADE = [
    line("claimed", "10:00:00", open=None),
    line("engage", "10:00:10", open=5, blocked=1, iterations=1),
    line("engage", "10:01:00", open=4, blocked=1, iterations=2),
    line("refused", "10:02:00", open=3, detector="deference"),
    line("deferred-quality-gate", "10:02:00", open=3),
    line("engage", "10:03:00", open=3, blocked=1, iterations=3),
    line("engage", "10:04:00", open=1, blocked=1, iterations=4),
    line("blocked", "10:05:00", open=0, blocked=1, iterations=4),
    "{not json",
    "",
    json.dumps(["a", "list"]),
    json.dumps({"event": "engage", "at": "yesterday"}),
    line("claimed", "11:00:00", run="bbbb2222", slug="other"),
    line("engage", "11:00:05", run="bbbb2222", slug="other", open=2),
    line("cut-short", "11:00:08", run="bbbb2222", slug="other", open=2),
    line("engage", "11:00:10", run="bbbb2222", slug="other", open=2),
    line("engage", "11:00:15", run="bbbb2222", slug="other", open=2),
    line("halt-stall", "11:00:20", run="bbbb2222", slug="other", open=2),
    line("claimed", "12:00:00", run="cccc3333"),
    line("handback-question", "12:00:05", run="cccc3333", open=2),
    line("handback-background", "12:00:06", run="cccc3333", open=2),
    line("shadow-engage", "12:00:07", run="cccc3333", open=2),
    line("refused", "12:00:08", run="cccc3333", detector="promissory-closing"),
    line("refused", "12:00:09", run="cccc3333", detector="unproven-step"),
    line("engage", "12:00:10", run="cccc3333", open=2),
    line("engage", "12:00:30", run="cccc3333", open=1),
    line("complete", "12:01:00", run="cccc3333", open=0),
    line("engage", "12:02:00", run="cccc3333", open=3),
    line("verified", "12:02:10", run=None, step="1.2", passed=True),
    line("marked-done", "12:02:11", run=None, step="1.2", verified=True),
    line("error", "12:03:00", run="cccc3333", reason="roadmap unreadable"),
    line("halt-max-iterations", "12:04:00", run="dddd4444", slug="ghost", open=2),
    line("paused", "12:05:00", run="eeee5555", open=2),
    line("released", "12:06:00", run="eeee5555", inside_session=True),
]


def test_hand_made_ledger_figures() -> None:
    data = report.build(HAND_MADE).to_json()
    assert (data["lines"], data["skipped"]) == (len(HAND_MADE), 4)
    assert data["runs"] == 5
    assert data["engagements"] == 10
    assert data["outcomes"] == {
        "blocked": 1, "halt-max-iterations": 1, "halt-stall": 1, "released": 1, "running": 1
    }  # fmt: skip
    assert (data["paused"], data["released"]) == (1, {"total": 1, "inside_session": 1})
    assert data["steps_closed"] == 5 + 2  # demo 5 -> 0, then cccc 2 -> 0
    assert data["refusals"] == {"deference": 1, "promissory-closing": 1, "unproven-step": 1}
    assert data["handbacks"] == {"question": 1, "background": 1}
    assert (data["shadow_would_engage"], data["deferred_to_quality_gate"]) == (1, 1)
    assert data["longest_engagement_streak"] == 4
    assert data["cut_short_by_host"] == 1
    assert (data["verified"], data["marked_done"], data["errors"]) == (1, 1, 1)
    rows = {(r["run"], r["outcome"]): r for r in data["rows"]}
    assert rows[("aaaa1111", "blocked")]["burndown"] == [5, 4, 3, 1, 0]  # and as it ended
    assert rows[("cccc3333", "running")]["engagements"] == 3  # new work after `complete`: one run
    assert [r["cut_short"] for r in data["rows"] if r["run"] == "bbbb2222"] == [1]


def spent(total: int | None) -> dict[str, int] | None:
    return None if total is None else {"input": 1, "output": 2, "cache_read": total - 3,
                                       "cache_write": 0, "total": total}  # fmt: skip


# Each fire's tokens paid for the segment since the run's previous fire: the cost of the
# engagement before it, if it followed one.
TOKENED = [
    line("claimed", "10:00:00", open=None),
    line("engage", "10:00:10", open=3, step="1.1", tokens=spent(1000)),  # the person's turn
    line("engage", "10:01:00", open=2, step="1.2", tokens=spent(5000)),  # #1 closed 1.1
    line("engage", "10:02:00", open=2, step="1.2", tokens=spent(8000)),  # #2 closed nothing
    line("refused", "10:03:00", open=2, detector="deference"),
    line("deferred-quality-gate", "10:03:00", open=2, tokens=spent(2000)),  # #3 closed nothing
    line("engage", "10:04:00", open=1, step="1.3", tokens=spent(3000)),  # after the gate's push
    line("complete", "10:05:00", open=0, tokens=spent(4000)),  # #4 closed 1.3
    line("claimed", "11:00:00", run="bbbb2222", slug="other", open=None),
    line("engage", "11:00:05", run="bbbb2222", slug="other", open=2, step="1.1", tokens=None),
    line("engage", "11:00:10", run="bbbb2222", slug="other", open=2, step="1.1", tokens=spent(600)),
    line("halt-token-budget", "11:00:15", run="bbbb2222", slug="other", open=2,
         tokens=spent(500)),
]  # fmt: skip


def test_tokens_per_run_per_step_waste_and_the_costliest_engagement() -> None:
    data = report.build(TOKENED).to_json()
    first, second = data["rows"]
    assert first["tokens"] == {
        "total": 23000, "per_step_closed": 7667, "waste": 10000, "unknown": 0,
        "costliest": {"engagement": 2, "step": "1.2", "tokens": 8000, "closed": 0},
        "engagements": [
            {"engagement": 1, "step": "1.1", "tokens": 5000, "closed": 1},
            {"engagement": 2, "step": "1.2", "tokens": 8000, "closed": 0},
            {"engagement": 3, "step": "1.2", "tokens": 2000, "closed": 0},
            {"engagement": 4, "step": "1.3", "tokens": 4000, "closed": 1},
        ],
    }  # fmt: skip
    assert second["outcome"] == "halt-token-budget"
    assert second["tokens"] == {
        "total": 1100, "per_step_closed": None, "waste": 1100, "unknown": 1,
        "costliest": {"engagement": 1, "step": "1.1", "tokens": 600, "closed": 0},
        "engagements": [
            {"engagement": 1, "step": "1.1", "tokens": 600, "closed": 0},
            {"engagement": 2, "step": "1.1", "tokens": 500, "closed": 0},
        ],
    }  # fmt: skip
    assert data["tokens"] == {
        "total": 24100, "per_step_closed": 8033, "waste": 11100, "unknown": 1,
        "costliest": {"engagement": 2, "step": "1.2", "tokens": 8000, "closed": 0},
        "costliest_run": {"run": "aaaa1111", "slug": "demo"},
    }  # fmt: skip


def test_a_ledger_without_tokens_reports_them_unknown_not_zero() -> None:
    data = report.build(HAND_MADE).to_json()
    assert data["tokens"]["total"] is None and data["tokens"]["waste"] is None
    assert all(row["tokens"]["total"] is None for row in data["rows"])


def test_filters() -> None:
    assert report.build(HAND_MADE, slug="other").to_json()["runs"] == 1
    assert report.build(HAND_MADE, run="cccc").to_json()["runs"] == 1
    since = report.parse_iso("2026-11-20T12:00:00Z")
    assert report.build(HAND_MADE, since=since).to_json()["engagements"] == 3


def test_rows_are_bounded_and_newest_kept() -> None:
    lines = [
        line("engage", f"10:{n // 60:02d}:{n % 60:02d}", run=f"r{n:07d}", open=1)
        for n in range(500)
    ]
    data = report.build(lines, keep=5).to_json()
    assert data["runs"] == 500
    assert [row["run"] for row in data["rows"]] == [f"r{n:07d}" for n in range(495, 500)]


def write_ledger(root: Path, lines: list[str]) -> None:
    (root / "state").mkdir(exist_ok=True)
    (root / "state" / "run-continuation.jsonl").write_text("\n".join(lines) + "\n")


def test_text_and_json_output(ws: Path, snapshot: SnapshotAssertion) -> None:
    write_ledger(ws, HAND_MADE)
    text = run_cli("report")
    assert text.exit_code == 0
    assert text.output == snapshot
    assert json.loads(run_cli("report", "--json").output) == snapshot


def test_text_output_with_tokens(ws: Path, snapshot: SnapshotAssertion) -> None:
    write_ledger(ws, TOKENED)
    assert run_cli("report").output == snapshot


def test_empty_and_absent_ledgers_are_friendly(ws: Path) -> None:
    assert run_cli("report").output.startswith("no continuation events to report yet")
    write_ledger(ws, ["garbage", "{"])
    result = run_cli("report")
    assert result.exit_code == 0
    assert "(2 unreadable lines skipped)" in result.output


@pytest.mark.parametrize("args", [["--since", "soon"], ["--limit", "0"]])
def test_bad_options(ws: Path, args: list[str]) -> None:
    result = run_cli("report", *args)
    assert result.exit_code == 2


def test_over_a_ledger_written_by_real_hook_runs(ws: Path) -> None:
    done = SimulatedHost(ws, run=inprocess.run)
    done.human("go")
    done.trust("demo")
    done.claim("demo")
    for _ in range(6):
        done.reply("Working.")
        result = done.fire()
        if result.next_step:
            done.agentcfg("roadmap", "done", "demo", result.next_step)
    stuck = SimulatedHost(ws, run=inprocess.run)
    stuck.human("go")
    write_roadmap(ws, "stuck", "## Phase 1\n- [ ] **1.1** never done <!-- verify: false -->\n")
    stuck.claim("stuck")
    for n in range(5):
        stuck.reply(f"Thinking {n}.")
        stuck.fire()
    data = json.loads(run_cli("report", "--json").output)
    outcomes = {row["run"][:8]: row["outcome"] for row in data["rows"]}
    assert outcomes[report_key(done)] == "blocked"
    assert outcomes[report_key(stuck)] == "halt-stall"
    assert data["engagements"] == 3 + 3
    assert data["steps_closed"] >= 3


def report_key(host: SimulatedHost) -> str:
    from agentcfg.claims import session_key

    return session_key(host.session_id)[:8]


def test_blocked_pauses_a_run_rather_than_ending_it() -> None:
    lines = [
        line("engage", "10:00:00", open=1, blocked=1),
        line("blocked", "10:01:00", open=0, blocked=1),
        line("engage", "10:30:00", open=1, blocked=0),
        line("complete", "10:31:00", open=0, blocked=0),
    ]
    data = report.build(lines).to_json()
    assert data["runs"] == 1
    assert data["outcomes"] == {"complete": 1}
    assert data["rows"][0]["engagements"] == 2


def test_a_run_is_counted_once_however_its_ledger_ends() -> None:
    lines = [line("claimed", "10:00:00")]
    for n in range(5):  # ledgers written before outcomes were once per run repeat them
        lines += [line("engage", f"10:0{n}:10", open=1), line("complete", f"10:0{n}:20", open=0)]
    data = report.build(lines).to_json()
    assert (data["runs"], data["outcomes"]) == (1, {"complete": 1})
    again = report.build([*lines, line("claimed", "11:00:00")]).to_json()
    assert again["runs"] == 2  # only a claim starts another run


def test_open_runs_are_bounded() -> None:
    lines = [
        line("engage", "10:00:00", run=f"r{n:07d}", open=1) for n in range(report.OPEN_RUNS + 50)
    ]
    data = report.build(lines, keep=3).to_json()
    assert data["runs"] == report.OPEN_RUNS + 50
    assert data["outcomes"] == {"running": report.OPEN_RUNS + 50}
