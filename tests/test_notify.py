"""Every ending is told: `notify.command`, its placeholders, its bounds and its failures."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from syrupy.assertion import SnapshotAssertion

from agentcfg import notify, state
from agentcfg.config import validate
from agentcfg.workspace import Workspace
from tests.conftest import fire, fixture_payload, run_cli
from tests.helpers import ledger
from tests.stop.test_lean import probe

ENDING_EVENTS = (
    "complete",
    "blocked",
    "halt-max-iterations",
    "halt-wall-clock",
    "halt-stall",
    "halt-roadmap-absent",
    "paused",
    "stopped",
    "handback-question",
)


def record(event: str, **fields: Any) -> dict[str, Any]:
    return state.event(event, 0.0, "k" * 32, "demo", iterations=4, host="claude", **fields)


def wait_for(check: Any, seconds: float = 15.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("not seen in time")


def test_endings_and_not_the_rest() -> None:
    assert all(notify.is_ending(e) for e in ENDING_EVENTS)
    assert not any(
        notify.is_ending(e) for e in ("engage", "shadow-engage", "refused", "notify-error")
    )


def test_messages(snapshot: SnapshotAssertion) -> None:
    extra = {"stopped": {"by": "terminal"}}
    messages = [notify.message(record(e, **extra.get(e, {}))) for e in ENDING_EVENTS]
    assert messages == snapshot


def test_placeholders_fill_every_word_and_leave_other_braces() -> None:
    template = ["send", "{event}:{slug}", '{"text": "{message}"}', "{unknown}"]
    assert notify.expand(template, record("complete")) == [
        "send",
        "complete:demo",
        '{"text": "agentcfg: roadmap `demo`: complete (4 iterations)"}',
        "{unknown}",
    ]


def test_a_message_is_never_expanded_again() -> None:
    words = notify.expand(["{message}"], record("stopped", by="{slug}{event}"))
    assert words == ["agentcfg: roadmap `demo`: stopped by {slug}{event} (4 iterations)"]


def test_deliver_reports_what_went_wrong(tmp_path: Path) -> None:
    python = sys.executable
    assert notify.deliver([python, "-c", "pass"]) is None
    assert notify.deliver([python, "-c", "import sys; sys.exit('no route to host')"]) == (
        f"`{python}` exited 1: no route to host"
    )
    assert notify.deliver([str(tmp_path / "gone")]) == (
        f"`{tmp_path / 'gone'}` cannot run: No such file or directory"
    )
    started = time.monotonic()
    slow = notify.deliver([python, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert slow == f"`{python}` ran longer than 0.5s and was killed"
    assert time.monotonic() - started < 10


def test_config_reads_the_command_and_reports_a_bad_one() -> None:
    problems: list[str] = []
    good = validate({"notify": {"command": ["notify-send", "{message}"]}}, {}, problems)
    assert (good.notify, problems) == (("notify-send", "{message}"), [])
    for bad in ({"command": "notify-send x"}, {"command": []}, {"command": [1]}, {"to": "x"}):
        problems = []
        config = validate({"notify": bad}, {}, problems)
        assert config.notify == ()
        assert len(problems) == 1 and problems[0].startswith("notify."), problems


def configure(root: Path, *words: str) -> None:
    """A notify command, trusted by the person (`roadmap trust` covers it)."""
    (root / "agentcfg.yaml").write_text("notify:\n  command: " + json.dumps(list(words)) + "\n")
    assert run_cli("roadmap", "trust", "demo").exit_code == 0


def test_an_ending_runs_the_command_with_its_placeholders(ws: Path) -> None:
    told = ws / "told.json"
    script = f"import json, sys; open({str(told)!r}, 'w').write(json.dumps(sys.argv[1:]))"
    configure(ws, sys.executable, "-c", script, "{event}", "{slug}", "{message}")
    session = str(fixture_payload(1, ws)["session_id"])
    run_cli("sessions", "claim", "demo", "--session", session)
    run_cli("stop", "demo")
    result = fire(ws, fixture_payload(1, ws))
    assert result.returncode == 0
    words = json.loads(wait_for(lambda: told.exists() and told.read_text()))
    assert words == ["stopped", "demo", "agentcfg: roadmap `demo`: stopped by terminal"]


def test_a_failing_command_is_a_notify_error_and_changes_no_verdict(ws: Path) -> None:
    configure(ws, sys.executable, "-c", "import sys; sys.exit('webhook said 500')")
    session = str(fixture_payload(1, ws)["session_id"])
    run_cli("sessions", "claim", "demo", "--session", session)
    run_cli("stop", "demo")
    result = fire(ws, fixture_payload(1, ws))
    assert result.returncode == 0 and "stopped the run" in result.stdout
    errors = wait_for(lambda: [e for e in ledger(ws) if e["event"] == "notify-error"])
    assert len(errors) == 1
    assert errors[0]["ending"] == "stopped"
    assert errors[0]["slug"] == "demo"
    assert errors[0]["host"] == "claude"
    assert errors[0]["error"] == f"`{sys.executable}` exited 1: webhook said 500"


def test_a_courier_that_cannot_start_is_recorded(tmp_path: Path) -> None:
    gone = tmp_path / "removed"  # the workspace went away: the courier has no folder to start in
    notify.on_event(["true"], record("complete"), Workspace(gone))
    events = ledger(gone)
    assert [(e["event"], e["ending"]) for e in events] == [("notify-error", "complete")]
    assert events[0]["error"].startswith("cannot start: FileNotFoundError")


def test_an_engagement_loads_no_notifier(ws: Path) -> None:
    configure(ws, "true", "{event}")
    run_cli("sessions", "claim", "demo", "--session", str(fixture_payload(1, ws)["session_id"]))
    assert fire(ws, fixture_payload(1, ws)).returncode == 2  # warms the parse caches
    result = probe(ws, fixture_payload(2, ws))
    assert result["code"] == 2
    assert result["heavy"] == ["(json)", "(pathlib)", "(re)"]  # the decision's own, no more


def test_a_tampered_record_is_named_to_the_person() -> None:
    record = state.event(
        "halt-state-tampered", 0.0, "k" * 32, "c", iterations=2,
        record="2 receipt lines in state/receipts/c.json (step 1.2, 1.3)",
    )  # fmt: skip
    assert notify.message(record) == (
        "agentcfg: roadmap `c`: halted: state-tampered (2 iterations): 2 receipt lines in "
        "state/receipts/c.json (step 1.2, 1.3) failed its seal"
    )
