"""`agentcfg watch`: one frame of the claimed runs, the ledger it follows, and a clean Ctrl-C."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from syrupy.assertion import SnapshotAssertion

from agentcfg import claims, controls, state, watch
from agentcfg.cli import cli
from agentcfg.commands import Clock
from agentcfg.workspace import Workspace
from tests.conftest import cli_process, run_cli, write_roadmap

T0 = 1_790_000_000.0


def append(root: Path, name: str, at: float, run: str | None, slug: str, **fields: object) -> None:
    state.append_ledger(root / "state", state.event(name, at, run, slug, **fields))


@pytest.fixture
def busy(ws: Path) -> Path:
    """Two claimed runs: one engaged with token counts, one a person stopped; and a bare claim."""
    root = Workspace(ws)
    write_roadmap(ws, "other", "## Phase 1\n- [x] a\n- [ ] b\n")
    one = claims.claim(root, "session-one", "demo", now=T0, max_iterations=10).claim
    two = claims.claim(root, "session-two", "other", now=T0 + 60).claim
    append(ws, "engage", T0 + 120, one.key, "demo", iterations=1, tokens={"total": 12_345})
    append(ws, "engage", T0 + 300, one.key, "demo", iterations=2, tokens=None)
    append(ws, "engage", T0 + 400, "someone-else", "demo", tokens={"total": 1})
    run = claims.run_path(root, one.key, "demo")
    found, _ = claims.load_run(run)
    assert found is not None
    claims.write_run(run, found._replace(iterations=2))
    controls.stop(root, ["other"], "terminal", T0 + 500)
    append(ws, "stopped", T0 + 530, two.key, "other", by="terminal")
    return ws


def test_one_frame(busy: Path, snapshot: SnapshotAssertion) -> None:
    result = run_cli("watch", "--once", env={"COLUMNS": "100"}, at=[T0 + 600])
    assert result.exit_code == 0
    assert result.output == snapshot


def test_no_claimed_runs(ws: Path) -> None:
    frame = watch.frame(Workspace(ws), {}, T0)
    assert "0 claimed runs" in frame and "no claimed runs" in frame
    assert not (ws / "state").exists()  # watching writes nothing


def test_ledger_tail_reads_only_new_complete_lines(ws: Path) -> None:
    tail = watch.LedgerTail(Workspace(ws))
    tail.read()  # no ledger yet
    append(ws, "claimed", T0, "r", "demo")
    append(ws, "engage", T0 + 1, "r", "demo", tokens={"total": 3})
    append(ws, "engage", T0 + 2, "r", "demo", tokens={"total": 4})  # each fire: its own segment
    append(ws, "engage", T0 + 3, "r", "demo", tokens=None)
    path = ws / "state" / state.LEDGER_NAME
    with path.open("ab") as handle:
        handle.write(b'{"event": "engage", "at": "2026-09-21T14:13:30Z", "run": "r", "sl')
    tail.read()
    assert tail.last[("r", "demo")] == ("engage", T0 + 3)
    assert tail.tokens[("r", "demo")] == 7
    with path.open("ab") as handle:
        handle.write(b'ug": "demo"}\nnot json\n[1]\n')
    append(ws, "claimed", T0 + 20, "r", "demo")  # a fresh run forgets the last one's tokens
    tail.read()
    assert tail.last[("r", "demo")] == ("claimed", T0 + 20)
    assert ("r", "demo") not in tail.tokens
    path.unlink()  # a new ledger starts over
    append(ws, "complete", T0 + 30, "q", "demo")
    tail.read()
    assert tail.last == {("q", "demo"): ("complete", T0 + 30)}


def test_the_signature_moves_with_ledger_roadmaps_and_claims(ws: Path) -> None:
    root = Workspace(ws)
    seen = [watch._signature(root)]
    append(ws, "engage", T0, "r", "demo")
    seen.append(watch._signature(root))
    (ws / "roadmaps" / "demo.md").write_text("## Phase 1\n- [x] a\n")
    seen.append(watch._signature(root))
    claims.claim(root, "s1", "demo", now=T0)
    seen.append(watch._signature(root))
    assert len(set(map(repr, seen))) == 4
    assert watch._signature(root) == seen[-1]


def test_follow_redraws_on_change_and_quits_cleanly_on_ctrl_c(busy: Path) -> None:
    reads: list[int] = []

    def counted(*args: Any) -> list[watch.RunView]:
        reads.append(1)
        return watch.snapshot(*args)

    naps = iter([None, None, KeyboardInterrupt()])

    def nap(seconds: float) -> None:
        step = next(naps)
        if step is not None:
            raise step
        if len(reads) == 1:  # something changes between the first and second draw
            append(busy, "engage", T0 + 700, "r", "demo")

    watch.follow(Workspace(busy), {}, lambda: T0 + 600, sleep=nap, read=counted)
    assert len(reads) == 2  # three draws, two reads


def test_the_command_follows_until_ctrl_c(busy: Path) -> None:
    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    result = CliRunner().invoke(cli, ["watch"], obj=Clock(now=lambda: T0 + 600, sleep=interrupt))
    assert result.exit_code == 0
    assert "2 claimed runs" in result.output and "12,345" in result.output


def test_once_as_a_process(busy: Path) -> None:
    proc = cli_process(busy, "watch", "--once")
    assert proc.returncode == 0, proc.stderr
    assert "2 claimed runs" in proc.stdout and "12,345" in proc.stdout


def test_a_fleet_shows_its_members_and_who_holds_which_step(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    for n, (name, fields) in enumerate(
        [
            ("leased", {"step": "1.2", "member": 1}),
            ("leased", {"step": "1.3", "member": 2}),
            ("integrated", {"step": "1.2", "member": 1}),
            ("leased", {"step": "2.1", "member": 1}),
            ("lease-expired", {"step": "1.3", "member": 3}),
            ("leased", {"step": "1.3", "member": 3}),
        ]
    ):
        append(ws, name, T0 + n, None, "demo", **fields)
    frame = watch.frame(Workspace(ws), {}, T0 + 60)
    assert frame[frame.index("fleet ·") :] == snapshot
    narrow = watch.frame(Workspace(ws), {}, T0 + 60, width=60)
    assert narrow[narrow.index("fleet ·") :] == snapshot(name="under 80 columns")
    assert max(len(line) for line in narrow.splitlines()) <= 60


def test_a_lane_puts_each_lease_at_its_time() -> None:
    spans = [("1.1", 0.0, 40.0, "integrated"), ("1.2", 50.0, 70.0, "reopened"),
             ("1.3", 80.0, None, "holding")]  # fmt: skip
    assert watch._lane(spans, 0.0, 100.0, 10).plain == "████·▒▒·▓▓"
    # a lease too short for a cell still shows, and one past the lane's end is cut at it
    assert watch._lane([("2.1", 41.0, 42.0, "reopened")], 0.0, 100.0, 10).plain == "····▒·····"
    assert watch._lane([("2.2", 95.0, None, "holding")], 0.0, 100.0, 4).plain == "···▓"


def test_without_a_fleet_there_is_no_fleet_table(busy: Path) -> None:
    assert "fleet ·" not in watch.frame(Workspace(busy), {}, T0 + 600)


def one_claim(ws: Path) -> str:
    """A claimed run that engaged once: its session key."""
    root = Workspace(ws)
    key = claims.claim(root, "session-one", "demo", now=T0, max_iterations=10).claim.key
    append(ws, "engage", T0 + 60, key, "demo", open=4, iterations=1, tokens={"total": 500})
    return key


def status_at(ws: Path, at: float) -> str:
    (view,) = watch.snapshot(Workspace(ws), {}, watch.LedgerTail(Workspace(ws)), at)
    return view.status


def test_a_complete_run_reads_complete_not_running(ws: Path) -> None:
    key = one_claim(ws)
    append(ws, "complete", T0 + 120, key, "demo", open=0, iterations=1)
    assert status_at(ws, T0 + 130) == "complete"


def test_a_stop_then_a_resume_with_no_driver_left_reads_stopped(ws: Path) -> None:
    key = one_claim(ws)
    root = Workspace(ws)
    controls.stop(root, ["demo"], "terminal", T0 + 100)
    append(ws, "stopped", T0 + 101, key, "demo", starts=1, restarts=0, by="terminal")
    assert status_at(ws, T0 + 110) == "stopped by a person"
    controls.resume(root, "demo", "terminal", T0 + 200)
    assert status_at(ws, T0 + 210) == "stopped by a person"
    frame = watch.frame(root, {}, T0 + 210)
    assert "running" not in frame


def test_a_run_nothing_reports_on_reads_idle_and_a_wait_reads_waiting(ws: Path) -> None:
    from agentcfg.core.report import IDLE_AFTER, WAIT_GRACE

    key = one_claim(ws)
    assert status_at(ws, T0 + 61) == "running"
    assert status_at(ws, T0 + 61 + IDLE_AFTER) == "idle since 14:14"
    append(ws, "paused-usage-limit", T0 + 100, key, "demo", resume_at="2026-09-21T15:00:00Z")
    assert status_at(ws, T0 + 200) == "waiting until 15:00"
    assert status_at(ws, T0 + 3600 + WAIT_GRACE) == "idle since 14:15"


def test_under_80_columns_the_table_keeps_what_matters(
    busy: Path, snapshot: SnapshotAssertion
) -> None:
    frame = watch.frame(Workspace(busy), {}, T0 + 600, width=64)
    assert max(len(line) for line in frame.splitlines()) <= 64
    assert "next step" not in frame and "stopped by a" in frame  # its words wrapped, not cut
    assert frame == snapshot


def test_once_follows_the_shells_width(busy: Path) -> None:
    narrow = run_cli("watch", "--once", env={"COLUMNS": "64"}, at=[T0 + 600])
    assert "next step" not in narrow.output and "iteration" in narrow.output
    assert "next step" in run_cli("watch", "--once", env={"COLUMNS": "120"}, at=[T0 + 600]).output
