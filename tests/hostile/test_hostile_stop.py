"""The person's stop, held against the agent: nothing run from inside the stopped session,
and no odd marker, lifts it or slips past it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.hostile.conftest import agent_env, env_of
from tests.hostile.harness import SESSION, fire_hostile, payload, run_hostile

ESCAPES = "\x1b[31m\x07\x9b2J\u202e"
CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")


def stop_marker(root: Path) -> Path:
    return root / "state" / "stops" / "demo.json"


def fire_is_stopped(root: Path) -> None:
    """The session's next turn end is allowed, with the line that says a person stopped it."""
    proc = fire_hostile(root, payload(root))
    assert proc.returncode == 0, proc.stderr
    assert "the person stopped the run" in json.loads(proc.stdout)["systemMessage"]


def test_resume_from_inside_the_stopped_session_is_refused(claimed: Path) -> None:
    run_hostile(claimed, ["stop", "demo"], 0)
    refused = run_hostile(claimed, ["resume", "demo"], 1, env=agent_env(claimed))
    assert refused.stderr.startswith("agentcfg: error: ")
    assert "a person" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert stop_marker(claimed).exists()
    fire_is_stopped(claimed)
    run_hostile(claimed, ["resume", "demo"], 0, env=env_of(claimed))  # the person's own shell
    assert not stop_marker(claimed).exists()


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage", b"[]", b'{"by": 5, "stopped_at": []}', b" " * (2 * 1024 * 1024), "fifo"],
    ids=["empty", "not json", "a list", "wrong types", "oversized", "a fifo"],
)
def test_an_odd_stop_marker_still_stops(claimed: Path, content: bytes | str) -> None:
    stop_marker(claimed).parent.mkdir(mode=0o700, exist_ok=True)
    if content == "fifo":
        os.mkfifo(stop_marker(claimed), 0o600)
    else:
        stop_marker(claimed).write_bytes(content)  # type: ignore[arg-type]
    fire_is_stopped(claimed)
    refused = run_hostile(claimed, ["sessions", "claim", "demo"], 1, env=agent_env(claimed))
    assert "agentcfg resume demo" in refused.stderr
    run_hostile(claimed, ["resume", "demo"], 0, env=env_of(claimed))
    assert not stop_marker(claimed).exists()


def test_stop_all_stops_a_pending_claim(ws: Path) -> None:
    made = run_hostile(ws, ["sessions", "claim", "demo"], 0, env=env_of(ws))
    assert "agentcfg-claim-" in made.stdout
    stopped = run_hostile(ws, ["stop", "--all"], 0, env=env_of(ws))
    assert "stopped roadmap `demo`" in stopped.stdout
    assert stop_marker(ws).exists()


@pytest.mark.parametrize("released_first", [False, True], ids=["holding", "after release"])
def test_a_stopped_session_cannot_claim_a_copy_of_its_roadmap(
    claimed: Path, released_first: bool
) -> None:
    run_hostile(claimed, ["stop", "demo"], 0)
    shutil.copy(claimed / "roadmaps" / "demo.md", claimed / "roadmaps" / "copy.md")
    agent = agent_env(claimed)
    if released_first:
        run_hostile(claimed, ["sessions", "release"], 0, env=agent)
    refused = run_hostile(claimed, ["sessions", "claim", "copy"], 1, env=agent)
    assert "agentcfg resume demo" in refused.stderr
    forced = run_hostile(claimed, ["sessions", "claim", "copy", "--force"], 1, env=agent)
    assert "agentcfg resume demo" in forced.stderr
    run_hostile(claimed, ["resume", "demo"], 0, env=env_of(claimed))
    moved = run_hostile(claimed, ["sessions", "claim", "copy"], 1, env=agent)
    assert "only a person" in moved.stderr  # its run on demo is not over: no fresh one inside
    person = ["sessions", "claim", "copy", "--session", SESSION]
    run_hostile(claimed, person, 0, env=env_of(claimed))


def test_who_stopped_and_every_field_shown_is_scrubbed(claimed: Path) -> None:
    shown = run_hostile(
        claimed, ["stop", "demo"], 0, env=env_of(claimed, CLAUDE_CODE_SESSION_ID="p" + ESCAPES)
    )
    assert not any(c in shown.stdout for c in CONTROLS), shown.stdout
    marker = json.loads(stop_marker(claimed).read_text())
    assert not any(c in marker["by"] for c in CONTROLS)
    again = run_hostile(claimed, ["stop", "demo"], 0)  # "already stopped by ..."
    assert "already stopped" in again.stdout and not any(c in again.stdout for c in CONTROLS)
    fire_is_stopped(claimed)


def test_a_hand_written_marker_shows_no_control_character(claimed: Path) -> None:
    stop_marker(claimed).parent.mkdir(mode=0o700, exist_ok=True)
    stop_marker(claimed).write_text(json.dumps({"slug": "demo", "by": "x" + ESCAPES}))
    proc = fire_hostile(claimed, payload(claimed))
    told = json.loads(proc.stdout)["systemMessage"]
    assert "the person stopped the run" in told and not any(c in told for c in CONTROLS)
    listed = run_hostile(claimed, ["stop", "demo"], 0)
    assert not any(c in listed.stdout for c in CONTROLS), listed.stdout
    refused = run_hostile(claimed, ["sessions", "claim", "demo", "--session", "s2"], 1)
    assert not any(c in refused.stderr for c in CONTROLS), refused.stderr


def test_a_file_in_place_of_the_stops_folder_is_a_clear_error(claimed: Path) -> None:
    shutil.rmtree(claimed / "state" / "stops", ignore_errors=True)
    (claimed / "state" / "stops").write_text("not a folder")
    for args in (["stop", "demo"], ["resume", "demo"], ["stop", "--all"]):
        failed = run_hostile(claimed, args, 1)
        assert failed.stderr.startswith("agentcfg: error: ") and "stops" in failed.stderr
        assert len(failed.stderr.splitlines()) == 1, failed.stderr
    assert SESSION  # the claim stands; the fire below still reads it
    fire_hostile(claimed, payload(claimed))
