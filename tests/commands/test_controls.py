"""`agentcfg stop` and `agentcfg resume`: markers, refused claims, and the hook that obeys them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import claims, controls
from agentcfg.workspace import Workspace
from tests.conftest import cli_process, fire, fixture_payload, run_cli, write_roadmap
from tests.helpers import ledger

T0 = 1_790_000_000.0


@pytest.fixture
def clock() -> list[float]:
    """The moments the commands act at (`run_cli(..., at=clock)`); append to move it."""
    return [T0]


def marker(root: Path, slug: str = "demo") -> dict[str, object] | None:
    path = root / "state" / "stops" / f"{slug}.json"
    return json.loads(path.read_text()) if path.exists() else None


def control_events(root: Path) -> list[tuple[str, str | None, object]]:
    return [
        (e["event"], e["slug"], e.get("by"))
        for e in ledger(root)
        if e["event"] in ("stop-requested", "resumed")
    ]


def test_stop_needs_a_roadmap_or_all(ws: Path) -> None:
    for args in ((), ("demo", "--all")):
        result = run_cli("stop", *args)
        assert result.exit_code == 2
        assert "name one roadmap, or pass --all" in result.output
    assert not (ws / "state").exists()


def test_stop_of_an_unknown_roadmap_is_one_line_and_changes_nothing(ws: Path) -> None:
    result = run_cli("stop", "nope")
    assert result.exit_code == 1
    assert result.output == (
        "agentcfg: error: no roadmap `nope`: roadmaps/nope.md does not exist\n"
    )
    assert not (ws / "state").exists()


def test_stop_writes_a_marker_and_records_who(ws: Path, clock: list[float]) -> None:
    assert run_cli("stop", "demo", at=clock).exit_code == 0
    assert marker(ws) == {
        "slug": "demo",
        "stopped_at": "2026-09-21T14:13:20Z",
        "by": "terminal",
        "told": [],
        "held": [],
    }
    assert run_cli("resume", "demo", env={"AGENTCFG_SESSION_ID": "s9"}, at=clock).exit_code == 0
    assert marker(ws) is None
    assert control_events(ws) == [
        ("stop-requested", "demo", "terminal"),
        ("resumed", "demo", "s9"),
    ]


def test_stop_is_idempotent(ws: Path, clock: list[float]) -> None:
    run_cli("stop", "demo", env={"AGENTCFG_SESSION_ID": "s1"}, at=clock)
    first = marker(ws)
    clock.append(T0 + 60)
    again = run_cli("stop", "demo.md", at=clock)  # another spelling of the same roadmap
    assert again.exit_code == 0
    assert "already stopped by s1" in again.output
    assert marker(ws) == first
    assert control_events(ws) == [("stop-requested", "demo", "s1")]


def test_stop_and_resume_texts(ws: Path, clock: list[float], snapshot: SnapshotAssertion) -> None:
    write_roadmap(ws, "other", "## Phase 1\n- [ ] a\n")
    run_cli("sessions", "claim", "demo", "--session", "s1", at=clock)
    run_cli("sessions", "claim", "other", "--session", "s2", at=clock)
    outputs = [
        run_cli("stop", "demo", at=clock).output,
        run_cli("stop", "--all", at=clock).output,
        run_cli("resume", "demo", at=clock).output,
        run_cli("resume", "demo", at=clock).output,
    ]
    assert outputs == snapshot


def test_stop_all_with_no_live_run(ws: Path) -> None:
    result = run_cli("stop", "--all")
    assert (result.exit_code, result.output) == (0, "no live runs to stop\n")
    assert marker(ws) is None


def test_json_output(ws: Path, clock: list[float]) -> None:
    run_cli("sessions", "claim", "demo", "--session", "s1", at=clock)
    stopped = json.loads(run_cli("stop", "--all", "--json", at=clock).output)
    assert stopped == [
        {
            "slug": "demo",
            "stopped_at": "2026-09-21T14:13:20Z",
            "by": "terminal",
            "told": [],
            "held": [claims.session_key("s1")],
            "already": False,
            "sessions": ["s1"],
        }
    ]
    resumed = json.loads(run_cli("resume", "demo", "--json", at=clock).output)
    assert resumed == {
        "slug": "demo",
        "resumed": True,
        "by": "terminal",
        "was": {k: v for k, v in stopped[0].items() if k not in ("already", "sessions")},
    }
    assert json.loads(run_cli("resume", "demo", "--json", at=clock).output)["resumed"] is False


def test_a_stopped_roadmap_cannot_be_claimed_even_with_force(
    ws: Path, clock: list[float], snapshot: SnapshotAssertion
) -> None:
    run_cli("stop", "demo", at=clock)
    for extra in ((), ("--force",)):
        refused = run_cli("sessions", "claim", "demo", "--session", "s1", *extra, at=clock)
        assert refused.exit_code == 1
        assert refused.output == snapshot
    assert not (ws / "state" / "claims").exists()
    run_cli("resume", "demo", at=clock)
    assert run_cli("sessions", "claim", "demo", "--session", "s1", at=clock).exit_code == 0


def test_two_slugs_of_one_file_share_one_stop(ws: Path) -> None:
    (ws / "roadmaps" / "alias.md").symlink_to("demo.md")
    run_cli("stop", "alias")
    assert marker(ws) is not None
    assert controls.read_stop(Workspace(ws), "alias") == controls.read_stop(Workspace(ws), "demo")
    assert run_cli("sessions", "claim", "demo", "--session", "s1").exit_code == 1


def test_an_odd_marker_still_stops_and_resume_clears_it(ws: Path) -> None:
    (ws / "state" / "stops").mkdir(parents=True)
    (ws / "state" / "stops" / "demo.json").write_text('{"by": 3}')
    assert run_cli("sessions", "claim", "demo", "--session", "s1").exit_code == 1
    assert run_cli("resume", "demo").exit_code == 0
    assert marker(ws) is None


def test_stop_then_fire_allows_once_told_then_resume_continues(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    """The whole path through real processes: claim, engage, stop, fire, fire, resume, fire."""
    session = str(fixture_payload(1, ws)["session_id"])
    assert cli_process(ws, "sessions", "claim", "demo", "--session", session).returncode == 0
    assert fire(ws, fixture_payload(1, ws)).returncode == 2
    assert cli_process(ws, "stop", "demo").returncode == 0
    told = fire(ws, fixture_payload(2, ws))
    assert (told.returncode, told.stderr) == (0, "")
    assert json.loads(told.stdout) == snapshot
    again = fire(ws, fixture_payload(3, ws))
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    events = [e["event"] for e in ledger(ws)]
    assert events == ["engage", "stop-requested", "stopped"]
    assert ledger(ws)[-1]["by"] == "terminal"
    assert cli_process(ws, "resume", "demo").returncode == 0
    assert fire(ws, fixture_payload(4, ws)).returncode == 2
    run = claims.read_run(Workspace(ws), claims.Claim("demo", session, 0.0))
    assert run is not None and run.iterations == 2  # the stopped fires were not counted


def test_the_gate_holds_no_stopped_run(ws: Path) -> None:
    session = str(fixture_payload(1, ws)["session_id"])
    run_cli("sessions", "claim", "demo", "--session", session)
    run_cli("stop", "demo")
    promise = fixture_payload(1, ws, last_assistant_message="Next I will wire the cache.")
    assert fire(ws, promise).returncode == 0
    assert [e["event"] for e in ledger(ws)] == ["stop-requested", "stopped"]
    run_cli("resume", "demo")
    assert fire(ws, promise).returncode == 2  # the same reply, once the run goes on
    assert "refused" in [e["event"] for e in ledger(ws)]


def test_every_session_on_the_roadmap_is_told_once(ws: Path) -> None:
    run_cli("sessions", "claim", "demo", "--session", "a")
    run_cli("stop", "demo")
    root = Workspace(ws)
    found = controls.read_stop(root, "demo")
    assert found is not None
    assert [controls.tell(root, found, k) for k in ("ka", "kb", "ka")] == [True, True, False]
    assert marker(ws) == {**(marker(ws) or {}), "told": ["ka", "kb"]}
