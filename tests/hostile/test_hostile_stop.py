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


@pytest.mark.parametrize(
    "what", ["file", "link", "lock-folder", "lock-link", "lock-held", "ledger-fifo"]
)
def test_nothing_in_the_workspace_defeats_the_persons_stop(claimed: Path, what: str) -> None:
    """What the agent can put under state/ (a file or a link in place of the stops folder, a
    folder or a link in place of the roadmap's stop lock, a process holding that lock) is
    moved aside or waited past: the person's stop is written, the run stops, and resume
    lifts it."""
    import fcntl

    stops = claimed / "state" / "stops"
    shutil.rmtree(stops, ignore_errors=True)
    held = None
    if what == "ledger-fifo":  # a FIFO nobody reads, where the ledger is appended to
        (claimed / "state" / "run-continuation.jsonl").unlink()
        os.mkfifo(claimed / "state" / "run-continuation.jsonl")
    elif what == "file":
        stops.write_text("not a folder")
    elif what == "link":
        stops.symlink_to(claimed.parent)
    else:
        stops.mkdir(mode=0o700)
        lock = stops / "demo.lock"
        if what == "lock-folder":
            lock.mkdir()
        elif what == "lock-link":
            lock.symlink_to(claimed.parent / "elsewhere")
        else:
            held = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(held, fcntl.LOCK_EX)
    try:
        stopped = run_hostile(
            claimed, ["stop", "demo"], 0, env=env_of(claimed), seconds=15, process=True
        )
        assert stopped.stdout.startswith("stopped roadmap `demo` (by terminal)"), stopped.stdout
        assert json.loads(stop_marker(claimed).read_text())["by"] == "terminal"
        run_hostile(claimed, ["resume", "demo"], 0, env=env_of(claimed), seconds=15)
        assert not stop_marker(claimed).exists()
        again = run_hostile(claimed, ["stop", "--all"], 0, env=env_of(claimed), seconds=15)
        assert "stopped roadmap `demo`" in again.stdout
    finally:
        if held is not None:
            os.close(held)
    fire_is_stopped(claimed)  # and once the agent lets its lock go, the hook tells the session
    assert not (claimed.parent / "elsewhere").exists()  # nothing was written through a link


def test_a_session_id_with_a_newline_or_escape_is_recorded_escaped(claimed: Path) -> None:
    """Who stopped a run is kept on one line, whatever the session variable holds: a newline
    in it would forge a second line of the ledger's readers and of the person's terminal."""
    env = env_of(claimed, CLAUDE_CODE_SESSION_ID="p\nforged: line\x1b[31m")
    shown = run_hostile(claimed, ["stop", "demo"], 0, env=env)
    assert shown.stdout.splitlines()[0] == (
        "stopped roadmap `demo` (by p\\u000aforged: line\\u001b[31m)"
    )
    by = json.loads(stop_marker(claimed).read_text())["by"]
    assert by == "p\\u000aforged: line\\u001b[31m"
    lines = (claimed / "state" / "run-continuation.jsonl").read_text().splitlines()
    requested = [json.loads(line) for line in lines if '"stop-requested"' in line]
    assert [e["by"] for e in requested] == [by]
