"""One truth for a run's state: a re-claim is the same run, a person's stop reads as stopped, a
run nothing drives is never `running`, and a complete run's burndown ends at 0. The ledgers are
built from the events agentcfg itself writes (state.event), in the shapes the driver, the hook
and `roadmap done` give them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from syrupy.assertion import SnapshotAssertion

from agentcfg import state
from agentcfg.core import report
from tests.conftest import run_cli

T0 = 1_794_996_000.0  # 2026-11-18 10:00:00 UTC
KEY = "k" * 16
SESSION = "0b9e6a2c-session"


def ev(name: str, at: float, run: str | None = KEY, slug: str = "demo", **fields: object) -> str:
    return json.dumps(state.event(name, at, run, slug, **fields))


def spent(total: int) -> dict[str, int]:
    return {"input": 10, "output": total - 10, "cache_read": 0, "cache_write": 0, "total": total}


def driver_start(at: float, open_count: int, attempt: int = 1, **fields: Any) -> str:
    return ev(
        "run-start" if attempt == 1 else "run-resume", at, open=open_count, blocked=0,
        host="claude", session=SESSION, pending=None, attempt=attempt,
        reason=fields.pop("reason", "first start"), same_session=False, **fields,
    )  # fmt: skip


def close(at: float, step: str, left: int) -> list[str]:
    """`roadmap done` from the session's shell: its check's receipt, then the tick."""
    return [
        ev("verified", at, open=left + 1, blocked=0, step=step, exit_code=0, passed=True),
        ev("marked-done", at + 1, open=left, blocked=0, step=step, verified=True),
    ]


def engage(at: float, open_count: int, n: int, step: str, tokens: int) -> str:
    return ev(
        "engage", at, turn="t", open=open_count, blocked=0, host="claude", iterations=n,
        reply="r", tokens=spent(tokens), step=step,
    )  # fmt: skip


CLAIMED = ev("claimed", T0, iterations=0, max_iterations=None, wall_clock=None, max_tokens=None)

# `agentcfg run` on a three-step roadmap whose agent claims the roadmap again on its first turn
RECLAIMED = [
    CLAIMED,
    driver_start(T0 + 1, 3),
    ev("claimed", T0 + 20, iterations=0, max_iterations=None, wall_clock=None, max_tokens=None),
    *close(T0 + 60, "1.1", 2),
    engage(T0 + 90, 2, 1, "1.2", 4000),
    *close(T0 + 150, "1.2", 1),
    engage(T0 + 180, 1, 2, "1.3", 3000),
    *close(T0 + 240, "1.3", 0),
    ev("complete", T0 + 270, turn="t", open=0, blocked=0, iterations=2, reply="r",
       tokens=spent(2000), proven=3, contract=3),
]  # fmt: skip

# the same run, stopped by the person after its second step: the driver records `stopped`
STOPPED = [
    *RECLAIMED[:8],
    ev("stop-requested", T0 + 200, run=None, by="terminal"),
    ev("stopped", T0 + 201, turn="t", host="claude", by="terminal", reply="r"),
    ev("stopped", T0 + 202, starts=1, restarts=0, by="terminal"),
]


def test_a_reclaim_is_one_run_and_a_complete_burndown_ends_at_zero() -> None:
    data = report.build(RECLAIMED).to_json()
    assert data["runs"] == 1
    (row,) = data["rows"]
    assert (row["outcome"], row["said"]) == ("complete", "complete at 2026-11-18 10:04")
    assert (row["engagements"], row["closed"], data["steps_closed"]) == (2, 3, 3)
    assert row["burndown"] == [2, 1, 0]
    assert data["outcomes"] == {"complete": 1}
    timeline = row["timeline"]
    assert [p["open"] for p in timeline["open"]] == [3, 2, 1, 0]
    assert timeline["closes"] == [
        {"at": "2026-11-18T10:01:01Z", "step": "1.1", "engagement": 0, "tokens": None},
        {"at": "2026-11-18T10:02:31Z", "step": "1.2", "engagement": 1, "tokens": 3000},
        {"at": "2026-11-18T10:04:01Z", "step": "1.3", "engagement": 2, "tokens": 2000},
    ]


def test_a_run_a_person_stopped_reads_as_stopped_with_every_close_counted() -> None:
    data = report.build(STOPPED, now=T0 + 9000).to_json()
    (row,) = data["rows"]
    assert row["outcome"] == "stopped"
    assert row["said"] == "stopped by a person (terminal) at 2026-11-18 10:03"
    assert (row["closed"], row["burndown"]) == (2, [2, 1])
    assert data["outcomes"] == {"stopped": 1}
    (wait,) = row["timeline"]["waits"]
    assert (wait["kind"], wait["by"], wait["until"]) == ("stopped", "terminal", None)


def test_a_stop_lifted_with_no_driver_left_stays_stopped() -> None:
    data = report.build([*STOPPED, ev("resumed", T0 + 400, run=None, by="terminal")]).to_json()
    (row,) = data["rows"]
    assert row["outcome"] == "stopped"
    assert row["said"].endswith("; resumed at 2026-11-18 10:06, no turn since")
    assert row["timeline"]["waits"][0]["until"] == "2026-11-18T10:06:40Z"


def test_a_stop_requested_of_a_session_that_never_fires_again_is_stopped() -> None:
    lines = [*RECLAIMED[:5], ev("stop-requested", T0 + 100, run=None, by="terminal")]
    assert report.build(lines, now=T0 + 200).to_json()["rows"][0]["outcome"] == "stopped"
    again = [*lines, engage(T0 + 300, 2, 2, "1.2", 100)]  # resumed and fired: it goes on
    assert report.build(again, now=T0 + 310).to_json()["rows"][0]["outcome"] == "running"


def test_a_run_nothing_reports_on_is_idle_not_running() -> None:
    lines = RECLAIMED[:5]
    assert report.build(lines, now=T0 + 100).to_json()["rows"][0]["outcome"] == "running"
    (row,) = report.build(lines, now=T0 + 90 + report.IDLE_AFTER + 1).to_json()["rows"]
    assert row["outcome"] == "idle"
    assert row["said"] == "idle since 2026-11-18 10:01: no driver or session has reported since"


def test_a_wait_for_a_reset_is_waiting_until_its_time_then_idle_without_a_driver() -> None:
    wait = ev("paused-usage-limit", T0 + 100, resume_at="2026-11-18T11:00:00Z",
              reset_at="2026-11-18T10:58:00Z")  # fmt: skip
    lines = [*RECLAIMED[:5], wait]
    row = report.build(lines, now=T0 + 200).to_json()["rows"][0]
    assert row["outcome"] == "waiting"
    assert row["said"] == "waiting for the usage limit to reset; resumes at 2026-11-18 11:00"
    row = report.build(lines, now=T0 + 3600 + report.WAIT_GRACE + 1).to_json()["rows"][0]
    assert row["outcome"] == "idle"
    assert "no driver took it up" in row["said"]
    resumed = [*lines, driver_start(T0 + 3600, 2, attempt=2, reason="usage limit reset")]
    row = report.build(resumed, now=T0 + 3610).to_json()["rows"][0]
    assert row["outcome"] == "running"
    assert row["timeline"]["waits"] == [
        {"kind": "paused-usage-limit", "from": "2026-11-18T10:01:40Z",
         "until": "2026-11-18T11:00:00Z", "by": None}
    ]  # fmt: skip
    assert row["timeline"]["restarts"] == [
        {"at": "2026-11-18T11:00:00Z", "reason": "usage limit reset"}
    ]


def test_a_claim_after_an_ending_still_starts_a_run() -> None:
    assert report.build([*RECLAIMED, CLAIMED.replace("10:00:00", "12:00:00")]).runs_total == 2


OTHER = "q" * 16  # the session a driver's run goes on in


def test_a_driver_run_that_goes_on_in_a_new_session_is_one_run() -> None:
    """`agentcfg run` starting a step's work in a new session (a relay, a host change): the new
    session's claim and everything after it are the same run's, told once."""
    first = [CLAIMED, driver_start(T0 + 1, 3, driver="d1"), engage(T0 + 30, 3, 1, "1.1", 900)]
    second = [
        ev("claimed", T0 + 100, run=OTHER, iterations=0, max_iterations=None),
        ev("run-resume", T0 + 101, run=OTHER, open=2, attempt=2, reason="next step",
           same_session=False, driver="d1"),
        ev("engage", T0 + 130, run=OTHER, open=2, step="1.2", tokens=spent(500)),
        ev("complete", T0 + 200, run=OTHER, open=0, proven=3, contract=3, tokens=spent(100)),
    ]  # fmt: skip
    data = report.build([*first, *second]).to_json()
    assert (data["runs"], len(data["rows"])) == (1, 1)
    (row,) = data["rows"]
    assert (row["outcome"], row["engagements"]) == ("complete", 2)
    assert [r["reason"] for r in row["timeline"]["restarts"]] == ["next step"]
    # without the driver's id the two sessions are two runs, as any two claims are
    plain = [line.replace(', "driver": "d1"', "") for line in [*first, *second]]
    assert report.build(plain).to_json()["runs"] == 2


def test_a_driver_runs_pending_claims_bind_to_the_same_run() -> None:
    """A host that names its session only once it runs: the driver's events carry no session,
    only the pending claim its first prompt binds."""
    lines = [
        ev("run-start", T0, run=None, open=2, attempt=1, pending="p1", driver="d2"),
        ev("claimed", T0 + 5, pending="p1", iterations=0),
        engage(T0 + 30, 2, 1, "1.1", 900),
        ev("run-resume", T0 + 60, run=None, open=1, attempt=2, pending="p2", driver="d2"),
        ev("claimed", T0 + 65, run=OTHER, pending="p2", iterations=0),
        ev("engage", T0 + 90, run=OTHER, open=1, step="1.2", tokens=spent(500)),
    ]
    data = report.build(lines, now=T0 + 100).to_json()
    (row,) = data["rows"]
    assert (data["runs"], row["engagements"], row["outcome"]) == (1, 2, "running")
    folder = report.Folder()
    for line in lines:
        folder.take(line)
    assert folder.current(OTHER, "demo") is folder.current(KEY, "demo") is not None


def test_a_new_session_that_already_worked_is_not_folded_into_a_driver_run() -> None:
    lines = [
        CLAIMED,
        driver_start(T0 + 1, 3, driver="d3"),
        ev("claimed", T0 + 10, run=OTHER),
        ev("engage", T0 + 20, run=OTHER, open=3, step="1.1"),
        ev("run-resume", T0 + 30, run=OTHER, open=3, attempt=2, driver="d3"),
    ]
    assert report.build(lines).to_json()["runs"] == 2


def write(root: Path, lines: list[str]) -> None:
    (root / "state").mkdir(exist_ok=True)
    (root / "state" / "run-continuation.jsonl").write_text("\n".join(lines) + "\n")


def test_the_text_json_and_page_agree(ws: Path, snapshot: SnapshotAssertion) -> None:
    write(ws, [*RECLAIMED, *(line.replace(KEY, "s" * 16) for line in STOPPED)])
    text = run_cli("report", at=[T0 + 9000])
    assert text.exit_code == 0
    assert text.output == snapshot
    data = json.loads(run_cli("report", "--json", at=[T0 + 9000]).output)
    assert [(r["run"][:8], r["outcome"]) for r in data["rows"]] == [
        ("kkkkkkkk", "complete"), ("ssssssss", "stopped")
    ]  # fmt: skip
